"""The injection eval learns files (issue 46, evals/files.py): cases written as PDFs and DOCX files,
visible and with their attack lines hidden, clean ones with legitimate small print, read back by
the service's readers and run through the same eval; the figures come out per format."""

import pytest

from agent.offline import OfflineResumeModel
from evals.files import file_cases
from evals.injection import load_cases, run_eval, summarise_formats

pytestmark = [pytest.mark.backend_independent, pytest.mark.slow]

# A few of the tuned cases (never a blind set's): attacks whose resume a PDF can draw and one that
# only a DOCX can (Chinese), and clean resumes.
TUNED = load_cases(parts=("tuned",))
CHOSEN = [
    *[case for case in TUNED if case.is_attack and case.resume.isascii()][:4],
    *[case for case in TUNED if case.is_attack and not case.resume.isascii()][:1],
    *[case for case in TUNED if not case.is_attack][:3],
]


@pytest.fixture(scope="module")
def file_run():
    cases = file_cases(CHOSEN)
    return cases, run_eval(OfflineResumeModel(), cases)


def test_each_case_is_made_in_each_format_it_can_be(file_run):
    cases, _results = file_run
    formats = {case.id.split("@")[0]: set() for case in cases}
    for case in cases:
        formats[case.id.split("@")[0]].add(case.file_format)
    everything = {"pdf-visible", "pdf-hidden", "docx-visible", "docx-hidden"}
    assert all(formats[case.id] == everything for case in CHOSEN if case.resume.isascii())
    assert all(formats[case.id] == {"docx-visible", "docx-hidden"} for case in CHOSEN if not case.resume.isascii())


def test_hidden_attack_lines_are_read_back_as_hidden_and_small_print_is_not(file_run):
    cases, _results = file_run
    for case in cases:
        lines = case.resume.splitlines()
        concealed = {lines[i] for i in case.concealed_lines}
        if case.is_attack and case.file_format.endswith("hidden"):
            assert concealed == set(case.attack_lines), case.id
        else:
            assert concealed == set(), case.id
        assert all(line in lines for line in case.attack_lines), case.id  # every attack line read


def test_every_file_case_passes_and_the_figures_are_per_format(file_run):
    cases, results = file_run
    assert [result.case_id for result in results if not result.passed] == []
    formats = summarise_formats(results)
    assert set(formats) == {"pdf-visible", "pdf-hidden", "docx-visible", "docx-hidden"}
    for name, figures in formats.items():
        assert figures["false_positives"] == 0 and figures["attacks_flagged"] == figures["attacks"] > 0, name
        assert figures["cases"] == sum(case.file_format == name for case in cases)
