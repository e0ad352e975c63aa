"""Counting the work of code that reads a person's text, in two deterministic measures:

- `chars`: every character handed to a regular expression of the given modules, however they
  call it. `counted(*modules)` swaps each compiled pattern a module holds (alone, or in a list,
  tuple or dict of them) for a proxy that adds the length of its text, then puts them back. A
  scan run again on every suffix of a line (a recursion per comment opener) shows here.
- `calls`: every function called meanwhile, Python's and C's alike (`sys.setprofile`). An
  algorithm quadratic in its inputs shows here (difflib's matching blocks call `dict.get` once
  per pair of equal characters).
"""

from __future__ import annotations

import contextlib
import re
import sys


class Meter:
    chars = 0
    calls = 0

    def profile(self, frame, event, arg):
        if event in ("call", "c_call"):
            self.calls += 1


class _CountingPattern:
    def __init__(self, pattern: re.Pattern, meter: Meter):
        self._pattern, self._meter = pattern, meter

    def _count(self, string, pos=0, endpos=None):
        end = len(string) if endpos is None else min(endpos, len(string))
        self._meter.chars += max(0, end - pos) + 1

    def search(self, string, pos=0, endpos=None):
        self._count(string, pos, endpos)
        return self._pattern.search(string, pos, len(string) if endpos is None else endpos)

    def match(self, string, pos=0, endpos=None):
        self._count(string, pos, endpos)
        return self._pattern.match(string, pos, len(string) if endpos is None else endpos)

    def fullmatch(self, string, pos=0, endpos=None):
        self._count(string, pos, endpos)
        return self._pattern.fullmatch(string, pos, len(string) if endpos is None else endpos)

    def finditer(self, string, pos=0, endpos=None):
        self._count(string, pos, endpos)
        return self._pattern.finditer(string, pos, len(string) if endpos is None else endpos)

    def findall(self, string, pos=0, endpos=None):
        self._count(string, pos, endpos)
        return self._pattern.findall(string, pos, len(string) if endpos is None else endpos)

    def sub(self, repl, string):
        self._count(string)
        return self._pattern.sub(repl, string)

    def split(self, string):
        self._count(string)
        return self._pattern.split(string)


def _wrapped(value, meter: Meter):
    if isinstance(value, re.Pattern):
        return _CountingPattern(value, meter)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, re.Pattern) for v in value):
        return type(value)(_CountingPattern(v, meter) for v in value)
    lists = isinstance(value, dict) and value and all(isinstance(v, list) for v in value.values())
    if lists and all(isinstance(p, re.Pattern) for v in value.values() for p in v):
        return {key: [_CountingPattern(p, meter) for p in v] for key, v in value.items()}
    return None


@contextlib.contextmanager
def counted(*modules):
    meter, saved = Meter(), []
    for module in modules:
        for name, value in list(vars(module).items()):
            proxy = _wrapped(value, meter)
            if proxy is not None:
                saved.append((module, name, value))
                setattr(module, name, proxy)
    previous = sys.getprofile()
    sys.setprofile(meter.profile)
    try:
        yield meter
    finally:
        sys.setprofile(previous)
        for module, name, value in saved:
            setattr(module, name, value)
