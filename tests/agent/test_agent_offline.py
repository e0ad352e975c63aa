"""The offline model drives the real agent (Runner + tools + session state)."""

import asyncio
import re
from pathlib import Path

import pytest

from agent.agent import build_agent
from agent.model_selection import is_offline, model_label, select_model
from agent.offline import OFFLINE_BANNER, OFFLINE_BANNER_ZH, OfflineResumeModel
from agent.plans import plan_versions
from agent.verification import verify_reply
from sessions_app.turns import service as turns
from tests.support.scripted_llm import Harness, final_text, function_calls

pytestmark = pytest.mark.backend_independent

FIXTURES = Path(__file__).parents[1] / "fixtures"
RESUME = (FIXTURES / "resume_lin.txt").read_text(encoding="utf-8")
# Mixed Chinese and English; English with unbulleted role lines; Traditional Chinese, full-width.
RESUMES = {
    name: (FIXTURES / f"resume_{name}.txt").read_text(encoding="utf-8") for name in ("lin", "ellery_en", "wang_zh")
}


async def _conversation(messages, resume=RESUME):
    harness = await Harness(build_agent(OfflineResumeModel())).start({"resume_text": resume})
    turns_ = []
    for message in messages:
        events = await harness.turn(message)
        turns_.append({"events": events, "state": await harness.state(), "harness": harness})
    return turns_


def _tool_names(turn) -> list[str]:
    return [call.name for call in function_calls(turn["events"])]


def _tool_response(turn, name) -> dict:
    return next(
        p.function_response.response
        for e in turn["events"]
        for p in (e.content.parts or [])
        if p.function_response and p.function_response.name == name
    )


@pytest.fixture(scope="module")
def two_turns():
    return asyncio.run(_conversation(["Please plan my job search.", "Focus on Go roles in Tokyo, please."]))


def test_reply_greets_by_name_and_says_offline(two_turns):
    reply = final_text(two_turns[0]["events"])
    assert "林語晴" in reply
    assert reply.splitlines()[0] == OFFLINE_BANNER
    assert "offline" in reply.lower()


def test_tools_are_called_each_turn(two_turns):
    for turn in two_turns:
        assert _tool_names(turn) == ["verify_claims", "save_plan"]


def test_claims_sent_to_verify_are_supported(two_turns):
    results = _tool_response(two_turns[0], "verify_claims")["results"]
    assert 1 <= len(results) <= 2 and all(r["supported"] and r["evidence"] for r in results)


def test_plan_versions_grow_and_differ(two_turns):
    v1 = plan_versions(two_turns[0]["state"])
    v2 = plan_versions(two_turns[1]["state"])
    assert [p["version"] for p in v1] == [1]
    assert [p["version"] for p in v2] == [1, 2]
    assert v2[1]["plan"] != v2[0]["plan"]
    assert "Kingfisher Cloud" in v1[0]["plan"]  # built from the person's own resume
    assert "Tokyo" in v2[1]["plan"]  # the focus asked for in turn 2
    assert v2[1]["saved_at"].endswith("+00:00")
    assert "[plan v2 saved]" in final_text(two_turns[1]["events"])


def test_plan_steps_carry_the_right_lines(two_turns):
    plan = plan_versions(two_turns[0]["state"])[0]["plan"]
    assert "current role: 翠鳥雲端股份有限公司 Kingfisher Cloud Ltd., Senior Backend Engineer (2021-present)." in plan
    assert "measurable result: Led the migration of the billing service" in plan  # an achievement, with a number
    assert "initiative: 山嵐排程器 Mountain Mist Scheduler" in plan
    assert "core skills: Python, Django, Go" in plan


def test_a_revision_says_what_changed_and_does_not_echo_the_message(two_turns):
    reply = final_text(two_turns[1]["events"])
    plan = plan_versions(two_turns[1]["state"])[1]["plan"]
    assert plan.splitlines()[0] == "1. Search focus, as you asked: Go roles in Tokyo."
    assert "core skills: Go, Python" in plan  # the skill asked for leads
    assert "[changes in v2: search focus “Go roles in Tokyo”, Go first among the skills]" in reply
    assert "Revision requested" not in plan and "please" not in plan.lower()


def test_offline_reply_passes_its_own_verification(two_turns):
    checks = verify_reply(final_text(two_turns[0]["events"]), RESUME)
    assert checks and all(c["supported"] for c in checks)


# --- questions get answers, not plans ---------------------------------------------------

FIVE_MESSAGES = [
    "Please plan my job search",
    "What salary should I ask for?",
    "我的弱點是什麼？",
    "What is my current plan?",
    "Thanks!",
]


@pytest.fixture(scope="module")
def five_turns():
    return asyncio.run(_conversation(FIVE_MESSAGES))


def test_five_messages_save_one_plan(five_turns):
    assert [_tool_names(t) for t in five_turns] == [["verify_claims", "save_plan"]] + [["verify_claims"]] * 4
    assert [p["version"] for p in plan_versions(five_turns[-1]["state"])] == [1]


def test_salary_question_gets_a_salary_answer(five_turns):
    reply = final_text(five_turns[1]["events"])
    assert "How to negotiate:" in reply and "“Senior Backend Engineer”" in reply
    assert "[current plan: v1, unchanged; nothing was saved]" in reply
    assert "saved as v" not in reply


def test_weak_points_question_gets_weak_points_in_chinese(five_turns):
    reply = final_text(five_turns[2]["events"])
    assert reply.splitlines()[:2] == [OFFLINE_BANNER_ZH, "你好，林語晴 Lin Yu-Ching！"]
    assert "招募者可能注意到的弱點" in reply
    assert "履歷開頭沒有摘要" in reply  # the fixture has no summary section
    assert "[目前的計畫是第 1 版，沒有變更，這次沒有儲存]" in reply


def test_current_plan_question_shows_the_saved_plan(five_turns):
    reply = final_text(five_turns[3]["events"])
    saved = plan_versions(five_turns[0]["state"])[0]["plan"]
    assert "The current plan, v1:" in reply and saved in reply


def test_small_talk_is_short_and_saves_nothing(five_turns):
    reply = final_text(five_turns[4]["events"])
    assert "glad to help" in reply and "林語晴" in reply and len(reply.splitlines()) <= 7


def test_no_plan_is_saved_until_one_is_asked_for():
    turns_ = asyncio.run(_conversation(["Hello", "What is my current plan?", "請幫我規劃求職"]))
    assert [_tool_names(t) for t in turns_] == [["verify_claims"], ["verify_claims"], ["verify_claims", "save_plan"]]
    assert "No plan is saved yet." in final_text(turns_[1]["events"])
    assert [p["version"] for p in plan_versions(turns_[2]["state"])] == [1]
    assert "你的求職計畫（已存為第 1 版）：" in final_text(turns_[2]["events"])


def test_repeated_and_shorter_revisions_stay_bounded():
    turns_ = asyncio.run(_conversation(["Focus on remote roles"] * 3 + ["Make it shorter"]))
    plans = [p["plan"] for p in plan_versions(turns_[-1]["state"])]
    assert plans[0] == plans[1] == plans[2]  # the same request twice changes nothing more
    assert len(plans[3].splitlines()) < len(plans[2].splitlines())
    assert "no specific change recognised" in final_text(turns_[1]["events"])


# --- the reply's language ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "banner", "greeting"),
    [
        ("Please plan my job search", OFFLINE_BANNER, "Hi 王小明!"),
        ("請幫我規劃求職", OFFLINE_BANNER_ZH, "你好，王小明！"),
        ("請幫我規劃 remote 職缺", OFFLINE_BANNER_ZH, "你好，王小明！"),
        ("Focus on Java roles, 謝謝", OFFLINE_BANNER, "Hi 王小明!"),
    ],
)
def test_reply_is_in_the_messages_language(message, banner, greeting):
    (turn,) = asyncio.run(_conversation([message], RESUMES["wang_zh"]))
    assert final_text(turn["events"]).splitlines()[:2] == [banner, greeting]


# --- the claim count in the text is the turn's verification ----------------------------

_COUNT_RES = (
    re.compile(r"\[(?P<n>\d+) of (?P<m>\d+) claims about you"),
    re.compile(r"關於你的陳述共 (?P<m>\d+) 項，其中 (?P<n>\d+) 項"),
)
MESSAGES = [
    "Please plan my job search",
    "請幫我規劃求職",
    "What salary should I ask for?",
    "我的弱點是什麼？",
    "How should I prepare for interviews?",
    "請幫我看看履歷",
    "Focus on remote roles",
    "What is my current plan?",
    "Hello",
]


def _stated_count(reply: str) -> tuple[int, int]:
    found = [m for pattern in _COUNT_RES for m in pattern.finditer(reply)]
    assert len(found) == 1, "exactly one claim count in the reply"
    return int(found[0]["n"]), int(found[0]["m"])


@pytest.mark.parametrize("fixture", sorted(RESUMES))
def test_claim_count_in_the_reply_is_the_turns_verification(fixture):
    resume = RESUMES[fixture]
    turns_ = asyncio.run(_conversation(MESSAGES, resume))
    # What the service returns: sessions_app.turns.service reads the reply from the events and
    # runs verify_reply on it (the tools and the model's label are this conversation's agent's).
    agent = turns_[0]["harness"].runner.agent
    for message, turn in zip(MESSAGES, turns_, strict=True):
        result = turns._summarise(turn["events"], resume, agent)
        assert result.verification == verify_reply(final_text(turn["events"]), resume), message
        supported = sum(check["supported"] for check in result.verification)
        assert _stated_count(result.reply) == (supported, len(result.verification)), message
        # Only the quoted resume lines are claims, and each is backed by the resume.
        assert result.verification and all(check["supported"] for check in result.verification), message


def test_offline_model_is_deterministic():
    def transcript(turns_):
        return [(final_text(t["events"]), [(c.name, c.args) for c in function_calls(t["events"])]) for t in turns_]

    messages = ["Hello", "Please plan my job search", "Make it shorter", "我的弱點是什麼？"]
    assert transcript(asyncio.run(_conversation(messages))) == transcript(asyncio.run(_conversation(messages)))


def test_model_selection(monkeypatch):
    for var in ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "AGENT_MODEL"):
        monkeypatch.delenv(var, raising=False)
    offline = select_model()
    assert is_offline(offline) and "offline" in model_label(offline)

    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    assert is_offline(select_model())  # Vertex needs a project too
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "demo-project")
    assert model_label(select_model()) == "gemini-2.5-flash"

    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI")
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key-not-real")
    monkeypatch.setenv("AGENT_MODEL", "gemini-2.5-pro")
    model = select_model()
    assert model.model == "gemini-2.5-pro" and not is_offline(model) and model_label(model) == "gemini-2.5-pro"
    assert build_agent().model.model == "gemini-2.5-pro"  # nothing is called
