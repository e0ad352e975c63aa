"""The benchmark load generator's own arithmetic: percentiles and the half-saved-turn check.

No server, no network: these are the numbers the benchmark reports, so they
are checked against values worked out by hand.
"""

import math

import pytest

from benchmarks.loadgen import LoadResult, Op, check_history, percentile, summarize_ms

pytestmark = pytest.mark.backend_independent


def test_percentile_interpolates_between_closest_ranks():
    values = [15, 20, 35, 40, 50]  # unsorted input is sorted first
    assert percentile(list(reversed(values)), 0) == 15
    assert percentile(values, 100) == 50
    assert percentile(values, 50) == 35
    # rank (5 - 1) * 0.4 = 1.6: 20 + 0.6 * (35 - 20)
    assert percentile(values, 40) == pytest.approx(29.0)
    # rank 4 * 0.99 = 3.96: 40 + 0.96 * (50 - 40)
    assert percentile(values, 99) == pytest.approx(49.6)


def test_percentile_of_one_and_of_none():
    assert percentile([7.5], 99) == 7.5
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError):
        percentile([1, 2], 101)


def test_p99_of_1_to_100_ms():
    summary = summarize_ms([x / 1000 for x in range(1, 101)])  # seconds in, milliseconds out
    assert summary["n"] == 100
    assert summary["p50"] == pytest.approx(50.5)
    assert summary["p99"] == pytest.approx(99.01)
    assert summary["max"] == pytest.approx(100)


def test_only_operations_inside_the_measured_window_count():
    result = LoadResult(target="t", clients=1, warmup_s=1, duration_s=10, t_measure=1.0, t_end=11.0)
    result.ops = [
        Op("turn", 0.5, 1.5, True),  # started in the warm-up
        Op("turn", 2.0, 2.1, True),
        Op("turn", 3.0, 3.2, False, "HTTP 500: boom"),
        Op("turn", 10.9, 11.2, True),  # ended after the deadline
    ]
    summary = result.summary()
    assert summary["turns"] == 1
    assert summary["turns_per_s"] == pytest.approx(0.1)
    assert summary["errors"] == {"turn: HTTP 500: boom": 1}
    assert summary["errors_all_phases"] == 1


def _user(text):
    return {"author": "user", "content": {"role": "user", "parts": [{"text": text}]}}


def _call(name, call_id):
    return {"author": "agent", "content": {"parts": [{"function_call": {"name": name, "id": call_id}}]}}


def _result(name, call_id):
    return {"author": "agent", "content": {"parts": [{"function_response": {"name": name, "id": call_id}}]}}


def _reply(text):
    return {"author": "agent", "content": {"role": "model", "parts": [{"text": text}]}}


def test_complete_turns_are_counted():
    events = [
        _user("a"),
        _call("verify_claims", "1"),
        _result("verify_claims", "1"),
        _reply("done"),
        _user("b"),
        _reply("done again"),
    ]
    assert check_history(events) == {"user_messages": 2, "final_replies": 2, "half_saved": 0}


def test_half_saved_turns_are_found():
    # Two interleaved turns (both user messages stored, one reply), and a turn cut after a tool call.
    interleaved = [_user("a"), _user("b"), _call("save_plan", "1"), _result("save_plan", "1"), _reply("x")]
    assert check_history(interleaved) == {"user_messages": 2, "final_replies": 1, "half_saved": 1}
    cut = [_user("a"), _reply("ok"), _user("b"), _call("save_plan", "2")]
    assert check_history(cut) == {"user_messages": 2, "final_replies": 1, "half_saved": 1}


def test_histories_dumped_by_alias_are_read_too():
    # ADK's api_server returns events by alias (functionCall / functionResponse).
    events = [
        _user("a"),
        {"author": "agent", "content": {"parts": [{"functionCall": {"name": "save_plan", "id": "9"}}]}},
        {"author": "user", "content": {"parts": [{"functionResponse": {"name": "save_plan", "id": "9"}}]}},
        _reply("saved"),
    ]
    assert check_history(events) == {"user_messages": 1, "final_replies": 1, "half_saved": 0}
