"""Every string of ours a person or an operator reads exists in English and Traditional Chinese.

Our strings are written in English; locale/zh_Hant holds their translations. The catalogue is
extracted again here from the code and templates, as `makemessages` does, into a copy of the
project: a new string without its translation, a fuzzy one, a committed catalogue behind the
code, or a compiled catalogue behind its source fails. (Needs GNU gettext: `make test`
installs it where missing.)
"""

import gettext
import shutil
import subprocess
import sys
from pathlib import Path

import polib
import pytest
from django.utils import translation
from django.utils.translation import gettext as _

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "locale" / "zh_Hant" / "LC_MESSAGES"
# What holds our strings: the code and templates of these packages.
SOURCES = ["manage.py", "config", "sessions_app", "agent"]

pytestmark = [
    pytest.mark.skipif(shutil.which("xgettext") is None, reason="GNU gettext is not installed"),
    pytest.mark.backend_independent,
]


@pytest.fixture(scope="module")
def extracted(tmp_path_factory) -> polib.POFile:
    """The zh_Hant catalogue as `makemessages` leaves it for today's code (translations kept)."""
    copy = tmp_path_factory.mktemp("project")
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, copy / name)
    shutil.copytree(ROOT / "locale", copy / "locale")
    env = {"PATH": "/usr/bin:/bin", "DJANGO_SECRET_KEY": "translations-test", "DJANGO_VAR_DIR": str(copy / "var")}
    command = [sys.executable, "manage.py", "makemessages", "-l", "zh_Hant", "--no-location", "--no-obsolete"]
    subprocess.run(command, cwd=copy, env=env, check=True, capture_output=True)
    return polib.pofile(str(copy / "locale" / "zh_Hant" / "LC_MESSAGES" / "django.po"))


def _entries(po: polib.POFile) -> dict:
    return {(entry.msgctxt, entry.msgid): entry for entry in po if not entry.obsolete}


def _translated(entry: polib.POEntry) -> bool:
    if entry.msgid_plural:
        return bool(entry.msgstr_plural) and all(entry.msgstr_plural.values())
    return bool(entry.msgstr)


@pytest.mark.slow  # makemessages, in a process of its own
def test_every_string_of_ours_has_its_traditional_chinese_translation(extracted):
    untranslated = [
        entry.msgid for entry in _entries(extracted).values() if "fuzzy" in entry.flags or not _translated(entry)
    ]
    assert untranslated == []


@pytest.mark.slow
def test_the_committed_catalogue_is_the_extracted_one(extracted):
    committed = _entries(polib.pofile(str(CATALOGUE / "django.po")))
    current = _entries(extracted)
    assert sorted(set(current) - set(committed)) == []  # new strings: run makemessages and translate them
    assert sorted(set(committed) - set(current)) == []  # strings no code uses any more
    for key, entry in current.items():
        assert (entry.msgstr, entry.msgstr_plural) == (committed[key].msgstr, committed[key].msgstr_plural), key


def test_the_compiled_catalogue_is_its_source_compiled():
    with open(CATALOGUE / "django.mo", "rb") as compiled:
        catalogue = gettext.GNUTranslations(compiled)._catalog
    for entry in polib.pofile(str(CATALOGUE / "django.po")):
        if entry.msgid_plural:
            compiled = {n: catalogue.get((entry.msgid, n)) for n in entry.msgstr_plural}
            assert compiled == entry.msgstr_plural, entry.msgid  # run compilemessages
        elif entry.msgid:
            assert catalogue.get(entry.msgid) == entry.msgstr, entry.msgid  # run compilemessages


@pytest.mark.parametrize(
    "language,expected",
    [
        ("zh-hant", "找不到這個工作階段，可能已過期或被刪除"),
        ("en", "Session not found: it may have expired or been deleted."),
    ],
)
def test_a_string_reads_in_the_language_asked_for(language, expected):
    with translation.override(language):
        assert _("Session not found: it may have expired or been deleted.") == expected
