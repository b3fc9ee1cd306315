"""The LM layer, through our real LM client (over aiohttp) and a real HTTP server on loopback;
one test also drives that server with the ``openai`` package, to check it speaks its protocol."""

from __future__ import annotations

import asyncio
import json
import math
import random
import string
import struct
import time
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cogym_lab.core.blocking import run_to_end
from cogym_lab.lm import (
    LM,
    Completion,
    LMConfig,
    LMError,
    LMNotConfigured,
    OpenAILM,
    Usage,
    make_lm,
    shared_clients,
)
from cogym_lab.lm.base import AttemptFailed
from cogym_lab.lm.calllog import REDACTED, log_files, read_calls, redact, write_call
from cogym_lab.lm.openai_client import REASON_CONNECTION
from cogym_lab.testing.openai_server import Reply, ScriptedOpenAIServer

KEY = "sk-test-SECRET1234567890abcdef"
SECRET_PART = "SECRET1234567890"
USER = [{"role": "user", "content": "Write a haiku about shared workspaces"}]


def lm_for(server: ScriptedOpenAIServer, **settings: Any) -> OpenAILM:
    values: dict[str, Any] = {"model": "test-model", "base_url": server.base_url,
                              "api_key": KEY, "backoff": 0.01, "max_retries": 3, "timeout": 5}
    values.update(settings)
    lm = make_lm(LMConfig(**values))
    assert isinstance(lm, OpenAILM)
    return lm


# -- answers and accounting ----------------------------------------------------------------------

async def test_completion_text_tokens_and_timing(server: ScriptedOpenAIServer) -> None:
    server.add(Reply("Desks side by side", usage=(11, 4)))
    server.add("two words")  # default usage: words of the prompt and of the reply
    lm = lm_for(server)

    first = await lm.complete(USER, purpose="draft")
    assert isinstance(first, Completion)
    assert first.text == "Desks side by side"
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (11, 4)
    assert first.usage.total_tokens == 15
    assert first.attempts == 1 and first.model == "test-model" and first.latency > 0

    second = await lm.complete(USER)
    assert second.text == "two words"
    assert (second.usage.prompt_tokens, second.usage.completion_tokens) == (6, 2)

    assert len(server.chat_requests) == 2
    request = server.chat_requests[0]
    assert request["model"] == "test-model" and request["messages"] == USER
    assert request.headers["authorization"] == f"Bearer {KEY}"  # the real key reaches the server
    await lm.aclose()


async def test_missing_usage_counts_as_zero(server: ScriptedOpenAIServer) -> None:
    server.add(Reply("fine", send_usage=False))
    lm = lm_for(server)
    completion = await lm.complete(USER, purpose="x")
    assert completion.text == "fine" and completion.usage.total_tokens == 0
    assert lm.meter.calls == 1 and lm.meter.total_tokens == 0


async def test_empty_text_is_an_answer(server: ScriptedOpenAIServer) -> None:
    server.add(Reply(""))
    completion = await lm_for(server).complete(USER)
    assert completion.text == "" and completion.attempts == 1


async def test_usage_meter_totals_and_by_purpose(server: ScriptedOpenAIServer) -> None:
    server.extend([Reply("a", usage=(10, 1)), Reply("b", usage=(20, 2)),
                   Reply("c", usage=(30, 3))])
    lm = lm_for(server)
    await lm.complete(USER, purpose="plan")
    await lm.complete(USER, purpose="plan")
    await lm.complete(USER, purpose="judge")

    meter = lm.meter
    assert (meter.calls, meter.failures) == (3, 0)
    assert (meter.prompt_tokens, meter.completion_tokens, meter.total_tokens) == (60, 6, 66)
    assert meter.by_purpose["plan"]["calls"] == 2
    assert meter.by_purpose["plan"]["prompt_tokens"] == 30
    assert meter.by_purpose["plan"]["completion_tokens"] == 3
    assert meter.by_purpose["judge"] == {"calls": 1, "prompt_tokens": 30, "completion_tokens": 3,
                                         "latency": pytest.approx(meter.by_purpose["judge"]
                                                                  ["latency"])}
    assert meter.latency == pytest.approx(sum(row["latency"]
                                              for row in meter.by_purpose.values()))
    assert meter.to_dict()["total_tokens"] == 66


# -- retries ---------------------------------------------------------------------------------

@pytest.mark.parametrize("failure", [
    Reply(status=429, headers={"Retry-After": "0.25"}),
    Reply(status=500, error="upstream exploded"),
    Reply(status=503),
    Reply(delay=5.0),  # beyond the 0.3 s timeout this case gets
    Reply(garbage=True),  # claims JSON, is not
    Reply(garbage=True, headers={"Content-Type": "text/html"}),
    Reply(garbage='{"choices": ['),  # cut off
    Reply(garbage=b'{"choices": "\xff\xfe"}'),  # not UTF-8
    Reply(garbage='{"unexpected": "shape"}'),
    Reply(no_choices=True),
    Reply(text=None),
], ids=["429", "500", "503", "timeout", "garbage-json", "garbage-html", "truncated",
        "invalid-utf8", "not-a-completion", "no-choices", "null-content"])
async def test_retries_then_succeeds(server: ScriptedOpenAIServer, failure: Reply) -> None:
    server.add(failure)
    server.add(Reply("recovered", usage=(3, 1)))
    # Only the slow-reply case needs a short timeout; a good reply on a busy machine must not
    # time out in the others.
    lm = lm_for(server, timeout=0.3 if failure.delay else 10)

    completion = await lm.complete(USER, purpose="retry")

    assert completion.text == "recovered"
    assert completion.attempts == 2
    assert len(server.chat_requests) == 2
    assert lm.meter.calls == 1 and lm.meter.failures == 0
    assert completion.usage.prompt_tokens == 3  # only the good answer counts
    if failure.status == 429:
        assert completion.latency >= 0.25  # Retry-After was honoured over the 0.01 s backoff
    if failure.delay:
        assert 0.3 <= completion.latency < failure.delay  # the slow answer was not waited for
    await lm.aclose()


@pytest.mark.parametrize(("headers", "least", "most"), [
    ({"Retry-After": "3600"}, 0.2, 1.0),  # capped (at 0.2 s for this test)
    ({"retry-after-ms": "150"}, 0.15, 0.2),
    ({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0, 0.2),  # a date in the past
], ids=["capped", "milliseconds", "http-date"])
async def test_retry_after_variants(server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch,
                                    headers: dict[str, str], least: float, most: float) -> None:
    from cogym_lab.lm import base

    monkeypatch.setattr(base, "MAX_RETRY_AFTER", 0.2)  # the retry loop's cap, for every provider
    server.extend([Reply(status=429, headers=headers), "ok"])
    completion = await lm_for(server).complete(USER)
    assert completion.attempts == 2
    assert least <= completion.latency < most


async def test_backoff_doubles(server: ScriptedOpenAIServer) -> None:
    server.extend([Reply(status=500)] * 3 + ["ok"])
    lm = lm_for(server, backoff=0.1)
    started = time.monotonic()
    completion = await lm.complete(USER)
    elapsed = time.monotonic() - started
    assert completion.attempts == 4
    assert elapsed >= 0.1 + 0.2 + 0.4  # 0.1 * 2**attempt
    assert elapsed < 2.0


async def test_gives_up_after_max_retries(server: ScriptedOpenAIServer) -> None:
    server.add(Reply(status=500, error="still broken"), repeat=True)
    lm = lm_for(server, max_retries=2)

    with pytest.raises(LMError) as caught:
        await lm.complete(USER, purpose="doomed")

    message = str(caught.value)
    assert "3 attempts" in message
    assert "still broken" in message and "test-model" in message
    assert SECRET_PART not in message
    assert len(server.chat_requests) == 3
    assert lm.meter.failures == 1 and lm.meter.calls == 0


async def test_timeouts_give_up_cleanly(server: ScriptedOpenAIServer) -> None:
    server.add(Reply(delay=1.0), repeat=True)
    lm = lm_for(server, timeout=0.2, max_retries=1)
    with pytest.raises(LMError, match=r"after 2 attempts; last error: no answer within 0.2 s"):
        await lm.complete(USER)
    assert len(server.chat_requests) == 2 and lm.meter.failures == 1


@pytest.mark.parametrize("status", [400, 401, 404])
async def test_client_errors_fail_at_once(server: ScriptedOpenAIServer, status: int) -> None:
    server.add(Reply(status=status, error=f"the server dislikes this ({status})"))
    server.add("never reached")
    lm = lm_for(server)

    with pytest.raises(LMError) as caught:
        await lm.complete(USER)

    message = str(caught.value)
    assert f"the server dislikes this ({status})" in message
    assert f"HTTP {status}" in message
    assert lm.config.describe() in message  # names the model and endpoint
    assert SECRET_PART not in message
    assert len(server.chat_requests) == 1
    assert lm.meter.failures == 1 and lm.meter.calls == 0


async def test_no_retries_when_max_retries_is_zero(server: ScriptedOpenAIServer) -> None:
    server.extend([Reply(status=500), "late"])
    lm = lm_for(server, max_retries=0)
    with pytest.raises(LMError, match="after 1 attempt;"):
        await lm.complete(USER)
    assert len(server.chat_requests) == 1


async def test_unreachable_server_is_an_lm_error() -> None:
    with ScriptedOpenAIServer() as gone:
        base_url = gone.base_url
    lm = make_lm(LMConfig(model="m", base_url=base_url, backoff=0.01, max_retries=1))
    with pytest.raises(LMError, match="after 2 attempts; last error: connection failed"):
        await lm.complete(USER)
    assert lm.meter.failures == 1


async def test_exhausted_script_is_a_clear_failure(server: ScriptedOpenAIServer) -> None:
    lm = lm_for(server, max_retries=0)
    with pytest.raises(LMError, match="no scripted reply left"):
        await lm.complete(USER)


# -- the retry loop is the base class's, once for every provider ---------------------------------

class Flaky(LM):
    """A provider made only of its single attempt: each call to ``_attempt`` takes the next
    scripted outcome (an answer, an :class:`AttemptFailed`, or ``"hang"``)."""

    def __init__(self, script: list[Any], *, attempt_timeout: float | None = 5.0,
                 **settings: Any) -> None:
        super().__init__(LMConfig(model="flaky", **{"backoff": 0.01, **settings}))
        self.script = list(script)
        self.tries = 0
        self.cancelled = 0
        self._attempt_timeout = attempt_timeout

    @property
    def attempt_timeout(self) -> float | None:
        return self._attempt_timeout

    async def _attempt(self, messages: Any, max_tokens: int | None,
                       stop: list[str] | None) -> tuple[str, Usage]:
        self.tries += 1
        outcome = self.script.pop(0)
        if outcome == "hang":
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                self.cancelled += 1  # the loop cut it: the provider may release what it holds
                raise
        if isinstance(outcome, AttemptFailed):
            raise outcome
        return outcome, Usage(prompt_tokens=2, completion_tokens=1)


def test_no_provider_has_a_retry_loop_of_its_own() -> None:
    from cogym_lab.lm.local import LlamaCppLM

    for provider in (OpenAILM, LlamaCppLM):
        assert provider.complete is LM.complete
        assert "_attempt" in vars(provider)


async def test_the_base_loop_retries_until_an_answer() -> None:
    lm = Flaky([AttemptFailed("HTTP 500: boom", "its server kept reporting errors"),
                AttemptFailed("unusable reply: no text", "its answers could not be read"),
                "at last"])
    completion = await lm.complete(USER, purpose="loop")
    assert (completion.text, completion.attempts, lm.tries) == ("at last", 3, 3)
    assert lm.meter.calls == 1 and lm.meter.failures == 0
    assert completion.latency >= 0.01 + 0.02  # backoff 0.01, doubled


async def test_the_base_loop_says_the_last_error_and_its_reason_after_the_last_attempt() -> None:
    lm = Flaky([AttemptFailed("HTTP 503: later", "its server kept reporting errors")] * 3,
               max_retries=2)
    with pytest.raises(LMError) as caught:
        await lm.complete(USER)
    assert str(caught.value) == ("flaky at the OpenAI API gave no usable answer after 3 "
                                 "attempts; last error: HTTP 503: later")
    assert caught.value.reason == "its server kept reporting errors" and lm.tries == 3
    assert lm.meter.failures == 1 and lm.meter.calls == 0


async def test_a_final_failure_is_not_retried_and_keeps_its_cause() -> None:
    cause = RuntimeError("the model file is broken")
    failure = AttemptFailed("could not load the model", "the model could not be loaded",
                            final=True)
    failure.__cause__ = cause
    lm = Flaky([failure, "never reached"])
    with pytest.raises(LMError) as caught:
        await lm.complete(USER)
    assert str(caught.value) == "could not load the model" and lm.tries == 1
    assert caught.value.reason == "the model could not be loaded"
    assert caught.value.__cause__ is cause


async def test_the_base_loop_honours_retry_after_up_to_its_cap(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from cogym_lab.lm import base

    monkeypatch.setattr(base, "MAX_RETRY_AFTER", 0.3)
    asked = AttemptFailed("HTTP 429: slow down", "its server says it is too busy",
                          retry_after=0.2)
    capped = AttemptFailed("HTTP 429: slow down", "its server says it is too busy",
                           retry_after=3600)
    lm = Flaky([asked, capped, "ok"])
    completion = await lm.complete(USER)
    assert completion.attempts == 3
    assert 0.2 + 0.3 <= completion.latency < 2.0


async def test_the_deadline_cuts_an_attempt_that_has_only_the_deadline() -> None:
    """``attempt_timeout`` None (a local model): the attempt runs until the deadline, is
    cancelled there, and no retry is made after it."""
    lm = Flaky(["hang", "never reached"], attempt_timeout=None, deadline=0.3)
    started = time.monotonic()
    with pytest.raises(LMError, match=r"within its 0.3 s deadline \(1 attempt\)") as caught:
        await lm.complete(USER)
    assert time.monotonic() - started < 0.3 + 1.0
    assert caught.value.reason == "it did not answer within 0.3 seconds"
    assert (lm.tries, lm.cancelled) == (1, 1)


async def test_each_attempt_is_cut_at_the_attempt_timeout() -> None:
    lm = Flaky(["hang", "hang", "third time"], attempt_timeout=0.1, deadline=5)
    completion = await lm.complete(USER)
    assert (completion.text, completion.attempts, lm.cancelled) == ("third time", 3, 2)
    assert completion.latency >= 0.2


# -- what the server receives ---------------------------------------------------------------------

async def test_request_parameters(server: ScriptedOpenAIServer) -> None:
    server.extend(["one", "two", "three"])
    lm = lm_for(server)
    await lm.complete(USER)
    await lm.complete(USER, max_tokens=17, stop=["\nEND", "###"])
    await lm_for(server, temperature=0.7, max_tokens=None,
                 extra={"top_p": 0.5, "top_k": 20, "seed": 3}).complete(USER)

    default, explicit, extra = server.bodies
    assert default["temperature"] == 0
    assert default["max_tokens"] == 1024  # LMConfig's default
    assert "stop" not in default
    assert explicit["max_tokens"] == 17 and explicit["stop"] == ["\nEND", "###"]
    assert extra["temperature"] == 0.7 and "max_tokens" not in extra
    assert extra["top_p"] == 0.5 and extra["seed"] == 3
    assert extra["top_k"] == 20  # not an openai parameter: sent in the body all the same


async def test_twenty_concurrent_calls(server: ScriptedOpenAIServer) -> None:
    server.responder = lambda request: f"echo {request['messages'][-1]['content']}"
    lm = lm_for(server)

    async def ask(i: int) -> Completion:
        return await lm.complete([{"role": "user", "content": f"question {i}"}], purpose="fan")

    results = await asyncio.gather(*(ask(i) for i in range(20)))
    assert [r.text for r in results] == [f"echo question {i}" for i in range(20)]
    assert len(server.chat_requests) == 20
    assert lm.meter.calls == 20 and lm.meter.by_purpose["fan"]["calls"] == 20


def test_one_lm_across_event_loops(server: ScriptedOpenAIServer) -> None:
    server.extend(["first loop", "second loop"])
    lm = lm_for(server)
    assert asyncio.run(lm.complete(USER)).text == "first loop"
    assert asyncio.run(lm.complete(USER)).text == "second loop"


async def test_lms_on_one_endpoint_share_a_client_which_the_last_one_closes(
        server: ScriptedOpenAIServer) -> None:
    """2,000 LMs of a batch on one endpoint share one client (and its warm connections) per
    event loop; it stays open while any of them may call, and closes with the last."""
    server.responder = lambda request: "shared"
    before = shared_clients.clients_open()
    first, second = lm_for(server), lm_for(server)
    other_timeout = lm_for(server, timeout=7)  # another client setting: a client of its own
    await asyncio.gather(first.complete(USER), second.complete(USER),
                         other_timeout.complete(USER))
    assert first._client is second._client is not None
    assert other_timeout._client is not first._client
    assert shared_clients.clients_open() == before + 2
    await first.aclose()
    assert shared_clients.clients_open() == before + 2  # second still holds it
    assert (await second.complete(USER)).text == "shared"
    await second.aclose()
    await other_timeout.aclose()
    assert shared_clients.clients_open() == before
    assert (await first.complete(USER)).text == "shared"  # a closed LM opens a client again
    await first.aclose()
    assert shared_clients.clients_open() == before


async def test_an_lm_closes_at_the_end_of_an_async_with_block(
        server: ScriptedOpenAIServer) -> None:
    server.responder = lambda request: "inside"
    before = shared_clients.clients_open()
    async with lm_for(server) as lm:
        assert (await lm.complete(USER)).text == "inside"
        assert shared_clients.clients_open() == before + 1
    assert shared_clients.clients_open() == before and lm._client is None


async def test_the_owner_of_a_loop_closes_its_clients_and_an_lm_opens_a_new_one(
        server: ScriptedOpenAIServer) -> None:
    """``close_this_loops_clients`` (``Session.run_sync`` and the test harness call it as their
    loop ends) closes every client of the loop, held or not; LMs that held one open a new one on
    their next call, shared again, and the last of them to close closes it."""
    server.responder = lambda request: "ok"
    first, second = lm_for(server), lm_for(server)  # one client setting: one shared client
    other = lm_for(server, timeout=7)  # another setting: a client of its own
    await asyncio.gather(first.complete(USER), second.complete(USER), other.complete(USER))
    held = [first._client, other._client]
    before = shared_clients.clients_open()
    assert await shared_clients.close_this_loops_clients() == 2
    assert all(client is not None and client.session.closed for client in held)
    assert shared_clients.clients_open() == before - 2
    assert await shared_clients.close_this_loops_clients() == 0
    assert [c.text for c in await asyncio.gather(first.complete(USER), second.complete(USER))
            ] == ["ok", "ok"]
    assert first._client is second._client and first._client not in held
    assert shared_clients.clients_open() == before - 1
    await first.aclose()
    assert shared_clients.clients_open() == before - 1  # second still holds it
    await second.aclose()
    await other.aclose()  # its client was closed under it: nothing left to let go of
    assert shared_clients.clients_open() == before - 2


def test_a_blocking_call_closes_the_lm_clients_its_own_loop_opened(
        server: ScriptedOpenAIServer) -> None:
    """``run_to_end`` (``report``, ``regrade``, the batch runner) runs on a loop of its own: a
    caller's LM used there has its client closed before that loop ends, called from plain code
    or from inside a running loop (a notebook cell: a thread), and answers again afterwards."""
    server.responder = lambda request: "ok"
    lm = lm_for(server)
    before = shared_clients.clients_open()
    assert run_to_end(lm.complete(USER)).text == "ok"
    first = lm._client
    assert first is not None and first.session.closed
    assert shared_clients.clients_open() == before

    async def in_a_cell() -> str:
        return run_to_end(lm.complete(USER)).text

    assert asyncio.run(in_a_cell()) == "ok"
    assert lm._client is not None and lm._client is not first and lm._client.session.closed
    assert shared_clients.clients_open() == before


def test_a_client_is_never_shared_across_event_loops(server: ScriptedOpenAIServer) -> None:
    server.responder = lambda request: "ok"
    lm = lm_for(server)

    async def call() -> object:
        await lm.complete(USER)
        return lm._client

    assert asyncio.run(call()) is not asyncio.run(call())


async def test_a_refused_connection_is_not_reported_as_a_timeout() -> None:
    """aiohttp reports a refused connection as a connect timeout; the teammate must read that
    the server cannot be reached, not that it was slow."""
    with ScriptedOpenAIServer() as gone:
        base_url = gone.base_url
    lm = make_lm(LMConfig(model="m", base_url=base_url, backoff=0.01, max_retries=0))
    with pytest.raises(LMError) as caught:
        await lm.complete(USER)
    assert caught.value.reason == REASON_CONNECTION
    assert "timeout" not in str(caught.value)
    await lm.aclose()


# -- call log --------------------------------------------------------------------------------

async def test_call_log_records_calls_and_hides_the_key(server: ScriptedOpenAIServer,
                                                        tmp_path: Path) -> None:
    server.add(Reply(f"I will not repeat {KEY}", usage=(9, 5)))
    server.add(Reply(status=400, error=f"bad key {KEY}, header was Bearer {KEY}"))
    lm = lm_for(server)
    log_path = tmp_path / "run" / "logs" / "lm_calls.jsonl"
    lm.log_to(log_path)
    leaky = [{"role": "system", "content": "You plan trips."},
             {"role": "user", "content": f"my key is {KEY}; plan a day in Lyon"}]

    completion = await lm.complete(leaky, purpose="plan")
    with pytest.raises(LMError) as caught:
        await lm.complete(leaky, purpose="judge")

    assert SECRET_PART not in str(caught.value)
    text = log_path.read_text()
    assert SECRET_PART not in text
    good, bad = read_calls(log_path)
    assert good["purpose"] == "plan" and bad["purpose"] == "judge"
    assert good["model"] == "test-model" and good["base_url"] == server.base_url
    assert good["messages"][0] == {"role": "system", "content": "You plan trips."}
    assert good["messages"][1]["content"] == f"my key is {REDACTED}; plan a day in Lyon"
    assert good["completion"] == f"I will not repeat {REDACTED}"
    assert completion.text.endswith(KEY)  # only the log is redacted, not the answer
    assert good["usage"] == {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14}
    assert good["latency"] > 0 and good["attempts"] == 1 and good["error"] is None
    assert good["time"].endswith("+00:00")
    assert bad["completion"] is None and bad["attempts"] == 1
    assert "HTTP 400" in bad["error"] and REDACTED in bad["error"]
    assert bad["usage"]["total_tokens"] == 0


async def test_call_log_counts_retries(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.extend([Reply(status=500), "fine"])
    lm = lm_for(server)
    lm.log_to(tmp_path / "lm_calls.jsonl")
    await lm.complete(USER)
    (record,) = read_calls(tmp_path / "lm_calls.jsonl")
    assert record["attempts"] == 2 and record["completion"] == "fine"


async def test_no_log_unless_asked(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add("quiet")
    lm = lm_for(server)
    lm.log_to(None)
    await lm.complete(USER)
    assert list(tmp_path.iterdir()) == []


def test_redact_walks_everything() -> None:
    data = {"a": [f"x{KEY}y", ("tuple", KEY)], KEY: 3, "n": 5, "none": None,
            "deep": {"headers": {"Authorization": "Bearer abc.def-123"}},
            "other": "key sk-proj-ABCDEFGHIJKLMNOPQRST and task-abcdefghijklmnopqrstu",
            "short": "sk-short", "custom": "password hunter2 here"}
    cleaned = redact(data, [KEY, "hunter2", "", None])
    assert cleaned["a"] == [f"x{REDACTED}y", ("tuple", REDACTED)]
    assert cleaned[REDACTED] == 3 and cleaned["n"] == 5 and cleaned["none"] is None
    assert cleaned["deep"]["headers"]["Authorization"] == f"Bearer {REDACTED}"
    assert cleaned["other"] == f"key {REDACTED} and task-abcdefghijklmnopqrstu"
    assert cleaned["short"] == "sk-short"
    assert cleaned["custom"] == f"password {REDACTED} here"
    assert data["a"][0] == f"x{KEY}y"  # the input is left alone


_SECRET_PIECES = ["sk-", "SK-", "bearer", "Bearer", "BEARER", "bEaReR", "ABCDEFGHIJKLMNOP",
                  "abc.def-123==", " ", "\n", "\t", "task", "x", "_", "-", "\u2028", "\ud800", "K"]


@given(st.lists(st.sampled_from(_SECRET_PIECES) | st.text(max_size=5), max_size=12))
def test_redacting_skips_no_key_and_no_bearer_token_the_patterns_find(pieces) -> None:
    # The call log looks for "sk-" and "bearer" before running the patterns (a prompt's scan
    # is the slow part): the quick look must never miss a place the patterns match.
    from cogym_lab.lm import calllog

    text = "".join(pieces)
    unfiltered = calllog._BEARER_PATTERN.sub(lambda m: f"{m.group(1)} {REDACTED}",
                                             calllog._KEY_PATTERN.sub(REDACTED, text))
    assert calllog._redact_text(text, []) == unfiltered


def test_write_call_appends_lines(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "calls.jsonl"
    write_call(path, {"purpose": "p", "messages": [{"role": "user", "content": KEY}]}, [KEY])
    write_call(path, {"purpose": "q", "note": "extra fields are kept"}, [])
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert set(first) == {"time", "purpose", "model", "base_url", "messages", "completion",
                          "usage", "latency", "attempts", "error"}
    assert first["messages"][0]["content"] == REDACTED and first["time"]
    assert second["note"] == "extra fields are kept" and second["error"] is None


def test_the_call_log_rotates_at_its_cap_and_keeps_a_bounded_number_of_files(
        tmp_path: Path) -> None:
    path = tmp_path / "lm_calls.jsonl"
    cap = 4096
    for n in range(200):  # about 100 kB in all
        write_call(path, {"purpose": f"call {n}", "messages": [{"role": "user",
                                                               "content": "x" * 400}]},
                   max_bytes=cap, backups=2)
    assert [p.name for p in log_files(path)] == ["lm_calls.2.jsonl", "lm_calls.1.jsonl",
                                                 "lm_calls.jsonl"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in log_files(path))
    assert all(p.stat().st_size <= cap for p in log_files(path))
    kept = [record["purpose"] for record in read_calls(path)]
    assert kept == [f"call {n}" for n in range(200 - len(kept), 200)]  # the newest, in order
    assert len(kept) > 10
    for file in log_files(path):  # every rotated file is whole JSON lines
        assert all(json.loads(line) for line in file.read_text().splitlines())


def test_a_call_log_without_backups_keeps_only_the_live_file(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    for n in range(50):
        write_call(path, {"purpose": str(n), "completion": "y" * 500}, max_bytes=4096, backups=0)
    assert log_files(path) == [path] and path.stat().st_size <= 4096
    assert read_calls(path)[-1]["purpose"] == "49"


def test_one_call_larger_than_the_cap_is_cut_to_fit(tmp_path: Path) -> None:
    path = tmp_path / "lm_calls.jsonl"
    prompt = "HEAD " + "middle " * 5000 + " TAIL"
    write_call(path, {"purpose": "big", "messages": [{"role": "user", "content": prompt}],
                      "completion": "short answer"}, max_bytes=4096)
    assert path.stat().st_size <= 4096
    (record,) = read_calls(path)
    content = record["messages"][0]["content"]
    assert record["truncated"] is True and record["completion"] == "short answer"
    assert content.startswith("HEAD ") and content.endswith(" TAIL") and "characters cut" in content
    many = [{"role": "user", "content": f"message {n}"} for n in range(2000)]
    write_call(path, {"purpose": "many", "messages": many}, max_bytes=4096)
    assert all(p.stat().st_size <= 4096 for p in log_files(path))
    assert read_calls(path)[-1]["purpose"] == "many"


async def test_an_lms_call_log_honours_its_configured_cap(server: ScriptedOpenAIServer,
                                                          tmp_path: Path) -> None:
    server.responder = lambda request: Reply("ok " * 50, usage=(1000, 50))
    lm = lm_for(server, log_max_bytes=8192, log_backups=1)
    lm.log_to(tmp_path / "lm_calls.jsonl")
    for _ in range(40):
        await lm.complete([{"role": "user", "content": "a long prompt " * 100}])
    files = log_files(tmp_path / "lm_calls.jsonl")
    assert len(files) == 2 and all(f.stat().st_size <= 8192 for f in files)
    assert len(read_calls(tmp_path / "lm_calls.jsonl")) < 40
    assert (lm.meter.calls, lm.meter.prompt_tokens, lm.meter.completion_tokens) == (40, 40_000,
                                                                                  2000)
    assert LMConfig().log_max_bytes == 4 * 1024 * 1024 and LMConfig().log_backups == 2


# -- text from the LM is valid Unicode ----------------------------------------------------------

async def test_lone_surrogates_in_a_reply_become_replacement_characters(
        server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    # json.dumps writes the lone surrogate as the escape "\\ud83d", as a faulty server would.
    server.add(Reply("Great idea \ud83d and \udc80!"))
    server.add(Reply(status=400, error="cannot read \ud800 here"))
    lm = lm_for(server)
    lm.log_to(tmp_path / "lm_calls.jsonl")
    completion = await lm.complete(USER, purpose="draft")
    assert completion.text == "Great idea \ufffd and \ufffd!"
    with pytest.raises(LMError) as caught:
        await lm.complete(USER, purpose="draft")
    assert "cannot read \ufffd here" in str(caught.value)
    good, bad = read_calls(tmp_path / "lm_calls.jsonl")  # the log is valid UTF-8
    assert good["completion"] == completion.text
    assert "cannot read \ufffd here" in bad["error"]
    assert lm.meter.calls == 1 and lm.meter.failures == 1


async def test_a_hostile_prompt_is_sent_whole_with_lone_surrogates_replaced(
        server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    # The body goes to the server as the LM builds it (not through the client's transform): a
    # lone surrogate would make it unencodable, so it is replaced; everything else arrives as is.
    megabyte = "x" * 1_000_000
    hostile = f"a\ud800b\u2028c\x00<script>alert(1)</script>{megabyte}"
    server.add(Reply("fine"))
    lm = lm_for(server)
    lm.log_to(tmp_path / "lm_calls.jsonl")
    completion = await lm.complete([{"role": "system", "content": "</s>\u2029"},
                                    {"role": "user", "content": hostile}], purpose="draft")
    assert completion.text == "fine"
    sent = server.chat_requests[-1].body["messages"]
    assert sent == [{"role": "system", "content": "</s>\u2029"},
                    {"role": "user", "content": hostile.replace("\ud800", "\ufffd")}]
    (logged,) = read_calls(tmp_path / "lm_calls.jsonl")
    assert logged["messages"][1]["content"].startswith("a\ufffdb\u2028c\x00<script>")


# -- configuration -------------------------------------------------------------------------------

def test_resolve_precedence() -> None:
    toml = {"model": "toml-model", "base_url": "http://toml.invalid/v1", "temperature": 0.3,
            "max_retries": 1}
    env = {"COGYM_MODEL": "env-model", "OPENAI_BASE_URL": "http://env.invalid/v1",
           "OPENAI_API_KEY": KEY}

    only_toml = LMConfig.resolve(toml=toml, environ={})
    assert only_toml.model == "toml-model" and only_toml.base_url == "http://toml.invalid/v1"
    assert only_toml.api_key is None

    env_over_toml = LMConfig.resolve(toml=toml, environ=env)
    assert env_over_toml.model == "env-model"
    assert env_over_toml.base_url == "http://env.invalid/v1"
    assert env_over_toml.api_key is not None and env_over_toml.api_key.get_secret_value() == KEY
    assert env_over_toml.temperature == 0.3 and env_over_toml.max_retries == 1  # toml still fills

    args = LMConfig.resolve(arguments={"model": "arg-model", "base_url": None}, toml=toml,
                            environ=env)
    assert args.model == "arg-model"
    assert args.base_url == "http://env.invalid/v1"  # a None argument does not erase

    assert LMConfig.resolve(environ={"COGYM_MODEL": "gpt-4o"}).model == "gpt-4o"
    assert LMConfig.resolve(environ={}).model is None
    assert SECRET_PART not in env_over_toml.describe() and SECRET_PART not in repr(env_over_toml)


def test_resolve_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COGYM_MODEL", "from-env")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert LMConfig.resolve().model == "from-env"


@pytest.mark.parametrize("member", ["agent", "user"])
def test_make_lm_without_model_says_what_to_set(member: str) -> None:
    with pytest.raises(LMNotConfigured) as caught:
        make_lm(LMConfig.resolve(environ={}), member=member)
    message = str(caught.value)
    for needed in ("COGYM_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", f"'{member}'",
                   f"[members.{member}.lm]", 'provider = "local"'):
        assert needed in message
    assert isinstance(caught.value, LMError)  # callers catching LMError see it too


def test_make_lm_openai_without_key() -> None:
    with pytest.raises(LMNotConfigured, match="OPENAI_API_KEY") as caught:
        make_lm(LMConfig(model="gpt-4o"), member="judge")
    assert "'judge'" in str(caught.value)


async def test_other_servers_need_no_key(server: ScriptedOpenAIServer) -> None:
    server.add("hi")
    lm = make_lm(LMConfig(model="llama3", base_url=server.base_url, backoff=0.01))
    assert isinstance(lm, LM)
    assert (await lm.complete(USER)).text == "hi"
    assert server.chat_requests[0].headers["authorization"] == "Bearer not-needed"


def test_make_lm_local_names_what_is_missing(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here.gguf"
    with pytest.raises(LMNotConfigured) as caught:
        make_lm(LMConfig(provider="local", model=str(missing)))
    message = str(caught.value)
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        assert "pip install 'cogym_lab[local]'" in message
    else:
        assert str(missing) in message and "does not exist" in message


# -- the scripted server itself -------------------------------------------------------------------

async def test_server_rules_and_responder(server: ScriptedOpenAIServer) -> None:
    server.add("scratch answer", when=lambda req: "scratchpad" in req["messages"][-1]["content"])
    server.add("always for judges", when=lambda req: req["messages"][0]["role"] == "system",
               repeat=True)
    server.extend(["first", "second"])
    server.responder = lambda req: Reply(f"fallback {len(req['messages'])}", usage=(1, 1))
    lm = lm_for(server)

    def user(text: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": text}]

    judge = [{"role": "system", "content": "judge"}, {"role": "user", "content": "score"}]
    texts = [(await lm.complete(m)).text for m in (
        user("plain"), user("use the scratchpad"), user("use the scratchpad"), judge, judge,
        user("plain"), user("plain"))]
    assert texts == ["first", "scratch answer", "second", "always for judges",
                     "always for judges", "fallback 1", "fallback 1"]
    assert server.pending == 1  # the repeating rule stays


async def test_server_speaks_to_the_plain_openai_client(server: ScriptedOpenAIServer) -> None:
    server.models = ["scripted", "other"]
    server.add("plain client")
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        models = await client.models.list()
        assert [m.id for m in models.data] == ["scripted", "other"]
        reply = await client.chat.completions.create(model="any", messages=USER)
    assert reply.choices[0].message.content == "plain client"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.object == "chat.completion" and reply.model == "any"
    assert reply.usage is not None and reply.usage.total_tokens == 6 + 2
    assert [r.method for r in server.requests] == ["GET", "POST"]


def test_server_from_sync_code() -> None:
    with ScriptedOpenAIServer(["sync hello"]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        reply = client.chat.completions.create(model="m", messages=USER)
        client.close()
        assert reply.choices[0].message.content == "sync hello"
        assert server.pending == 0


# -- the local provider: a real llama.cpp run of a tiny random-weight model -----------------------
#
# These need llama-cpp-python (the `local` extra). The model is written below by a small GGUF
# writer (standard library only): a 2-layer llama with random weights and a byte-level vocabulary,
# about 170 KB. Its answers are gibberish, but real: tokenised, generated and counted by llama.cpp.

_GGUF_UINT32, _GGUF_INT32, _GGUF_FLOAT32, _GGUF_STRING, _GGUF_ARRAY = 4, 5, 6, 8, 9


def _gguf_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _gguf_value(kind: int, value: Any) -> bytes:
    if kind == _GGUF_STRING:
        return _gguf_string(value)
    if kind == _GGUF_ARRAY:
        item_kind, items = value
        return struct.pack("<IQ", item_kind, len(items)) + b"".join(
            _gguf_value(item_kind, item) for item in items)
    return struct.pack({_GGUF_UINT32: "<I", _GGUF_INT32: "<i", _GGUF_FLOAT32: "<f"}[kind], value)


def write_tiny_llama_gguf(path: Path, *, n_embd: int = 32, n_layer: int = 2, n_head: int = 4,
                          n_ff: int = 64, n_ctx: int = 256, seed: int = 0) -> Path:
    """A valid GGUF file (version 3, all F32) holding a tiny llama with random weights."""
    rng = random.Random(seed)
    pieces = ["\u2581hello", "\u2581world", "\u2581the", "\u2581plan", "\u2581ok"]
    pieces += [f"\u2581{c}" for c in string.ascii_lowercase] + list(string.ascii_lowercase)
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + pieces
    token_types = [2, 3, 3] + [6] * 256 + [1] * len(pieces)  # unknown, control, byte, normal
    scores = [0.0] * 259 + [-float(i) for i in range(len(pieces))]
    metadata: list[tuple[str, int, Any]] = [
        ("general.architecture", _GGUF_STRING, "llama"),
        ("general.name", _GGUF_STRING, "tiny-random-llama"),
        ("llama.context_length", _GGUF_UINT32, n_ctx),
        ("llama.embedding_length", _GGUF_UINT32, n_embd),
        ("llama.block_count", _GGUF_UINT32, n_layer),
        ("llama.feed_forward_length", _GGUF_UINT32, n_ff),
        ("llama.attention.head_count", _GGUF_UINT32, n_head),
        ("llama.attention.head_count_kv", _GGUF_UINT32, n_head),
        ("llama.attention.layer_norm_rms_epsilon", _GGUF_FLOAT32, 1e-5),
        ("llama.rope.dimension_count", _GGUF_UINT32, n_embd // n_head),
        ("general.file_type", _GGUF_UINT32, 0),  # all F32
        ("tokenizer.ggml.model", _GGUF_STRING, "llama"),
        ("tokenizer.ggml.tokens", _GGUF_ARRAY, (_GGUF_STRING, tokens)),
        ("tokenizer.ggml.scores", _GGUF_ARRAY, (_GGUF_FLOAT32, scores)),
        ("tokenizer.ggml.token_type", _GGUF_ARRAY, (_GGUF_INT32, token_types)),
        ("tokenizer.ggml.bos_token_id", _GGUF_UINT32, 1),
        ("tokenizer.ggml.eos_token_id", _GGUF_UINT32, 2),
        ("tokenizer.ggml.unknown_token_id", _GGUF_UINT32, 0),
    ]
    # name -> shape in GGUF order (fastest-varying dimension first)
    shapes: list[tuple[str, tuple[int, ...]]] = [("token_embd.weight", (n_embd, len(tokens)))]
    for i in range(n_layer):
        shapes += [(f"blk.{i}.attn_norm.weight", (n_embd,)),
                   (f"blk.{i}.attn_q.weight", (n_embd, n_embd)),
                   (f"blk.{i}.attn_k.weight", (n_embd, n_embd)),
                   (f"blk.{i}.attn_v.weight", (n_embd, n_embd)),
                   (f"blk.{i}.attn_output.weight", (n_embd, n_embd)),
                   (f"blk.{i}.ffn_norm.weight", (n_embd,)),
                   (f"blk.{i}.ffn_gate.weight", (n_embd, n_ff)),
                   (f"blk.{i}.ffn_up.weight", (n_embd, n_ff)),
                   (f"blk.{i}.ffn_down.weight", (n_ff, n_embd))]
    shapes += [("output_norm.weight", (n_embd,)), ("output.weight", (n_embd, len(tokens)))]

    alignment = 32
    infos, blobs, offset = bytearray(), bytearray(), 0
    for name, shape in shapes:
        count = math.prod(shape)
        norm = name.endswith("norm.weight")
        values = [1.0] * count if norm else [rng.gauss(0.0, 0.02) for _ in range(count)]
        data = struct.pack(f"<{count}f", *values)
        infos += _gguf_string(name) + struct.pack("<I", len(shape))
        infos += struct.pack(f"<{len(shape)}Q", *shape) + struct.pack("<IQ", 0, offset)  # F32
        padded = -len(data) % alignment
        blobs += data + b"\0" * padded
        offset += len(data) + padded
    header = b"GGUF" + struct.pack("<IQQ", 3, len(shapes), len(metadata))
    header += b"".join(_gguf_string(key) + struct.pack("<I", kind) + _gguf_value(kind, value)
                       for key, kind, value in metadata)
    header += infos
    header += b"\0" * (-len(header) % alignment)
    path.write_bytes(header + blobs)
    return path


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_llama_gguf(tmp_path_factory.mktemp("models") / "tiny-llama.gguf")


def local_lm(model: Path, **settings: Any) -> LM:
    values: dict[str, Any] = {"provider": "local", "model": str(model), "backoff": 0.01}
    values.update(settings)
    return make_lm(LMConfig(**values), member="user")


async def test_local_model_answers_and_counts(tiny_gguf: Path, tmp_path: Path) -> None:
    from cogym_lab.lm.local import LlamaCppLM

    lm = local_lm(tiny_gguf, max_tokens=6)
    assert isinstance(lm, LlamaCppLM)
    lm.log_to(tmp_path / "lm_calls.jsonl")

    first = await lm.complete(USER, purpose="reply")
    again = await lm.complete(USER, purpose="reply")

    assert isinstance(first.text, str) and first.attempts == 1
    assert first.text == again.text  # temperature 0: greedy, so the same answer
    assert first.usage.prompt_tokens > len(USER[0]["content"].split())
    assert first.usage.completion_tokens > 0  # llama-cpp-python's count, not always <= 6
    assert first.model == str(tiny_gguf) and first.latency > 0
    assert lm.meter.calls == 2 and lm.meter.by_purpose["reply"]["calls"] == 2
    assert lm.meter.prompt_tokens == 2 * first.usage.prompt_tokens
    records = read_calls(tmp_path / "lm_calls.jsonl")
    assert [r["completion"] for r in records] == [first.text, again.text]
    assert records[0]["usage"]["prompt_tokens"] == first.usage.prompt_tokens
    assert records[0]["model"] == str(tiny_gguf) and records[0]["error"] is None
    await lm.aclose()


async def test_local_model_max_tokens_stop_and_concurrency(tiny_gguf: Path) -> None:
    lm = local_lm(tiny_gguf)
    long = await lm.complete(USER, max_tokens=12)
    short = await lm.complete(USER, max_tokens=2)
    assert len(long.text) > len(short.text) > 0 and len(long.text) >= 4
    assert long.text.startswith(short.text)  # greedy decoding, cut after two tokens

    stop = long.text[2:4]
    stopped = await lm.complete(USER, max_tokens=12, stop=[stop])
    assert stopped.text == long.text[:long.text.index(stop)]

    results = await asyncio.gather(*(lm.complete(USER, max_tokens=2, purpose="fan")
                                     for _ in range(5)))
    assert [r.text for r in results] == [short.text] * 5  # calls on one model take turns
    assert lm.meter.calls == 8 and lm.meter.failures == 0
    assert lm.meter.by_purpose["fan"]["calls"] == 5


async def test_local_model_fails_within_its_deadline(tiny_gguf: Path) -> None:
    lm = local_lm(tiny_gguf, max_tokens=4, deadline=0.001)  # less than loading the model takes
    started = time.monotonic()
    with pytest.raises(LMError, match="deadline") as caught:
        await lm.complete(USER)
    assert time.monotonic() - started < 2.0
    assert caught.value.reason == "it did not answer within 0.001 seconds"
    assert lm.meter.failures == 1


async def test_local_model_errors_are_lm_errors(tiny_gguf: Path, tmp_path: Path) -> None:
    too_long = [{"role": "user", "content": "hello world " * 200}]
    lm = local_lm(tiny_gguf, extra={"n_ctx": 64})
    with pytest.raises(LMError, match="exceed context window"):
        await lm.complete(too_long)
    assert lm.meter.failures == 1

    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x03\0\0\0" + b"not a model" * 10)
    lm = local_lm(broken)
    lm.log_to(tmp_path / "calls.jsonl")
    with pytest.raises(LMError, match="could not load the model"):
        await lm.complete(USER)
    (record,) = read_calls(tmp_path / "calls.jsonl")
    assert "could not load the model" in record["error"] and record["completion"] is None
    assert lm.meter.failures == 1
