"""Stateful property test: work that fails transiently is logged as what happened, so the log
always replays and the session always resumes.

Hypothesis plays the members of a FlakyNotesEnv session over a real bus, through the EnvNode
that runs it live, and draws a failure schedule beside their steps: any run of the task's code
(an action's handler, a follow-up a draft produced, an accepted confirmation, the deferred work
of a DRAFT) may raise a transient error. None of those failures happens again: the replica that
replays the log, and the env a resumed session runs on, fail only where their own schedule says.
After every step:

* nothing raised, and every applied event is in ``events.jsonl``, read back by the log reader;
* a coordinator that never fails, fed that log, has the live coordinator's ``snapshot()``.

A rule interrupts the session (as a server going down does: no END is logged) and resumes it
through the session API (``Session.restore`` then ``Session.run``, what ``SessionHost.resume``
does) on a fresh env: the resumed coordinator starts in the state the log ends in, the work the
log left unfinished runs again, and the session carries on, its new events checked like the
first run's. At the end, the last run is resumed once more and must accept a step.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from cogym_lab.bus import MemoryBus, Subscription
from cogym_lab.core.failures import FAILED
from cogym_lab.core.messages import Event, StepRequest, TeamMember, obs_channel, step_channel
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.results import read_events
from cogym_lab.nodes.session import build_coordinator
from tests.support.flaky_env import FlakyNotesEnv
from tests.support.hostile import collaboration_acts, task_actions, weighted
from tests.support.state_machines import ErrorRecords, on_the_bus, replay_the_log, run_machine

TEAM = [TeamMember(role="agent", kind="agent"), TeamMember(role="user", kind="user"),
        TeamMember(role="person", kind="person")]
ROLES = [member.role for member in TEAM]
KINDS = {member.role: member.kind for member in TEAM}
#: The session's set-up; the replica is built from it as replay rebuilds a session.
CONFIG = SessionConfig(idle_seconds=3600, join_timeout=10, channel_ttl=None,
                       step_limits={"agent": 40, "user": 60}, max_events=150)

EXAMPLES = int(__import__("os").environ.get("PROPS_EXAMPLES", 100))
STEPS = 30

plain_text = st.text(st.characters(codec="utf-8", categories=("L", "N", "Zs")), max_size=12)
#: Members' inputs that mostly reach the task's code (where the failures are).
inputs = weighted((5, task_actions(plain_text)), (2, collaboration_acts(ROLES, plain_text)))


class TransientFailuresMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.directory = Path(tempfile.mkdtemp(prefix="cogym-flaky-props-"))
        self.errors = ErrorRecords()
        for name in ("cogym_lab.nodes.env_node", "cogym_lab.nodes.session"):
            logging.getLogger(name).addHandler(self.errors)
        self.session_id = "flaky-" + uuid.uuid4().hex[:8]
        self.logged: list[Event] = []
        self.replayed_up_to = 0
        self.resumes = 0
        self.replica = build_coordinator(FlakyNotesEnv(), TEAM, self.session_id, CONFIG)
        self.bus = MemoryBus()
        self.loop.run_until_complete(self._open())

    # -- the session, first run and resumed ----------------------------------------------------

    async def _open(self) -> None:
        self.inboxes: dict[str, Subscription] = {
            role: await self.bus.subscribe(obs_channel(self.session_id, role)) for role in ROLES}
        await self._run_session(restore=False)

    async def _run_session(self, *, restore: bool) -> None:
        """Run the session (every seat is the test's), or resume it from its log."""
        self.env = FlakyNotesEnv()
        self.session = Session(self.env, dict.fromkeys(ROLES), kinds=KINDS, bus=self.bus,
                               session_id=self.session_id, results_dir=self.directory,
                               config=CONFIG, observers=[self.logged.append])
        if restore:
            self.session.restore(read_events(self.directory))
        self.task = asyncio.create_task(self.session.run())
        for role in ROLES:
            await self.publish({"role": role, "kind": "join", "id": uuid.uuid4().hex})
        await self.settle()

    @property
    def node(self) -> Any:
        return self.session.env_node

    @property
    def running(self) -> bool:
        return not self.task.done()

    async def publish(self, message: dict[str, Any]) -> None:
        await self.bus.publish(step_channel(self.session_id), message)

    async def settle(self) -> None:
        """Run the loop until the node answered a sync sent now (so the steps before it, and
        any work they released, are done), then empty every inbox."""
        if self.running:
            await self.publish(StepRequest(role="user", kind="sync").model_dump())
            async with asyncio.timeout(30):
                while self.running:
                    message = await self.inboxes["user"].get(timeout=0.05)
                    if message is not None and message["event"]["type"] == "sync":
                        break
        for inbox in self.inboxes.values():
            while await inbox.get(timeout=0) is not None:
                pass

    # -- what members do, and what fails ---------------------------------------------------------

    @rule(steps=st.lists(st.tuples(st.sampled_from(ROLES), inputs), min_size=1, max_size=4),
          failures=st.lists(st.booleans(), max_size=6))
    def act(self, steps: list[tuple[str, Any]], failures: list[bool]) -> None:
        """A burst of steps; the runs of the task's code they cause fail as ``failures`` says."""
        self.env.failures.extend(failures)
        self.loop.run_until_complete(self._send(*(
            {"role": role, "kind": "action", "action": on_the_bus(raw), "id": uuid.uuid4().hex}
            for role, raw in steps)))

    async def _send(self, *messages: dict[str, Any]) -> None:
        for message in messages:
            await self.publish(message)
        await self.settle()

    @rule(fail=st.booleans())
    def held_drafts_finish(self, fail: bool) -> None:
        """Drafts held so far run their work now (the first of them fails if ``fail``)."""
        self.env.failures.appendleft(fail)
        self.env.release()
        self.loop.run_until_complete(self.settle())

    @precondition(lambda self: self.running and not self.node.coordinator.done)
    @rule()
    def the_server_goes_down_and_the_session_is_resumed(self) -> None:
        self.loop.run_until_complete(self._resume())

    async def _resume(self) -> None:
        before = self.node.coordinator.snapshot()
        await self.session.interrupt("server shut down")
        await asyncio.wait_for(self.task, 10)
        assert self.task.result().end_reason is None  # interrupted, not ended
        await self._run_session(restore=True)
        self.resumes += 1
        assert self.session.restored is not None
        assert self.session.restored.events == before["seq"]
        resumed = self.node.coordinator.snapshot()
        # Work the log left unfinished may have run again by now: compare what it cannot touch.
        assert resumed["seq"] >= before["seq"]
        assert resumed["chat"][:len(before["chat"])] == before["chat"]

    # -- what must hold after every step ---------------------------------------------------------

    @invariant()
    def the_log_replays_to_the_live_state(self) -> None:
        assert not self.errors.records, self.errors.records[0].getMessage()
        assert self.node is None or self.node.log_failure is None
        read_back = replay_the_log(self.directory, self.logged, self.replica, self.replayed_up_to)
        self.replayed_up_to = len(read_back)
        assert self.replica.env.failed == 0  # replay never ran into a failure
        assert self.replica.snapshot() == self.session.coordinator.snapshot()

    def teardown(self) -> None:
        try:
            self.loop.run_until_complete(self._finally_resume())
            if currently_in_test_context():  # its statistics say how often each case came up
                recorded = {("deferred work" if e.info.get("deferred") else "an action")
                            + " failed" for e in read_events(self.directory)
                            if e.info.get(FAILED)}
                for what in sorted(recorded) + (["resumed"] if self.resumes > 1 else []):
                    event(what)
        finally:
            self.loop.run_until_complete(self._close())
            self.loop.close()
            for name in ("cogym_lab.nodes.env_node", "cogym_lab.nodes.session"):
                logging.getLogger(name).removeHandler(self.errors)
            shutil.rmtree(self.directory, ignore_errors=True)

    async def _finally_resume(self) -> None:
        """Whatever happened, the session resumes from its log and takes the next step (unless
        it had ended: then there is nothing to resume)."""
        if not self.running or self.node.coordinator.done:
            return
        await self._resume()
        if self.node.coordinator.done:  # the resumed work ended it (its step limit)
            return
        seq = self.node.coordinator.seq
        await self._send({"role": "person", "kind": "action", "id": uuid.uuid4().hex,
                          "action": 'JOT(note="after the resume")'})
        assert self.node.coordinator.seq > seq
        self.the_log_replays_to_the_live_state()

    async def _close(self) -> None:
        if self.running:
            await self.session.interrupt("test over")
        await asyncio.wait_for(self.task, 10)
        for inbox in self.inboxes.values():
            await inbox.close()
        await self.bus.close()


@pytest.mark.timeout(900)
def test_transient_failures_replay_and_resume() -> None:
    run_machine(TransientFailuresMachine, EXAMPLES, STEPS)


def test_the_schedule_makes_failures_of_every_kind() -> None:
    """The property test's failures happen where it says: a run of an action's handler and of
    a draft's deferred work, each logged as a recorded failure."""
    machine = TransientFailuresMachine()
    try:
        machine.act([("agent", 'JOT(note="a")')], [True])
        machine.act([("agent", 'DRAFT(prompt="b")')], [False, True])  # the action, its work
        machine.act([("agent", 'POST(note="!c")')], [])  # held for approval
        machine.act([("person", 'ACCEPT_CONFIRMATION(request_id="c1")')], [True])
        kinds = [(e.type.value, bool(e.info.get("deferred")), e.info.get(FAILED))
                 for e in read_events(machine.directory)]
        assert ("error", False, "OSError") in kinds  # the first JOT
        assert ("error", True, "TimeoutError") in kinds  # the draft's work
        assert ("error", False, "ConnectionError") in kinds  # the accepted POST
        machine.the_log_replays_to_the_live_state()
        machine.the_server_goes_down_and_the_session_is_resumed()
        machine.act([("agent", 'JOT(note="d")')], [])
        machine.the_log_replays_to_the_live_state()
    finally:
        machine.teardown()
