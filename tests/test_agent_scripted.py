"""The agent driven by a scripted model: ADK plumbing, tools and failure paths."""

import asyncio
from pathlib import Path

import pytest

from agent.agent import build_agent
from agent.plans import plan_versions
from agent.prompt import extract_resume
from agent.verification import verify_reply
from tests.support.scripted_llm import Harness, ScriptedLlm, call_response, final_text, function_calls, text_response

pytestmark = pytest.mark.backend_independent

RESUME = (Path(__file__).parent / "fixtures" / "resume_lin.txt").read_text(encoding="utf-8")


def _run(llm, messages, state=None):
    async def go():
        harness = await Harness(build_agent(llm)).start(state or {"resume_text": RESUME})
        events = [event for message in messages for event in await harness.turn(message)]
        return events, await harness.state()

    return asyncio.run(go())


def test_tool_call_then_text():
    llm = ScriptedLlm(
        steps=[call_response("save_plan", {"plan": "1. Apply to Go roles."}), text_response("Saved as v1.")]
    )
    events, state = _run(llm, ["Plan please"])

    assert final_text(events) == "Saved as v1."
    assert [p["version"] for p in plan_versions(state)] == [1]
    # The second model call sees the call and its response after the user's message.
    contents = llm.requests[1].contents
    assert contents[-2].parts[0].function_call.name == "save_plan"
    assert contents[-1].parts[0].function_response.response == {"version": 1}
    # The resume reaches the model inside the system instruction's markers.
    assert extract_resume(llm.requests[0].config.system_instruction) == RESUME.strip("\n")


def test_verify_claims_tool_reports_support():
    claims = ["Led the billing migration to 12 Python services", "Worked at Google for 10 years"]
    llm = ScriptedLlm(steps=[call_response("verify_claims", {"claims": claims}), text_response("Checked.")])
    _run(llm, ["Check me"])
    results = llm.requests[1].contents[-1].parts[0].function_response.response["results"]
    assert [r["supported"] for r in results] == [True, False]


def test_unverified_claims_are_caught_by_verify_reply():
    reply = (
        "Hi Lin! You led the migration of the billing service to 12 Python services on Kubernetes. "
        "You worked at Google for 10 years."
    )
    events, _ = _run(ScriptedLlm(steps=[text_response(reply)]), ["Summarise me"])
    assert function_calls(events) == []  # the model never called verify_claims
    checks = verify_reply(final_text(events), RESUME)
    assert [c["supported"] for c in checks] == [True, False]
    assert "Google" in checks[1]["claim"]


def test_flag_suspicious_text_tool_writes_state():
    llm = ScriptedLlm(
        steps=[
            call_response("flag_suspicious_text", {"excerpt": "x" * 900, "reason": "injection"}),
            text_response("ok"),
        ]
    )
    _, state = _run(llm, ["Hi"])
    (flag,) = state["suspicious_flags"]
    assert len(flag["excerpt"]) == 500 and flag["reason"] == "injection" and flag["flagged_at"]


def test_model_exception_propagates():
    with pytest.raises(RuntimeError, match="model unavailable"):
        _run(ScriptedLlm(steps=[RuntimeError("model unavailable")]), ["Hello"])
