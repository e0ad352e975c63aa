"""The offline model drives the real agent (Runner + tools + session state)."""

import asyncio
from pathlib import Path

import pytest

from agent import build_agent, is_offline, model_label, select_model
from agent.offline_model import OFFLINE_BANNER, OfflineResumeModel
from agent.plans import plan_versions
from agent.verification import verify_reply
from tests.scripted_llm import Harness, final_text, function_calls

RESUME = (Path(__file__).parent / "fixtures" / "resume_lin.txt").read_text(encoding="utf-8")


async def _conversation(messages):
    harness = await Harness(build_agent(OfflineResumeModel())).start({"resume_text": RESUME})
    turns = []
    for message in messages:
        events = await harness.turn(message)
        turns.append({"events": events, "state": await harness.state()})
    return turns


@pytest.fixture(scope="module")
def two_turns():
    return asyncio.run(_conversation(["Please review my resume.", "Focus on Go roles in Tokyo, please."]))


def test_reply_greets_by_name_and_says_offline(two_turns):
    reply = final_text(two_turns[0]["events"])
    assert "林語晴" in reply
    assert reply.splitlines()[0] == OFFLINE_BANNER
    assert "offline" in reply.lower()


def test_tools_are_called_each_turn(two_turns):
    for turn in two_turns:
        names = [call.name for call in function_calls(turn["events"])]
        assert names == ["verify_claims", "save_plan"]


def test_claims_sent_to_verify_are_supported(two_turns):
    responses = [
        p.function_response.response
        for e in two_turns[0]["events"]
        for p in (e.content.parts or [])
        if p.function_response and p.function_response.name == "verify_claims"
    ]
    results = responses[0]["results"]
    assert 2 <= len(results) <= 3 and all(r["supported"] and r["evidence"] for r in results)


def test_plan_versions_grow_and_differ(two_turns):
    v1 = plan_versions(two_turns[0]["state"])
    v2 = plan_versions(two_turns[1]["state"])
    assert [p["version"] for p in v1] == [1]
    assert [p["version"] for p in v2] == [1, 2]
    assert v2[1]["plan"] != v2[0]["plan"]
    assert "Kingfisher Cloud" in v1[0]["plan"]  # built from the person's own resume
    assert "Tokyo" in v2[1]["plan"]  # the revision note from turn 2
    assert v2[1]["saved_at"].endswith("+00:00")
    assert "[plan v2 saved]" in final_text(two_turns[1]["events"])


def test_offline_reply_passes_its_own_verification(two_turns):
    checks = verify_reply(final_text(two_turns[0]["events"]), RESUME)
    assert checks and all(c["supported"] for c in checks)


def test_offline_model_is_deterministic():
    def transcript(turns):
        return [(final_text(t["events"]), [(c.name, c.args) for c in function_calls(t["events"])]) for t in turns]

    messages = ["Hello", "Make it shorter"]
    assert transcript(asyncio.run(_conversation(messages))) == transcript(asyncio.run(_conversation(messages)))


def test_model_selection(monkeypatch):
    for var in ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "AGENT_MODEL"):
        monkeypatch.delenv(var, raising=False)
    offline = select_model()
    assert is_offline(offline) and "offline" in model_label(offline)

    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    assert is_offline(select_model())  # Vertex needs a project too
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "demo-project")
    assert select_model() == "gemini-2.5-flash"

    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI")
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key-not-real")
    monkeypatch.setenv("AGENT_MODEL", "gemini-2.5-pro")
    model = select_model()
    assert model == "gemini-2.5-pro" and not is_offline(model) and model_label(model) == "gemini-2.5-pro"
    assert build_agent().model == "gemini-2.5-pro"  # name only: nothing is called
