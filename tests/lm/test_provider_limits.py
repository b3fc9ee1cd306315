"""Provider limits: requests in flight and per minute, per endpoint and model, held by the gate
every LM call goes through, and a 429's ``Retry-After`` slowing every caller of its key.

The end-to-end tests go through our real LM client (over aiohttp) to the loopback scripted server,
which counts the requests it is serving at once. Their assertions are counts and orders; where a
duration is checked it is a lower bound the gate guarantees (with a margin), never a speed. The
rules themselves are checked with hypothesis: on the bookkeeping with a fake clock, and on the
in-process gate with random callers that hold, give back and are cancelled.
"""

from __future__ import annotations

import asyncio
import io
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cogym_lab.cli.main import main
from cogym_lab.eval import run
from cogym_lab.eval.batch.limits import batch_limits, team_limits
from cogym_lab.eval.batch.manifest import read_run
from cogym_lab.lm import LMConfig, LMError, OpenAILM, make_lm
from cogym_lab.lm.base import waiting_reason
from cogym_lab.lm.gate_book import GateBook, Ticket
from cogym_lab.lm.limits import (
    Limit,
    LocalGate,
    ProviderLimits,
    current_gate,
    install_gate,
    limit_key,
    parse_limits,
)
from cogym_lab.teams import load_team
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.support.lm_scripts import TodoRolePlay

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

USER = [{"role": "user", "content": "Plan the day"}]
MARGIN = 0.3  # seconds taken off a lower bound: clocks and loopback, never a speed claim


def lm_for(server: ScriptedOpenAIServer, model: str = "scripted", **settings: Any) -> OpenAILM:
    values: dict[str, Any] = {"model": model, "base_url": server.base_url, "backoff": 0.01,
                              "max_retries": 2, "timeout": 30}
    values.update(settings)
    lm = make_lm(LMConfig(**values))
    assert isinstance(lm, OpenAILM)
    return lm


@pytest.fixture
def use_gate() -> Iterator[Any]:
    """Install a gate for one test; the process's own comes back afterwards."""
    installed: list[Any] = []

    def install(gate: Any) -> Any:
        installed.append(install_gate(gate))
        return gate

    yield install
    if installed:
        install_gate(installed[0])


async def answer_all(lms: list[OpenAILM]) -> list[str]:
    """Each LM's answer; then the LMs are closed, on the loop that made their clients."""
    try:
        replies = await asyncio.gather(*(lm.complete(USER) for lm in lms))
    finally:
        for lm in lms:
            await lm.aclose()
    return [reply.text for reply in replies]


# -- the rules ------------------------------------------------------------------------------------

def test_the_most_specific_rule_bounds_each_limit_and_names_its_pool():
    limits = ProviderLimits(default=Limit(max_in_flight=16),
                            rules={"gpt-4o": Limit(requests_per_minute=500),
                                   "http://10.0.0.5:8000/v1/": Limit(max_in_flight=32),
                                   "qwen @ http://10.0.0.5:8000/v1": Limit(max_in_flight=2)})
    gpt = limit_key("gpt-4o", None)
    assert gpt == "gpt-4o @ openai"
    assert limits.pool(gpt, "max_in_flight") == (gpt, 16)  # the default: a pool per key
    assert limits.pool(gpt, "requests_per_minute") == ("gpt-4o", 500)
    llama = limit_key("llama", "http://10.0.0.5:8000/v1/")
    assert limits.pool(llama, "max_in_flight") == ("http://10.0.0.5:8000/v1", 32)
    assert limits.pool(llama, "requests_per_minute") is None
    qwen = limit_key("qwen", "http://10.0.0.5:8000/v1")
    assert limits.pool(qwen, "max_in_flight") == (qwen, 2)
    assert limit_key("/models/x.gguf", None, "local") == "/models/x.gguf @ local"
    assert ProviderLimits().is_empty and not limits.is_empty


def test_command_line_values_become_rules_and_bad_ones_say_what_is_expected():
    limits = parse_limits(["8", "gpt-4o=4", "http://h:1/v1=2"], ["gpt-4o=500"])
    assert limits.default == Limit(max_in_flight=8)
    assert limits.rules == {"gpt-4o": Limit(max_in_flight=4, requests_per_minute=500),
                            "http://h:1/v1": Limit(max_in_flight=2)}
    for bad in ("0", "x", "gpt-4o=", "=3", "gpt=-1"):
        with pytest.raises(ValueError, match=r"\[KEY=\]N"):
            parse_limits([bad])


def test_later_limits_win_field_by_field_and_the_run_wins_over_the_team_file():
    base = ProviderLimits(default=Limit(max_in_flight=4), rules={"m": Limit(max_in_flight=2)})
    over = ProviderLimits(default=Limit(requests_per_minute=60),
                          rules={"m": Limit(requests_per_minute=10)}, rate_window=1.0)
    merged = base.merged(over)
    assert merged.default == Limit(max_in_flight=4, requests_per_minute=60)
    assert merged.rules["m"] == Limit(max_in_flight=2, requests_per_minute=10)
    assert merged.rate_window == 1.0 and merged.lease == base.lease

    agent = LMConfig(model="m", base_url="http://h/v1")
    user = LMConfig(model="u", base_url="http://h/v1")
    tables = [(agent, {"max_in_flight": 3, "requests_per_minute": 100}),
              (agent, {"max_in_flight": 2}), (user, {"model": "u"})]
    key = limit_key("m", "http://h/v1")
    assert team_limits(tables).rules == {key: Limit(max_in_flight=2, requests_per_minute=100)}
    # the run bounds m's requests in flight: the team file's number for them is dropped
    combined = batch_limits(tables, {"rules": {"m": {"max_in_flight": 6}}})
    assert combined.pool(key, "max_in_flight") == ("m", 6)
    assert combined.pool(key, "requests_per_minute") == (key, 100)
    with pytest.raises(ValueError, match="max_in_flight"):
        team_limits([(agent, {"max_in_flight": 0})])


# -- the bookkeeping, with a fake clock ------------------------------------------------------------

KEYS = ["a @ x", "b @ x", "c @ y"]
OPERATIONS = st.lists(st.one_of(
    st.tuples(st.just("take"), st.integers(0, 2)),
    st.tuples(st.just("give"), st.integers(0, 50)),
    st.tuples(st.just("slow"), st.integers(0, 2), st.floats(0.1, 5.0)),
    st.tuples(st.just("tick"), st.floats(0.01, 4.0))), max_size=120)


@settings(max_examples=150, deadline=None)
@given(endpoint_flight=st.integers(1, 3), default_flight=st.integers(1, 3),
       rate=st.integers(1, 4), operations=OPERATIONS)
def test_no_sequence_of_takes_give_backs_and_slowdowns_breaks_a_limit(
        endpoint_flight, default_flight, rate, operations):
    window = 10.0
    limits = ProviderLimits(default=Limit(max_in_flight=default_flight),
                            rules={"x": Limit(max_in_flight=endpoint_flight),
                                   "a": Limit(requests_per_minute=rate)}, rate_window=window)
    caps = {"x": endpoint_flight, "c @ y": default_flight}
    book = GateBook(limits)
    now = 0.0
    held: list[Ticket] = []
    starts_of_a: list[float] = []
    slowed: dict[str, float] = {}
    for operation in operations:
        if operation[0] == "take":
            key = KEYS[operation[1]]
            got = book.take(key, now)
            if isinstance(got, Ticket):
                assert now >= slowed.get(key, 0.0), "a request started during a slowdown"
                held.append(got)
                if key.startswith("a "):
                    starts_of_a.append(now)
            elif got is not None:
                assert got > 0
        elif operation[0] == "give" and held:
            book.give_back(held.pop(operation[1] % len(held)))
        elif operation[0] == "slow":
            key = KEYS[operation[1]]
            book.slow_down(key, operation[2], now)
            slowed[key] = max(slowed.get(key, 0.0), now + operation[2])
        elif operation[0] == "tick":
            now += operation[1]
        for pool, cap in caps.items():
            holding = sum(1 for ticket in held if ticket.flight_pool == pool)
            assert holding <= cap and book.in_flight(pool) == holding
        recent = [t for t in starts_of_a if t > now - window]
        assert len(recent) <= rate
    for ticket in held:
        book.give_back(ticket)
    assert all(book.in_flight(pool) == 0 for pool in caps)


# -- the in-process gate, with random callers ---------------------------------------------------

CALLERS = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 5),
                             st.one_of(st.none(), st.integers(0, 6))), min_size=1, max_size=25)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(endpoint_flight=st.integers(1, 3), default_flight=st.integers(1, 2), callers=CALLERS,
       slow_key=st.one_of(st.none(), st.integers(0, 2)))
def test_callers_that_hold_give_back_and_give_up_never_exceed_the_limit(
        endpoint_flight, default_flight, callers, slow_key):
    limits = ProviderLimits(default=Limit(max_in_flight=default_flight),
                            rules={"x": Limit(max_in_flight=endpoint_flight)})
    caps = {"x": endpoint_flight, "c @ y": default_flight}
    gate = LocalGate(limits)
    holding = dict.fromkeys(caps, 0)
    most = dict(holding)
    entered: list[int] = []

    def pool_of(key: str) -> str:
        return "c @ y" if key == "c @ y" else "x"

    async def caller(number: int, key: str, hold: int) -> None:
        async with gate.slot(key):
            pool = pool_of(key)
            holding[pool] += 1
            most[pool] = max(most[pool], holding[pool])
            entered.append(number)
            try:
                for _ in range(hold):
                    await asyncio.sleep(0)
            finally:
                holding[pool] -= 1

    async def scenario() -> None:
        if slow_key is not None:
            gate.slowdown(KEYS[slow_key], 0.005)
        tasks = [asyncio.create_task(caller(n, KEYS[k], hold))
                 for n, (k, hold, _) in enumerate(callers)]
        for step in range(7):
            for task, (_, _, cancel_at) in zip(tasks, callers, strict=True):
                if cancel_at == step:
                    task.cancel()
            await asyncio.sleep(0)
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(scenario())
    assert all(most[pool] <= cap for pool, cap in caps.items()), (most, caps)
    never_cancelled = {n for n, (_, _, cancel_at) in enumerate(callers) if cancel_at is None}
    assert never_cancelled <= set(entered)  # nobody left waiting for ever
    states = gate.states()
    assert all(state.in_flight == 0 and state.waiting == 0 for state in states), states


# -- through the real client and server ---------------------------------------------------------

async def test_max_in_flight_holds_across_many_lms(use_gate):
    gate = use_gate(LocalGate(ProviderLimits(default=Limit(max_in_flight=3))))
    with ScriptedOpenAIServer(responder=lambda body: "fine", latency=0.1) as server:
        texts = await answer_all([lm_for(server) for _ in range(24)])
        assert texts == ["fine"] * 24
        assert 1 <= server.max_in_flight <= 3
        assert len(server.chat_requests) == 24  # each call once: waiting is not failing
    assert all(state.in_flight == 0 for state in gate.states())


def test_max_in_flight_holds_across_threads_with_their_own_event_loops(use_gate):
    use_gate(LocalGate(ProviderLimits(rules={"scripted": Limit(max_in_flight=2)})))
    results: dict[int, list[str]] = {}
    with ScriptedOpenAIServer(responder=lambda body: "fine", latency=0.1) as server:
        def batch(number: int) -> None:
            results[number] = asyncio.run(answer_all([lm_for(server) for _ in range(8)]))

        threads = [threading.Thread(target=batch, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert results == {0: ["fine"] * 8, 1: ["fine"] * 8}
        assert 1 <= server.max_in_flight <= 2


async def test_requests_per_window_hold(use_gate):
    window, rate = 1.5, 3
    use_gate(LocalGate(ProviderLimits(default=Limit(requests_per_minute=rate),
                                      rate_window=window)))
    with ScriptedOpenAIServer(responder=lambda body: "fine") as server:
        assert await answer_all([lm_for(server) for _ in range(7)]) == ["fine"] * 7
        arrived = sorted(request.received_at for request in server.chat_requests)
    assert len(arrived) == 7
    # no `rate` + 1 requests within one window: the (rate)th after any one is a window later
    for first, later in zip(arrived, arrived[rate:], strict=False):
        assert later - first >= window - MARGIN


async def test_a_429_with_retry_after_slows_every_caller_of_its_key(use_gate):
    gate = use_gate(LocalGate())  # no limits: only the slowdown
    wait = 1.5
    with ScriptedOpenAIServer(responder=lambda body: f"{body['model']} answers") as server:
        server.add(Reply(status=429, headers={"Retry-After": str(wait)}),
                   when=lambda body: body["model"] == "busy")
        first = asyncio.create_task(lm_for(server, "busy").complete(USER))
        async with asyncio.timeout(20):
            while not any(state.slowed_for > 0 for state in gate.states()):  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        (slowed,) = [state for state in gate.states() if state.slowed_for > 0]
        assert slowed.name == limit_key("busy", server.base_url)
        assert "slowed" in gate.describe()
        others = [lm_for(server, "busy") for _ in range(3)]
        free = lm_for(server, "free")
        calls = [asyncio.create_task(lm.complete(USER)) for lm in [free, *others]]
        replies = await asyncio.gather(first, *calls)
        requests = server.chat_requests
    assert [reply.text for reply in replies] == ["busy answers", "free answers",
                                                 *["busy answers"] * 3]
    assert [reply.attempts for reply in replies[1:]] == [1, 1, 1, 1]  # they waited, not retried
    refused_at = requests[0].received_at
    busy_later = [r.received_at for r in requests[1:] if r.body["model"] == "busy"]
    free_at = next(r.received_at for r in requests if r.body["model"] == "free")
    assert len(busy_later) == 4  # the first caller's retry and the three others
    assert all(at - refused_at >= wait - MARGIN for at in busy_later)
    assert free_at < min(busy_later)  # another key is not slowed down


async def test_the_deadline_wins_over_waiting_for_a_slot(use_gate):
    use_gate(LocalGate(ProviderLimits(default=Limit(max_in_flight=1))))
    with ScriptedOpenAIServer(responder=lambda body: "slow answer", latency=3.0) as server:
        holder = asyncio.create_task(lm_for(server, deadline=60).complete(USER))
        async with asyncio.timeout(20):
            while server.in_flight < 1:  # noqa: ASYNC110 - the server's thread counts
                await asyncio.sleep(0.01)
        waiter = lm_for(server, deadline=0.5, max_retries=3)
        with pytest.raises(LMError) as raised:
            await waiter.complete(USER)
        assert not holder.done()  # it failed while the slot was still taken
        assert raised.value.reason == waiting_reason(0.5)
        assert "no request slot" in str(raised.value) and "0 attempts made" in str(raised.value)
        assert waiter.meter.failures == 1
        assert len(server.chat_requests) == 1  # the waiter never sent anything
        assert (await holder).text == "slow answer"


async def test_the_default_gate_lets_everything_through(use_gate):
    use_gate(None)
    gate = current_gate()
    assert isinstance(gate, LocalGate) and gate.limits.is_empty
    with ScriptedOpenAIServer(responder=lambda body: "fine", latency=0.3) as server:
        assert await answer_all([lm_for(server) for _ in range(6)]) == ["fine"] * 6
        assert server.max_in_flight >= 2  # nothing held them back
    assert gate.describe() == ""


# -- batch runs ----------------------------------------------------------------------------------

MODELS = {"agent": "agent-lm", "user": "user-lm"}


def test_a_batch_run_holds_its_limits_and_shows_them_in_the_progress_bar(tmp_path):
    team = load_team("collaborative")
    agent = team.members["agent"]
    team = team.model_copy(update={"members": {
        **team.members, "agent": agent.model_copy(update={"lm": {**agent.lm,
                                                                 "max_in_flight": 1}})}})
    bar = io.StringIO()
    with ScriptedOpenAIServer(responder=TodoRolePlay(), latency=0.05) as server:
        summary = run("todo", team, "0:3", out=tmp_path / "run", models=MODELS,
                      base_urls=server.base_url, idle_seconds=1, timeout=120, concurrency=3,
                      progress=bar, limits={"rules": {"user-lm": {"max_in_flight": 1}}})
        most, endpoint = server.max_in_flight, server.base_url.rstrip("/")
    assert summary.counts.finished == 3
    assert 1 <= most <= 2  # one agent request and one user request at a time
    assert "/1 in flight" in bar.getvalue()
    assert current_gate().limits.is_empty  # the run's limits end with it
    # run.json records the limits the run held: the team file's rule and the run's own
    recorded = read_run(tmp_path / "run").invocations[-1].limits
    assert recorded.pool(f"agent-lm @ {endpoint}", "max_in_flight")[1] == 1
    assert recorded.pool("user-lm @ anywhere", "max_in_flight") == ("user-lm", 1)


def test_the_command_line_takes_limits(tmp_path):
    with ScriptedOpenAIServer(responder=TodoRolePlay(), latency=0.05) as server:
        result = CliRunner().invoke(main, [
            "eval", "run", "--task", "todo", "--instances", "0:2", "--concurrency", "2",
            "--out", str(tmp_path / "run"), "--model", "agent=agent-lm",
            "--model", "user=user-lm", "--base-url", server.base_url, "--idle-seconds", "1",
            "--max-in-flight", f"{server.base_url}=1", "--rpm", "agent-lm=100000",
            "--no-progress"])
        assert result.exit_code == 0, result.output
        assert server.max_in_flight == 1  # the endpoint's one slot, whichever model asks
    bad = CliRunner().invoke(main, ["eval", "run", "--task", "todo", "--out",
                                    str(tmp_path / "bad"), "--max-in-flight", "agent-lm=0"])
    assert bad.exit_code == 2 and "[KEY=]N" in bad.output


# -- the cluster-wide gate on a real local Ray runtime ------------------------------------------

@pytest.fixture(scope="module")
def ray_runtime() -> Iterator[Any]:
    """A local Ray runtime of one CPU, for this module (one a test before left running is used
    as it is: the actors here ask for no CPU). Token authentication is said off outright: left
    unsaid, a token another run left in the home folder turns it on for this process for good."""
    import ray

    started = not ray.is_initialized()
    if started:
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def _caller_class() -> type:
    """An actor that makes LM calls through the named gate (defined here, so Ray ships it by
    value: the workers need not import this test module)."""

    class Caller:
        def __init__(self, gate_name: str) -> None:
            from cogym_lab.lm.limits import install_gate
            from cogym_lab.lm.ray_gate import RayGate

            install_gate(RayGate(gate_name))

        async def answer(self, base_url: str, count: int) -> list[str]:
            from cogym_lab.lm import LMConfig, make_lm

            lms = [make_lm(LMConfig(model="scripted", base_url=base_url, timeout=60))
                   for _ in range(count)]
            replies = await asyncio.gather(*(lm.complete(USER) for lm in lms))
            return [reply.text for reply in replies]

    return Caller


@pytest.mark.timeout(300)
def test_the_ray_gate_holds_a_limit_across_two_actors(ray_runtime):
    from cogym_lab.lm.ray_gate import RayGate

    ray = ray_runtime
    gate = RayGate.create("cogym-test-gate", ProviderLimits(default=Limit(max_in_flight=2)))
    with ScriptedOpenAIServer(responder=lambda body: "fine", latency=0.2) as server:
        caller = ray.remote(num_cpus=0)(_caller_class())
        actors = [caller.remote("cogym-test-gate") for _ in range(2)]
        answers = ray.get([actor.answer.remote(server.base_url, 5) for actor in actors],
                          timeout=240)
        assert answers == [["fine"] * 5] * 2
        assert 1 <= server.max_in_flight <= 2
        key = limit_key("scripted", server.base_url)
    gate.slowdown(key, 30)  # not awaited: the actor may take it after a call made later
    started = time.monotonic()
    while True:
        (row,) = [state for state in asyncio.run(gate.fetch_states()) if state.name == key]
        if row.slowed_for > 0 or time.monotonic() - started > 60:
            break
        time.sleep(0.05)
    assert (row.in_flight, row.max_in_flight, row.waiting) == (0, 2, 0) and row.slowed_for > 0
    started = time.monotonic()
    while not gate.states() and time.monotonic() - started < 30:  # the bar's non-blocking view
        time.sleep(0.05)
    assert gate.states()

    async def give_up_waiting() -> Any:
        """Two slots held; a third caller gives up (its deadline): the actor drops its wait."""
        other = "other @ nowhere"
        async with gate.slot(other), gate.slot(other):
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.5), gate.slot(other):
                    pass
        async with asyncio.timeout(60), gate.slot(other):
            pass
        # give-backs are not awaited: the actor counts them a moment later
        for _ in range(600):
            (row,) = [state for state in await gate.fetch_states() if state.name == other]
            if (row.in_flight, row.waiting) == (0, 0):
                break
            await asyncio.sleep(0.05)
        return row

    other_row = asyncio.run(give_up_waiting())
    assert (other_row.in_flight, other_row.waiting) == (0, 0)  # the abandoned wait held nothing
    gate.kill()
