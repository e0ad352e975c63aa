"""Deterministic claim checking (agent/verification.py)."""

from pathlib import Path

import pytest

from agent.verification import check_claim, resume_name, split_sentences, verify_reply

pytestmark = pytest.mark.backend_independent

RESUME = (Path(__file__).parents[1] / "fixtures" / "resume_lin.txt").read_text(encoding="utf-8")
MIGRATION_LINE = "Led the migration of the billing service from a monolith to 12 Python services on Kubernetes."


def test_true_claim_is_supported_with_its_line():
    result = check_claim("Lin led the migration of the billing service to 12 Python services on Kubernetes.", RESUME)
    assert result["supported"] is True
    assert result["evidence"] == MIGRATION_LINE


def test_invented_claim_is_unsupported():
    result = check_claim("Lin worked at Google for 10 years", RESUME)
    assert result == {"claim": "Lin worked at Google for 10 years", "supported": False, "evidence": ""}


def test_number_not_in_resume_is_unsupported():
    # Every word matches the latency line; only the number is wrong (180 ms in the resume).
    assert not check_claim("You cut the p99 latency of the invoice API from 900 ms to 120 ms.", RESUME)["supported"]
    assert check_claim("You cut the p99 latency of the invoice API from 900 ms to 180 ms.", RESUME)["supported"]


def test_numbers_with_commas_match():
    result = check_claim("You built a Django REST API used by 40,000 merchants.", RESUME)
    assert result["supported"] and "40,000 merchants" in result["evidence"]


def test_chinese_claims():
    supported = check_claim("林語晴曾在翠鳥雲端股份有限公司工作", RESUME)
    assert supported["supported"] and "翠鳥雲端股份有限公司" in supported["evidence"]
    degree = check_claim("林語晴擁有國立虛構科技大學資訊工程學系碩士學位", RESUME)
    assert degree["supported"] and "國立虛構科技大學" in degree["evidence"]
    assert not check_claim("林語晴曾在谷歌工作十年", RESUME)["supported"]


def test_split_sentences_english_chinese_and_bullets():
    text = "Hello there. I hold an M.S. degree! Really? 你好。我是工程師！真的嗎？\n- bullet one\n• two"
    assert split_sentences(text) == [
        "Hello there.",
        "I hold an M.S. degree!",
        "Really?",
        "你好。",
        "我是工程師！",
        "真的嗎？",
        "bullet one",
        "two",
    ]


def test_resume_name_is_first_non_empty_line():
    assert resume_name(RESUME) == "林語晴 Lin Yu-Ching"
    assert resume_name("\n\n  Ada  \nx") == "Ada"
    assert len(resume_name("N" * 500)) == 80


def test_verify_reply_checks_claims_and_skips_the_rest():
    reply = (
        "Hi 林語晴!\n"
        "Your experience: \n"
        "You led the migration of the billing service to 12 Python services on Kubernetes.\n"
        "Lin worked at Google for 10 years.\n"
        "Would you like a shorter plan?\n"
        "[plan v1 saved]\n"
        "1. Apply to 5 Go roles this week.\n"
        "Target companies that value Kubernetes."
    )
    results = verify_reply(reply, RESUME)
    assert [r["supported"] for r in results] == [True, False]
    assert results[1]["claim"] == "Lin worked at Google for 10 years."
