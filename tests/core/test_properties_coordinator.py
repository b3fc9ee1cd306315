"""Stateful property test of the Coordinator: random members' inputs, hostile text included.

Hypothesis drives a coordinator on NotesEnv (a whole-text editor with merges, deferred drafts,
confirmations, private notes) with any mix of steps: real and forged roles, actions as strings,
dicts and Action objects, malformed input, lone surrogates and Unicode line breaks, pauses,
confirmations, deferred work finishing or failing in any order, observed steps and ticks. After
every step it checks that:

* nothing raised;
* every event the coordinator produced is in ``events.jsonl``, written by the ResultsWriter and
  read back by the one log reader, unchanged;
* a second coordinator fed the events read back from the file has the same ``snapshot()``;
* no notification showed a member another member's private notes, and what a notification
  carries does not grow with the team (step counts, the context's team);
* each member's copy, built from the updates it was sent, equals the whole view and chat the
  coordinator would show it; a member made to miss an update finds out from the next one (never
  later, never wrongly) and is whole again after a sync.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from cogym_lab.core import Deferred, Notification
from cogym_lab.core.coordinator import Coordinator, Transition
from cogym_lab.core.member_copy import MemberCopy, OutOfSync
from cogym_lab.core.messages import Event, TeamMember, Update
from cogym_lab.nodes.results import ResultsWriter
from tests.support.hostile import forged_roles, hostile_text, member_inputs
from tests.support.notes_env import NotesEnv
from tests.support.state_machines import replay_the_log, run_machine

TEAM = [TeamMember(role="agent", kind="agent"), TeamMember(role="helper", kind="agent"),
        TeamMember(role="user", kind="user"), TeamMember(role="person", kind="person")]
ROLES = [member.role for member in TEAM]
NOT_PEOPLE = {member.role for member in TEAM if member.kind != "person"}

#: Examples run by this test; with the env node's, over 2,000 in all.
EXAMPLES = int(__import__("os").environ.get("PROPS_EXAMPLES", 1500))
STEPS = 50


def check_notification(note: Notification, env: NotesEnv) -> None:
    """What one member was sent: its own private notes only, and nothing sized by the team."""
    assert note.recipient in note.event.recipients
    scratch = note.view["scratch"].content
    assert all(entry["by"] == note.recipient for entry in scratch)
    assert scratch == env.scratch.get(note.recipient, [])
    if note.event.private and note.event.type.value == "action":
        assert note.event.recipients == [note.event.actor]
    assert set(note.step_counts) <= NOT_PEOPLE | {note.recipient}
    assert set(note.event.recipients) <= NOT_PEOPLE | {note.recipient}
    if note.context is not None and note.context.kind == "person":
        assert {m.role for m in note.context.team} <= NOT_PEOPLE | {note.recipient}


class CoordinatorMachine(RuleBasedStateMachine):
    """One coordinator, its log on disk, and a replica rebuilt from that log step by step."""

    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="cogym-props-"))
        self.writer = ResultsWriter(self.directory)
        self.loop = asyncio.new_event_loop()
        self.clock = 1000.0
        self.logged: list[Event] = []
        self.replayed_up_to = 0
        self.pending: list[tuple[str, Deferred, int]] = []  # (role, work, the seq that began it)
        self.copies = {role: MemberCopy(role) for role in ROLES}
        self.losing: set[str] = set()  # members whose next update is lost on the way
        self.missed: set[str] = set()  # members that lost one and have not been made whole

    def _coordinator(self, env: NotesEnv) -> Coordinator:
        return Coordinator(env, TEAM, session_id="props", step_limits=self.limits,
                           max_events=120, every_act_is_a_step=self.every_act)

    @initialize(every_act=st.booleans(), agent_limit=st.integers(3, 40))
    def start(self, every_act: bool, agent_limit: int) -> None:
        self.every_act = every_act
        self.limits = {"agent": agent_limit, "helper": agent_limit, "user": 40}
        self.env = NotesEnv()
        self.env.gate = asyncio.Event()
        self.env.gate.set()  # drafts here run when the test says, never held
        self.coordinator = self._coordinator(self.env)
        self.replica = self._coordinator(NotesEnv())
        self.apply(self.coordinator.start(self.now(), seed=1))

    def now(self) -> float:
        self.clock += 0.25
        return self.clock

    def apply(self, transition: Transition) -> None:
        for event in transition.events:
            self.writer.append_event(event)
        self.logged += transition.events
        last = {update.recipient: update for update in transition.updates}
        for update in transition.updates:
            self.deliver(update, check_whole=last[update.recipient] is update)
        self.pending += [(role, deferred, transition.events[0].seq)
                         for role, deferred in transition.deferred]

    def deliver(self, update: Update, *, check_whole: bool = True) -> None:
        """Hand ``update`` to its member's copy, as a member node does; with ``check_whole``
        (its last update of this step), check the copy against the coordinator's whole state."""
        role = update.recipient
        copy = self.copies[role]
        if role in self.losing:
            self.losing.discard(role)
            if not (update.whole and update.seq == copy.seq):  # a sync with no news is no loss
                self.missed.add(role)
            return
        try:
            note = copy.apply(update)
        except OutOfSync:
            assert role in self.missed, f"{role} saw a gap it did not have at {update.seq}"
            return
        assert role not in self.missed or update.whole, f"{role}'s lost update went unnoticed"
        self.missed.discard(role)
        if note is None:
            return
        check_notification(note, self.env)
        if check_whole:
            assert note.view == self.env.view(role)
            assert note.chat == self.coordinator.visible_chat(role)

    # -- what members (and the env, and time) do ------------------------------------------------

    @rule(role=st.sampled_from(ROLES))
    def an_update_is_lost(self, role: str) -> None:
        self.losing.add(role)

    @rule(role=forged_roles(ROLES), raw=member_inputs(ROLES),
          base=st.one_of(st.none(), hostile_text, st.integers()),
          seen_seq=st.one_of(st.none(), st.integers(-2, 60), st.just("7")))
    def act(self, role: Any, raw: Any, base: Any, seen_seq: Any) -> None:
        self.apply(self.coordinator.handle(role, raw, self.now(), request_id="r", base=base,
                                           seen_seq=seen_seq))

    @precondition(lambda self: self.pending)
    @rule(data=st.data())
    def finish_deferred_work(self, data: st.DataObject) -> None:
        role, deferred, seq = self.pending.pop(data.draw(st.integers(0, len(self.pending) - 1)))
        try:
            follow_up = self.loop.run_until_complete(deferred.work())
        except RuntimeError as error:
            self.apply(self.coordinator.deferred_failed(role, "DRAFT(...)", str(error),
                                                        self.now()))
            return
        self.apply(self.coordinator.apply_follow_up(role, follow_up, self.now(), seen_seq=seq))

    @rule(role=forged_roles(ROLES), line=hostile_text, as_member_input=member_inputs(ROLES),
          internal=st.booleans())
    def observe_outside_step(self, role: Any, line: str, as_member_input: Any,
                             internal: bool) -> None:
        raw = {"name": "RECORD", "args": {"line": line}} if internal else as_member_input
        self.apply(self.coordinator.apply_observed(role, raw, self.now()))

    @rule(role=forged_roles(ROLES), action_text=hostile_text, error=hostile_text)
    def deferred_work_fails(self, role: Any, action_text: str, error: str) -> None:
        self.apply(self.coordinator.deferred_failed(role, action_text, error, self.now()))

    @rule()
    def tick(self) -> None:
        self.apply(self.coordinator.tick(self.now()))

    @rule(role=forged_roles(ROLES))
    def sync(self, role: Any) -> None:
        update = self.coordinator.sync(role, self.now())
        if update is not None:
            self.deliver(update)

    @precondition(lambda self: len(self.logged) > 20)
    @rule(reason=hostile_text)
    def end(self, reason: str) -> None:
        self.apply(self.coordinator.end(self.now(), reason, note=reason))

    # -- what must hold after every step ----------------------------------------------------------

    @invariant()
    def the_log_holds_every_event_and_replays_to_the_same_state(self) -> None:
        if not hasattr(self, "coordinator"):
            return
        read_back = replay_the_log(self.directory, self.logged, self.replica, self.replayed_up_to)
        self.replayed_up_to = len(read_back)
        assert self.replica.snapshot() == self.coordinator.snapshot()

    def teardown(self) -> None:
        self.writer.close()
        self.loop.close()
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.mark.timeout(900)
def test_coordinator_properties() -> None:
    run_machine(CoordinatorMachine, EXAMPLES, STEPS)
