"""Stateful property test of the EnvNode on a MemoryBus: members' inputs, as the bus carries them.

Hypothesis plays the members of a NotesEnv session over a real bus: step messages from real and
forged roles (some not even valid step requests), hostile text, structured actions, re-delivered
requests, drafts whose deferred work is held and released, and a stop. Each step runs the event
loop until the env node has answered a ``sync`` sent after it (the node handles its step channel
in order, so by then the step and any work it released are done). After every step:

* nothing raised (the node logs a step that raised and carries on: no such record may appear);
* every event the node applied is in ``events.jsonl``, read back by the one log reader;
* a coordinator rebuilt from that file has the node's ``snapshot()``;
* the step channel keeps none of the steps the node handled (it says it consumed each once its
  events are logged), and every step it did not handle yet;
* each member received only notifications addressed to it, showing only its own private notes.
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
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from cogym_lab.bus import MemoryBus, Subscription
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import Event, StepRequest, TeamMember, obs_channel, step_channel
from cogym_lab.nodes import EnvNode
from cogym_lab.nodes.results import ResultsWriter
from tests.support.hostile import forged_roles, hostile_text, member_inputs
from tests.support.notes_env import NotesEnv
from tests.support.state_machines import ErrorRecords, on_the_bus, replay_the_log, run_machine

TEAM = [TeamMember(role="agent", kind="agent"), TeamMember(role="user", kind="user"),
        TeamMember(role="person", kind="person")]
ROLES = [member.role for member in TEAM]
SESSION = "node-props"

EXAMPLES = int(__import__("os").environ.get("PROPS_EXAMPLES", 500))
STEPS = 25


class EnvNodeMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.directory = Path(tempfile.mkdtemp(prefix="cogym-node-props-"))
        self.errors = ErrorRecords()
        logging.getLogger("cogym_lab.nodes.env_node").addHandler(self.errors)
        self.logged: list[Event] = []
        self.replayed_up_to = 0
        self.sent: list[dict[str, Any]] = []
        self.loop.run_until_complete(self._start())

    async def _start(self) -> None:
        self.bus = MemoryBus()
        self.env = NotesEnv()
        self.writer = ResultsWriter(self.directory)
        limits = {"agent": 25, "user": 40}
        self.node = EnvNode(
            self.bus, Coordinator(self.env, TEAM, session_id=SESSION, step_limits=limits,
                                  max_events=90),
            idle_seconds=3600, join_timeout=10, recorders=[self.writer.append_event],
            observers=[self.logged.append])
        self.replica = Coordinator(NotesEnv(), TEAM, session_id=SESSION, step_limits=limits,
                                   max_events=90)
        self.inboxes: dict[str, Subscription] = {
            role: await self.bus.subscribe(obs_channel(SESSION, role)) for role in ROLES}
        self.task = asyncio.create_task(self.node.run())
        for role in ROLES:
            await self.publish({"role": role, "kind": "join", "id": uuid.uuid4().hex})
        await self.settle()

    @property
    def running(self) -> bool:
        return not self.task.done()

    async def publish(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        await self.bus.publish(step_channel(SESSION), message)

    async def settle(self) -> None:
        """Run the loop until the node answered a sync sent now, then read every inbox."""
        if self.running:
            barrier = StepRequest(role="user", kind="sync")
            await self.publish(barrier.model_dump())
            async with asyncio.timeout(30):
                while self.running:
                    message = await self.inboxes["user"].get(timeout=0.05)
                    if message is not None:
                        self.check_received("user", message)
                        if message["event"]["type"] == "sync":
                            break
        for role, inbox in self.inboxes.items():
            while (message := await inbox.get(timeout=0)) is not None:
                self.check_received(role, message)

    def check_received(self, role: str, message: dict[str, Any]) -> None:
        assert message["recipient"] == role
        assert role in message["event"]["recipients"] or message["event"]["type"] == "sync"
        for component in message["components"]:
            if component["name"] == "scratch":
                assert all(entry["by"] == role for entry in component["content"])

    # -- what members do ---------------------------------------------------------------------------

    @rule(steps=st.lists(st.tuples(
        forged_roles(ROLES), member_inputs(ROLES), st.one_of(st.none(), hostile_text),
        st.one_of(st.none(), st.integers(0, 60))), min_size=1, max_size=4))
    def act(self, steps: list[tuple[Any, Any, str | None, int | None]]) -> None:
        """A burst of steps, sent before the node answers any (members do not take turns)."""
        self.loop.run_until_complete(self._send(*(
            {"role": role, "kind": "action", "action": on_the_bus(raw), "id": uuid.uuid4().hex,
             "base": base, "seen_seq": seen_seq} for role, raw, base, seen_seq in steps)))

    async def _send(self, *messages: dict[str, Any]) -> None:
        for message in messages:
            await self.publish(message)
        await self.settle()

    @precondition(lambda self: self.sent)
    @rule(data=st.data())
    def a_transport_delivers_a_step_again(self, data: st.DataObject) -> None:
        message = data.draw(st.sampled_from(self.sent))
        seq = self.node.coordinator.seq
        self.loop.run_until_complete(self._send(message))
        assert self.node.coordinator.seq == seq  # a request id is applied once

    @rule(role=st.sampled_from(ROLES))
    def rejoin(self, role: str) -> None:
        self.loop.run_until_complete(self._send({"role": role, "kind": "join",
                                                 "id": uuid.uuid4().hex}))

    @rule()
    def held_drafts_finish(self) -> None:
        self.env.release()
        self.loop.run_until_complete(self.settle())

    @precondition(lambda self: len(self.logged) > 12)
    @rule()
    def the_session_is_stopped(self) -> None:
        self.loop.run_until_complete(self._stop())

    async def _stop(self) -> None:
        await self.node.stop("stopped")
        await asyncio.wait_for(self.task, 10)
        await self.settle()

    # -- what must hold after every step ---------------------------------------------------------

    @invariant()
    def every_applied_event_is_logged_and_replays_to_the_same_state(self) -> None:
        assert not self.errors.records, self.errors.records[0].getMessage()
        assert self.node.log_failure is None
        read_back = replay_the_log(self.directory, self.logged, self.replica, self.replayed_up_to)
        assert read_back[-1].seq == self.node.coordinator.seq
        self.replayed_up_to = len(read_back)
        assert self.replica.snapshot() == self.node.coordinator.snapshot()

    @invariant()
    def the_step_channel_keeps_only_what_the_node_has_not_handled(self) -> None:
        kept = [message for _, message in self.bus._history.get(step_channel(SESSION), ())]
        if self.running:  # settled: the node handled everything sent, the barrier included
            assert kept == []
        else:  # stopped: what was sent since it stopped reading waits there, none dropped
            assert kept == self.sent[len(self.sent) - len(kept):]

    def teardown(self) -> None:
        self.loop.run_until_complete(self._close())
        self.loop.close()
        logging.getLogger("cogym_lab.nodes.env_node").removeHandler(self.errors)
        self.writer.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    async def _close(self) -> None:
        if self.running:
            await self.node.stop("test over")
        await asyncio.wait_for(self.task, 10)
        for inbox in self.inboxes.values():
            await inbox.close()
        await self.bus.close()


@pytest.mark.timeout(900)
def test_env_node_properties() -> None:
    run_machine(EnvNodeMachine, EXAMPLES, STEPS)
