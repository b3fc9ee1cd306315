"""No accepted action is dropped: each one is applied and logged, or its sender is refused.

An action a person sends is published on the session's step channel and applied later by the
env node. Here the session ends at the very moment actions arrive (a FINISH by another member, a
stop as ``DELETE`` makes, a step limit, an idle end, a log that fails, an interruption), on the
in-process bus and on a real Redis server (``bus_factory``), with the sends and the end in random
interleavings (hypothesis). Every action must then either be in ``events.jsonl`` with the seq
its sender was told, or have been answered refused (``interrupted`` for an interrupted session),
never both, never neither; and a refused action is never counted as a step.

The sender's side is the host's own :class:`~cogym_lab.runtime.settlements.Settlements`, used
as :meth:`SessionHost.submit` uses it; the host-level tests further down run real hosted
sessions, and ``test_settlements_server.py`` the real Jupyter server.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from cogym_lab.bus import Bus, MemoryBus
from cogym_lab.bus.base import BusError
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import Event, EventType, StepRequest, TeamMember, step_channel
from cogym_lab.core.settlements import (
    INTERRUPTED,
    Settlement,
    StepsClosed,
    ending_words,
    settled_channel,
)
from cogym_lab.nodes import EnvNode
from cogym_lab.nodes.env_node import LOG_FAILED
from cogym_lab.nodes.results import ResultsWriter, read_events
from cogym_lab.runtime import hosting
from cogym_lab.runtime.hosting import HostingError, SessionHost
from cogym_lab.runtime.settlements import Settlements
from tests.support.buses import BusFactory
from tests.support.notes_env import NotesEnv

SENDERS = ("p1", "p2")
FINISHER = "p3"
TEAM = [*(TeamMember(role=role, kind="person") for role in (*SENDERS, FINISHER)),
        TeamMember(role="agent", kind="agent")]
ENDINGS = ("finish", "stop", "step_limit", "idle", "log_failed", "interrupt")
EXAMPLES = 40  # per bus; each example is a whole session


@dataclass
class Plan:
    """One race: who sends when, and how and when the session ends."""

    ending: str
    sends: list[tuple[int, int]]  # (sender index, pause before it: 0 none, 1 a yield, 2 2 ms)
    end_at: int  # finish / stop / interrupt: after this many sends
    limit: int  # step_limit: p1's limit
    fail_at: int  # log_failed: the seq of the first event the log cannot take
    settle_first: int = 0  # the first sends wait for their answer before the next goes

    def ends_itself(self) -> bool:
        """Whether the session ends on its own once every send went out (else it is stopped)."""
        p1_sends = sum(1 for sender, _ in self.sends if SENDERS[sender] == "p1")
        return (self.ending in ("finish", "idle")
                or (self.ending == "step_limit" and p1_sends >= max(self.limit, 1))
                or (self.ending == "log_failed" and self.fail_at <= len(self.sends) + 1))


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    sends = draw(st.lists(st.tuples(st.integers(0, len(SENDERS) - 1), st.integers(0, 2)),
                          min_size=1, max_size=40))
    return Plan(ending=draw(st.sampled_from(ENDINGS)), sends=sends,
                end_at=draw(st.integers(0, len(sends))), limit=draw(st.integers(0, 20)),
                fail_at=draw(st.integers(2, 40)), settle_first=draw(st.integers(0, 3)))


@dataclass
class Sent:
    request: StepRequest
    answer: asyncio.Future[Settlement] | None  # None: refused before it was published
    refused_at_once: str | None = None


@dataclass
class Race:
    """An env node on one bus object, its senders on another, as a host and its session."""

    env_bus: Bus
    sender_bus: Bus
    directory: Path
    plan: Plan
    session_id: str = field(default_factory=lambda: f"race-{uuid.uuid4().hex[:12]}")
    sent: list[Sent] = field(default_factory=list)
    unlogged: list[Event] = field(default_factory=list)  # what the failing log refused
    #: When set, logging a FINISH waits for it: the node is held right as the session ends.
    hold_finish: asyncio.Event | None = None

    async def start(self) -> None:
        plan = self.plan
        limits = {"p1": plan.limit} if plan.ending == "step_limit" else {}
        self.coordinator = Coordinator(NotesEnv(), TEAM, session_id=self.session_id,
                                       step_limits=limits, max_events=10_000,
                                       max_idle_ticks=0 if plan.ending == "idle" else 3)
        self.writer = writer = ResultsWriter(self.directory)

        async def record(event: Event) -> None:
            if plan.ending == "log_failed" and event.seq >= plan.fail_at:
                self.unlogged.append(event)
                raise OSError("No space left on device")
            if self.hold_finish is not None and event.type == "finish":
                await self.hold_finish.wait()
            writer.append_event(event)

        self.node = EnvNode(self.env_bus, self.coordinator, join_timeout=10,
                            idle_seconds=0.01 if plan.ending == "idle" else 3600,
                            recorders=[record])
        self.settlements = Settlements(self.session_id)
        await self.settlements.start(self.sender_bus)
        for member in TEAM:
            await self.sender_bus.publish(step_channel(self.session_id),
                                          StepRequest(role=member.role, kind="join"))
        self.run = asyncio.create_task(self.node.run())
        await asyncio.wait_for(self.node.started.wait(), 30)

    async def send(self, role: str, action: Any) -> None:
        """What ``SessionHost.submit`` does: refuse once the env reads no more, else expect
        the answer and publish."""
        request = StepRequest(role=role, action=action)
        if self.settlements.closed is not None:
            self.sent.append(Sent(request, None, self.settlements.closed.message))
            return
        answer = self.settlements.expect(request)
        await self.sender_bus.publish(step_channel(self.session_id), request)
        self.sent.append(Sent(request, answer))

    async def end(self) -> None:
        match self.plan.ending:
            case "finish":
                await self.send(FINISHER, "FINISH()")
            case "stop":
                await self.node.stop("ended by the user")
            case "interrupt":
                await self.node.stop("the server stopped", end=False)
            case "idle":  # nobody acts until the idle end has come (it may have already)
                async with asyncio.timeout(10):
                    while not self.coordinator.done:  # noqa: ASYNC110 - the coordinator has no event for it
                        await asyncio.sleep(0.005)

    async def play(self) -> None:
        for index, (sender, pause) in enumerate(self.plan.sends):
            if index == self.plan.end_at:
                await self.end()
            if pause == 1:
                await asyncio.sleep(0)
            elif pause == 2:
                await asyncio.sleep(0.002)
            await self.send(SENDERS[sender], f'JOT(note="n{index}")')
            answer = self.sent[-1].answer
            if index < self.plan.settle_first and answer is not None:
                await asyncio.wait_for(answer, 30)
        if self.plan.end_at == len(self.plan.sends):
            await self.end()
        if not self.plan.ends_itself() and self.plan.ending != "interrupt":
            await self.node.stop("ended by the user")  # the race is over: end it anyway
        await asyncio.wait_for(self.run, 30)
        # The node's own last word arrives (on Redis, a moment after its run is over).
        async with asyncio.timeout(10):
            while self.settlements.closed is None:  # noqa: ASYNC110 - set by the host's listener
                await asyncio.sleep(0.005)
        self.closed_by_node = self.settlements.closed
        # What the host does when the session's run is over.
        self.settlements.close(StepsClosed(end_reason="late", message="closed by the test"))
        await self.settlements.stop()
        self.writer.close()


async def play(bus_factory: BusFactory, folder: Path, plan: Plan) -> Race:
    race = Race(await bus_factory(), await bus_factory(), folder / uuid.uuid4().hex, plan)
    await race.start()
    await race.play()
    return race


def check_every_action_is_accounted_for(race: Race) -> Counter[str]:
    """The property: each action is in the log as its sender was told, or was refused."""
    logged = {event.request_id: event for event in read_events(race.directory)
              if event.request_id}
    coordinator = race.coordinator
    end_reason = coordinator.end_reason
    end = next((event for event in read_events(race.directory) if event.type == "end"), None)
    if race.node.log_failure:
        words = ending_words(LOG_FAILED)
    else:
        words = ending_words(end_reason, end.info if end else None)
    assert race.closed_by_node.message != "closed by the test"
    outcomes: Counter[str] = Counter()
    applied: Counter[str] = Counter()
    for sent in race.sent:
        request = sent.request
        if sent.answer is None:  # refused before it was published: never reached the env
            assert request.id not in logged
            assert sent.refused_at_once == race.closed_by_node.message
            outcomes["refused at once"] += 1
            continue
        assert sent.answer.done(), f"{request.action} was never answered"
        answer = sent.answer.result()
        assert (answer.request_id, answer.role) == (request.id, request.role)
        outcomes[answer.status] += 1
        if answer.applied:
            event = logged.get(request.id)
            assert event is not None, f"{request.action} was said to be applied, not logged"
            assert event.seq == answer.seq and event.actor == request.role
            if event.status == "ok" and request.role in SENDERS:
                applied[request.role] += 1
            continue
        assert request.id not in logged, f"{request.action} was logged, but refused"
        if answer.status == "interrupted":
            assert race.plan.ending == "interrupt" and not coordinator.done
            assert answer.message == INTERRUPTED
        else:
            assert answer.status == "refused"
            assert answer.message == (
                f"The session ended before this action was applied (it ended: {words}).")
    # A refused step is never counted: the counts are exactly the applied JOTs. (After a log
    # failure the coordinator did take the step whose event the log lost; the session fails
    # there, its log ends before that step, and its sender was told it was not applied.)
    for role in SENDERS:
        lost = 1 if race.node.log_failure and any(
            e.actor == role and e.seq > race.node.last_logged_seq for e in race.unlogged) else 0
        assert coordinator.step_counts[role] == applied[role] + lost, role
    return outcomes


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(plan=plans())
async def test_every_action_racing_the_end_is_applied_or_refused(bus_factory: BusFactory,
                                                                 tmp_path: Path,
                                                                 plan: Plan) -> None:
    race = await play(bus_factory, tmp_path, plan)
    check_every_action_is_accounted_for(race)


@pytest.mark.parametrize("ending", ENDINGS)
async def test_many_actions_at_the_last_moment(bus_factory: BusFactory, tmp_path: Path,
                                               ending: str) -> None:
    """Five actions applied one by one, then thirty-five sent at once with the end among them:
    some are applied and some refused, each one answered."""
    sends = [(index % 2, 0) for index in range(40)]
    plan = Plan(ending=ending, sends=sends, end_at=20, limit=12, fail_at=15, settle_first=5)
    race = await play(bus_factory, tmp_path, plan)
    outcomes = check_every_action_is_accounted_for(race)
    if ending != "idle":  # an idle end may come first, on a slow machine
        assert outcomes["applied"] >= 5
    assert sum(outcomes.values()) == len(race.sent)
    if ending == "interrupt":
        assert outcomes["refused"] == 0 and outcomes["interrupted"] >= 1
    else:
        assert outcomes["refused"] + outcomes["refused at once"] >= 1


async def test_an_ended_node_refuses_what_is_still_queued(bus_factory: BusFactory,
                                                         tmp_path: Path) -> None:
    """Steps that wait on the step channel when the session ends are refused by the env node
    itself, each on its own, before its last word."""
    race = Race(await bus_factory(), await bus_factory(), tmp_path,
                Plan(ending="finish", sends=[], end_at=0, limit=0, fail_at=0))
    race.hold_finish = asyncio.Event()
    await race.start()
    answers = await race.sender_bus.subscribe(settled_channel(race.session_id))
    burst = [StepRequest(role=FINISHER, action="FINISH()"),
             *(StepRequest(role="p1", action=f'JOT(note="late {n}")') for n in range(5))]
    await race.sender_bus.publish(step_channel(race.session_id), burst[0])
    for request in burst[1:]:  # queued behind the FINISH the node is applying
        await race.sender_bus.publish(step_channel(race.session_id), request)
    queue = race.node._subscription._queue  # type: ignore[union-attr]
    async with asyncio.timeout(10):  # on Redis: until the bus's reader handed them over
        while queue.qsize() < 5:  # noqa: ASYNC110 - the bus's queue
            await asyncio.sleep(0.005)
    race.hold_finish.set()
    await asyncio.wait_for(race.run, 30)
    seen: list[dict[str, Any]] = []
    async with asyncio.timeout(10):
        while not seen or seen[-1]["kind"] != "closed":
            message = await answers.get(10)
            assert message is not None
            seen.append(message)
    await answers.close()
    await race.settlements.stop()
    race.writer.close()
    finish, *late, closed = seen
    assert finish["status"] == "applied" and finish["request_id"] == burst[0].id
    assert [m["request_id"] for m in late] == [r.id for r in burst[1:]]
    assert {m["status"] for m in late} == {"refused"}
    assert {m["message"] for m in late} == {
        "The session ended before this action was applied (it ended: finished by p3)."}
    assert closed["end_reason"] == "finished" and not closed["interrupted"]
    assert [e.type for e in read_events(race.directory)][-2:] == ["finish", "end"]


async def test_an_applied_action_the_env_refused_is_logged_with_its_error(
        bus_factory: BusFactory, tmp_path: Path) -> None:
    race = Race(await bus_factory(), await bus_factory(), tmp_path,
                Plan(ending="stop", sends=[], end_at=0, limit=0, fail_at=0))
    await race.start()
    await race.send("p1", "NO_SUCH_ACTION()")
    answer = await asyncio.wait_for(race.sent[-1].answer, 10)  # type: ignore[arg-type]
    await race.node.stop("ended by the user")
    await asyncio.wait_for(race.run, 30)
    await race.settlements.stop()
    race.writer.close()
    assert answer.status == "applied" and answer.error and "NO_SUCH_ACTION" in answer.error
    (event,) = [e for e in read_events(race.directory) if e.request_id == race.sent[-1].request.id]
    assert event.seq == answer.seq and event.type == "error"


class LosesAnswers(MemoryBus):
    """An in-process bus that fails to carry the env node's answers of applied actions."""

    async def publish_many(self, items: Any) -> None:
        if any(channel.endswith("/settled") and getattr(message, "status", None) == "applied"
               for channel, message in items):
            raise BusError("the transport went away")
        await super().publish_many(items)


async def test_an_applied_action_whose_answer_was_lost_is_still_told_applied(
        tmp_path: Path) -> None:
    """The bus fails as the node answers an applied action (the node's run fails with it): when
    the run is over, the sender is told what the node knew, applied, not refused."""
    bus = LosesAnswers()
    race = Race(bus, bus, tmp_path, Plan(ending="stop", sends=[], end_at=0, limit=0, fail_at=0))
    await race.start()
    await race.send("p1", 'JOT(note="kept")')
    with pytest.raises(BusError):
        await asyncio.wait_for(race.run, 30)
    sent = race.sent[-1]
    assert sent.answer is not None and not sent.answer.done()
    race.settlements.close(StepsClosed(message="the run is over"), known=race.node.unsent)
    answer = sent.answer.result()
    (event,) = [e for e in read_events(race.directory) if e.request_id == sent.request.id]
    assert (answer.status, answer.seq) == ("applied", event.seq)
    await race.settlements.stop()
    race.writer.close()


# -- hosted sessions ---------------------------------------------------------------------------


@pytest.fixture(params=["memory", "redis"])
def redis_url(request: pytest.FixtureRequest) -> str | None:
    """Each host-level test on the in-process bus and on a real Redis server."""
    if request.param == "memory":
        return None
    return request.getfixturevalue("redis_server").url


def host_for(tmp_path: Path, redis_url: str | None, unattended: float | None = None
             ) -> SessionHost:
    return SessionHost(tmp_path / "results", redis_url=redis_url, team_paths=False,
                       build_in_thread=False, unattended_seconds=unattended,
                       finished_session_ttl=None)


async def send_all(host: SessionHost, session_id: str, count: int, *, role: str = "user",
                   pauses: list[float] | None = None) -> list[tuple[str, Any]]:
    """``count`` checklist items added by ``role`` (task actions: each counts as a step), each
    sent as soon as the previous one was published; each answer: ("applied", (request_id,
    seq)), ("refused", message), or ("refused at once", message) for one the host refused
    before publishing it."""

    async def one(index: int) -> tuple[str, Any]:
        try:
            submitted = await host.submit(session_id, role, {
                "name": "ADD_ITEM", "args": {"text": f"{role} item {index}"}})
        except HostingError as error:
            assert error.status == 409
            return "refused at once", error.message
        answer = await submitted.settled(30)
        assert answer is not None, "no answer"
        if answer.applied:
            return "applied", (submitted.request.id, answer.seq)
        return answer.status, answer.message

    tasks = []
    for index in range(count):
        tasks.append(asyncio.create_task(one(index)))
        await asyncio.sleep(pauses[index] if pauses else 0)
    return await asyncio.gather(*tasks)


def check_hosted(host: SessionHost, session_id: str, answers: list[tuple[str, Any]],
                 words: str, role: str = "user") -> Counter[str]:
    directory = host.results_dir / session_id
    logged = {e.request_id: e.seq for e in read_events(directory) if e.request_id}
    counts: Counter[str] = Counter()
    for status, detail in answers:
        counts[status] += 1
        if status == "applied":
            request_id, seq = detail
            assert logged.get(request_id) == seq
        else:
            assert status in ("refused", "refused at once")
            assert words in detail, detail
    # Nothing in the log that its sender was not told was applied, and nothing else counted.
    told = {detail[0] for status, detail in answers if status == "applied"}
    assert {e.request_id for e in read_events(directory) if e.actor == role} == told
    final = json.loads((directory / "session.json").read_text(encoding="utf-8"))
    assert final["step_counts"][role] == len(told)
    return counts


async def wait_ended(hosted: Any) -> None:
    if hosted.runner is not None:
        await asyncio.wait_for(asyncio.wait({hosted.runner}), 60)


async def test_a_finish_among_many_hosted_actions(tmp_path: Path, redis_url: str | None) -> None:
    host = host_for(tmp_path, redis_url)
    hosted = await host.create("todo", team="example", people=["user", "agent"],
                               idle_seconds=600)
    session_id = hosted.session_id
    sending = asyncio.create_task(send_all(host, session_id, 60))
    await asyncio.sleep(0.01)
    finish = await host.submit(session_id, "agent", "FINISH()")
    answers = await sending
    assert (await finish.settled(30)).applied  # type: ignore[union-attr]
    await wait_ended(hosted)
    counts = check_hosted(host, session_id, answers, "finished by agent")
    assert counts["applied"] >= 1 and sum(counts.values()) == 60


async def test_a_delete_among_many_hosted_actions(tmp_path: Path, redis_url: str | None) -> None:
    host = host_for(tmp_path, redis_url)
    hosted = await host.create("todo", team="example", people=["user", "agent"],
                               idle_seconds=600)
    # Spaced out over about 0.6 s, so the delete lands among them however fast the host
    # applies them (back to back, a quick host applied all 60 before the delete).
    sending = asyncio.create_task(send_all(host, hosted.session_id, 60, pauses=[0.01] * 60))
    await asyncio.sleep(0.05)
    await host.end(hosted.session_id)  # what DELETE does
    answers = await sending
    await wait_ended(hosted)
    counts = check_hosted(host, hosted.session_id, answers, "ended by the user")
    assert counts["refused"] + counts["refused at once"] >= 1


async def test_the_step_limit_among_many_hosted_actions(tmp_path: Path,
                                                        redis_url: str | None) -> None:
    host = host_for(tmp_path, redis_url)
    hosted = await host.create("todo", team="example", people=["user", "agent"],
                               idle_seconds=600, step_limits={"user": 7})
    answers = await send_all(host, hosted.session_id, 30)
    await wait_ended(hosted)
    counts = check_hosted(host, hosted.session_id, answers, "user reached its step limit")
    assert hosted.end_reason == "step_limit"
    assert counts["applied"] == 7 and counts["refused"] + counts["refused at once"] == 23


async def test_an_idle_end_and_the_unattended_end_among_hosted_actions(
        tmp_path: Path, redis_url: str | None) -> None:
    """Actions sent further and further apart, then a burst: the session ends by idleness (no
    one acted for two ticks) or, with no panel open, by its unattended limit (an action
    restarts it), in the longest pause, and the burst comes right after the end."""
    host = host_for(tmp_path, redis_url, unattended=0.3)
    idle = await host.create("todo", team="example", people=["user", "agent"],
                             idle_seconds=0.1, max_idle_ticks=1)
    graced = await host.create("todo", team="example", people=["user", "agent"],
                               idle_seconds=600)
    pauses = [0.01] * 6 + [0.05, 0.1, 0.2, 0.8] + [0.0] * 8
    idle_answers, graced_answers = await asyncio.gather(
        send_all(host, idle.session_id, len(pauses), pauses=pauses),
        send_all(host, graced.session_id, len(pauses), pauses=pauses))
    await asyncio.gather(wait_ended(idle), wait_ended(graced))
    assert idle.end_reason == "idle"
    assert graced.end_reason is not None
    assert graced.end_reason.startswith("no one was at the session")
    for hosted, answers, words in [(idle, idle_answers, "nobody acted for a while"),
                                   (graced, graced_answers, "no one was at the session")]:
        counts = check_hosted(host, hosted.session_id, answers, words)
        assert counts["applied"] >= 1 and counts["refused"] + counts["refused at once"] >= 1


async def test_an_action_the_env_never_read_is_refused_when_the_run_ends(
        tmp_path: Path, redis_url: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """An action published after the env node's last read, while the host has not heard the
    node's last word (its listener is stopped here), is refused when the session's run is
    over: never left waiting. Later ones are refused at once."""
    monkeypatch.setattr(hosting, "LAST_WORD_WAIT", 0.1)
    host = host_for(tmp_path, redis_url)
    hosted = await host.create("todo", team="example", people=["user", "agent"],
                               idle_seconds=600)
    session_id, settlements, session = hosted.session_id, hosted.settlements, hosted.live
    assert settlements is not None and settlements._listener is not None
    async with asyncio.timeout(30):
        while session.env_node is None or not session.env_node.started.is_set():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    settlements._listener.cancel()  # the host hears nothing more from the env node
    await session.env_node.stop("ended by the user")  # it reads no more steps from now on
    late = await host.submit(session_id, "user", "WAIT_TEAMMATE_CONTINUE()")
    answer = await late.settled(60)
    ended = "The session ended before this action was applied (it ended: ended by the user)."
    assert answer is not None and (answer.status, answer.message) == ("refused", ended)
    await wait_ended(hosted)
    assert late.request.id not in {e.request_id for e in read_events(tmp_path / "results" /
                                                                      session_id)}
    with pytest.raises(HostingError) as refused:
        await host.submit(session_id, "user", "WAIT_TEAMMATE_CONTINUE()")
    assert (refused.value.status, refused.value.message) == (409, ended)


async def test_an_interrupted_session_answers_interrupted(tmp_path: Path,
                                                          redis_url: str | None) -> None:
    host = host_for(tmp_path, redis_url)
    hosted = await host.create("todo", team="example", people=["user", "agent"],
                               idle_seconds=600)
    sending = asyncio.create_task(send_all(host, hosted.session_id, 40))
    await asyncio.sleep(0.01)
    await host.close()  # the server stops: sessions are interrupted, not ended
    answers = await sending
    statuses = Counter(status for status, _ in answers)
    assert set(statuses) <= {"applied", "interrupted", "refused at once"}
    logged = {e.request_id for e in read_events(host.results_dir / hosted.session_id)}
    for status, detail in answers:
        if status == "applied":
            assert detail[0] in logged
        else:
            assert "The server stopped" in detail or "has ended" in detail


# -- a host's state, step by step (stateful) --------------------------------------------------


class HostedRace(RuleBasedStateMachine):
    """A hosted session (two person seats, ``user`` limited to a few steps) on one bus:
    hypothesis sends actions from both seats, lets the loop run for a while or not at all, and
    ends the session in one of the ways a session ends (a FINISH, a DELETE, the step limit,
    the server stopping), at any point. Every action that was answered is answered as the log
    says; at the end every action has been answered."""

    redis_url: str | None = None  # set by the test, per bus

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.directory = Path(tempfile.mkdtemp(prefix="cogym-hosted-race-"))
        self.host = host_for(self.directory, self.redis_url)
        self.hosted = self.loop.run_until_complete(self.host.create(
            "todo", team="example", people=["user", "agent"], idle_seconds=600,
            step_limits={"user": 6}))
        self.session_id = self.hosted.session_id
        self.sent: list[tuple[Any, str | None]] = []  # (Submitted | None, refused at once)
        self.items = 0
        self.ended = False

    async def _send(self, role: str, action: Any) -> None:
        try:
            self.sent.append((await self.host.submit(self.session_id, role, action), None))
        except HostingError as error:
            assert error.status == 409
            self.sent.append((None, error.message))

    @rule(role=st.sampled_from(["user", "agent"]), kind=st.sampled_from(["item", "message"]))
    def send(self, role: str, kind: str) -> None:
        self.items += 1
        action = ({"name": "ADD_ITEM", "args": {"text": f"{role} {self.items}"}} if kind == "item"
                  else f'SEND_TEAMMATE_MESSAGE(message="{role} {self.items}")')
        self.loop.run_until_complete(self._send(role, action))

    @rule(seconds=st.sampled_from([0.0, 0.001, 0.01]))
    def let_it_run(self, seconds: float) -> None:
        self.loop.run_until_complete(asyncio.sleep(seconds))

    @precondition(lambda self: not self.ended)
    @rule(how=st.sampled_from(["finish", "delete", "stop the server"]))
    def end(self, how: str) -> None:
        self.ended = True
        if how == "finish":
            self.loop.run_until_complete(self._send("agent", "FINISH()"))
        elif how == "delete":
            self.loop.run_until_complete(self.host.end(self.session_id))
        else:
            self.loop.run_until_complete(self.host.close())

    @invariant()
    def answers_agree_with_the_log(self) -> None:
        self.check(final=False)

    def check(self, final: bool) -> None:
        directory = self.host.results_dir / self.session_id
        events = read_events(directory) if (directory / "events.jsonl").is_file() else []
        logged = {e.request_id: e.seq for e in events if e.request_id}
        for submitted, at_once in self.sent:
            if submitted is None:
                assert at_once
                continue
            done = submitted.outcome.done()
            assert done or not final, f"{submitted.request.action} was never answered"
            if not done:
                continue
            answer = submitted.outcome.result()
            if answer.applied:
                assert logged.get(submitted.request.id) == answer.seq
            else:
                assert submitted.request.id not in logged and answer.message
        if not final:
            return
        told = {s.request.id for s, _ in self.sent if s is not None and s.outcome.result().applied}
        assert {e.request_id for e in events if e.actor in ("user", "agent")} - {None} == told
        run = json.loads((self.host.results_dir / self.session_id / "session.json").read_text())
        if run["status"] == "finished":  # the cogym protocol counts every act but waits
            acts = sum(1 for e in events if e.actor == "user" and e.type is not EventType.WAIT)
            run_for_it = sum(1 for e in events if e.type is EventType.CONFIRM_ACCEPT
                             and e.status == "ok" and e.info.get("requester") == "user")
            assert run["step_counts"]["user"] == acts + run_for_it

    def teardown(self) -> None:
        try:
            if self.hosted.status == "running":
                self.loop.run_until_complete(self.host.end(self.session_id))
            if self.hosted.runner is not None:
                self.loop.run_until_complete(asyncio.wait({self.hosted.runner}, timeout=30))
            self.check(final=True)
        finally:
            self.loop.run_until_complete(self.host.close())
            self.loop.close()
            shutil.rmtree(self.directory, ignore_errors=True)


@pytest.mark.timeout(300)
def test_a_hosted_session_answers_every_action_whatever_happens(redis_url: str | None) -> None:
    HostedRace.redis_url = redis_url
    run = HostedRace.TestCase
    run.settings = settings(max_examples=20 if redis_url is None else 6,  # a Redis end: 0.5 s
                            stateful_step_count=20, deadline=None,
                            suppress_health_check=[HealthCheck.too_slow])
    run("runTest").runTest()


# -- the kernel's own sessions: the Python API and a local panel's comm -------------------------


def test_the_python_api_is_told_of_actions_the_session_did_not_apply(tmp_path: Path,
                                                                    no_ambient_lm: None) -> None:
    """``act`` from four threads while the other seat finishes: each call returns (applied and
    logged) or raises ``SessionError`` saying how the session ended (not logged)."""
    from concurrent.futures import ThreadPoolExecutor

    import cogym_lab
    from cogym_lab.sessions.spec import SessionSpec

    spec = SessionSpec(task="todo", team="example", people=["user", "agent"],
                       limits={"idle_seconds": 600})
    user = cogym_lab.new_session(spec, role="user", mode="local", results_dir=tmp_path)
    agent = cogym_lab.attach(user.session_id, role="agent", mode="local")
    assert user.view["checklist"] is not None  # started

    def add(index: int) -> str:
        try:
            user.act({"name": "ADD_ITEM", "args": {"text": f"item {index}"}})
        except cogym_lab.SessionError as error:
            return str(error)
        return "applied"

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(add, range(8)))  # these go through
        racing = [pool.submit(add, index) for index in range(8, 40)]
        agent.finish()
        results += [future.result() for future in racing]
    assert results[:8] == ["applied"] * 8
    logged = {e.action for e in read_events(user.results_dir) if e.actor == "user"}
    finished = "The session ended before this action was applied (it ended: finished by agent)."
    for index, result in enumerate(results):
        action = f'ADD_ITEM(text="item {index}")'
        assert (result == "applied") == (action in logged), (index, result)
        assert result in ("applied", finished)
    with pytest.raises(cogym_lab.SessionError, match="finished by agent"):
        user.send("Anyone there?")


async def test_a_local_panel_is_told_of_actions_the_session_did_not_apply(tmp_path: Path) -> None:
    """The kernel's panel sends a burst of actions over its comm, the other seat finishes among
    them: each one shows in the seat's notifications or comes back as an error naming it."""
    from cogym_lab.widgets.local_bridge import LocalBridge

    host = host_for(tmp_path, None)
    hosted = await host.create("todo", team="example", people=["user", "agent"],
                               idle_seconds=600)
    sent: list[dict[str, Any]] = []
    bridge = LocalBridge(host, hosted.session_id, "user", sent.append, asyncio.get_running_loop())
    bridge.handle({"type": "hello"})
    async with asyncio.timeout(30):
        while not any(m.get("type") == "notification" for m in sent):  # noqa: ASYNC110 - the bridge's send callback
            await asyncio.sleep(0.01)
    for index in range(30):
        bridge.handle({"type": "action", "id": f"a{index}",
                       "action": {"name": "ADD_ITEM", "args": {"text": f"item {index}"}}})
        if index == 12:
            await host.submit(hosted.session_id, "agent", "FINISH()")
        if index % 5 == 0:
            await asyncio.sleep(0)
    await wait_ended(hosted)
    logged = {e.action for e in read_events(host.results_dir / hosted.session_id)
              if e.actor == "user"}
    applied = {f"a{i}" for i in range(30) if f'ADD_ITEM(text="item {i}")' in logged}
    every = {f"a{i}" for i in range(30)}

    def accounted() -> set[Any]:
        return applied | {m.get("id") for m in sent if m.get("type") == "error"}

    async with asyncio.timeout(30):  # the refusals come as the env answers
        while accounted() != every:  # noqa: ASYNC110 - the bridge's send callback
            await asyncio.sleep(0.01)
    errors = [m for m in sent if m.get("type") == "error"]
    assert errors and not applied & {m["id"] for m in errors}
    assert {m["error"] for m in errors} == {
        "The session ended before this action was applied (it ended: finished by agent)."}
    bridge.close()
