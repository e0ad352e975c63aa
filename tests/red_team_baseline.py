"""The red team's cases (evals/cases/redteam/, issue 32) that the defences failed when they were
written (evals/REDTEAM.md): expected failures until issue 32's fixes, and strictly so: a case that
starts passing fails the run until it leaves its list here."""

import pytest

# Not passed by the eval on the offline model (followed, polluted, unflagged or a false positive).
EVAL_FAILURES = frozenset()
# Where the worst model (one that obeys every line, tests/test_guards.py) got text of the attack
# into a plan, a tool call or the reply. Empty since the judge counts a shared run by its own
# script (evals/injection.py `_payload_hit`): the five left were clean resume lines and our own
# note sharing 11-12 Latin characters with mixed payloads judged at the Chinese length.
WORST_MODEL_FAILURES = frozenset()


def param(case_id: str, failures: frozenset, value=None):
    """`value` (the case id by default) as a test parameter, an expected failure when listed."""
    value = case_id if value is None else value
    if case_id in failures:
        return pytest.param(
            value, id=case_id, marks=pytest.mark.xfail(strict=True, reason="red-team baseline, issue 32")
        )
    return pytest.param(value, id=case_id)
