"""Stateful property test of strict turn-taking (``interaction="turns"``, ``core.turns``).

Hypothesis drives a coordinator in turns mode on NotesEnv (shared and private notes, a text
replaced whole, deferred drafts, confirmations) with random acts by random members: the member
in turn most of the time, anyone else (paused agents, forged roles) otherwise, with hostile text,
pauses and resumes, confirmations, drafts finishing or failing, and idle ticks. After every step
it checks that:

* an act by anyone but the member in turn (or while its slow work runs) was refused with an
  error saying whose turn it is, woke nobody, and left the state as it was (everything but the
  event count: views, chat, confirmations, pauses, step counts, the turn);
* after an act of the member in turn the turn advanced to the next member of the team's order
  that is not paused, with its number one higher; or stayed (a refused act, which only the
  member is told of), or is held by the act's slow work until its result is in;
* every update went to the member whose turn the event left (all of them for the END), said
  that turn, and built that member's copy into exactly the state the coordinator shows it;
* the log, written to disk and read back, replays on a fresh coordinator to the same state,
  turn included.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from cogym_lab.core import Deferred
from cogym_lab.core.coordinator import Coordinator, Transition
from cogym_lab.core.member_copy import MemberCopy
from cogym_lab.core.messages import Event, EventType, TeamMember
from cogym_lab.nodes.results import ResultsWriter
from tests.support.hostile import forged_roles, member_inputs, weighted
from tests.support.notes_env import NotesEnv
from tests.support.state_machines import replay_the_log, run_machine

TEAM = [TeamMember(role="agent", kind="agent"), TeamMember(role="user", kind="user"),
        TeamMember(role="helper", kind="agent"), TeamMember(role="person", kind="person")]
ORDER = [member.role for member in TEAM]
EXAMPLES = int(os.environ.get("TURNS_EXAMPLES", "400"))
STEPS = 60


def without_seq(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The state an act may change: everything but the count of logged events."""
    return {key: value for key, value in snapshot.items() if key != "seq"}


def next_in_order(role: str, paused: set[str]) -> str:
    """The member after ``role`` in the team's order that is not paused, worked out here
    rather than by the code under test."""
    start = ORDER.index(role)
    for step in range(1, len(ORDER) + 1):
        candidate = ORDER[(start + step) % len(ORDER)]
        if candidate not in paused:
            return candidate
    return role


acts = weighted((30, member_inputs(ORDER)), (4, st.just("WAIT_TEAMMATE_CONTINUE()")),
                (1, st.just("FINISH()")))


class TurnTakingMachine(RuleBasedStateMachine):
    """A coordinator in turns mode, its log on disk, and a replica rebuilt from that log."""

    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="cogym-turns-"))
        self.writer = ResultsWriter(self.directory)
        self.loop = asyncio.new_event_loop()
        self.clock = 1000.0
        self.logged: list[Event] = []
        self.replayed_up_to = 0
        self.pending: list[tuple[str, Deferred, int]] = []  # (role, work, seq that began it)
        self.copies = {role: MemberCopy(role) for role in ORDER}

    def _coordinator(self, env: NotesEnv) -> Coordinator:
        # No event limit in reach: an out-of-turn act must change nothing, and reaching the
        # limit would end the session (a separate test covers that).
        return Coordinator(env, TEAM, session_id="turns", step_limits=self.limits,
                           max_events=100_000, every_act_is_a_step=self.every_act,
                           max_idle_ticks=self.idle_rounds, interaction="turns")

    @initialize(every_act=st.booleans(), agent_limit=st.integers(3, 40),
                idle_rounds=st.integers(2, 4))
    def start(self, every_act: bool, agent_limit: int, idle_rounds: int) -> None:
        self.every_act = every_act
        self.idle_rounds = idle_rounds
        self.limits = {"agent": agent_limit, "helper": agent_limit, "user": 40}
        self.env = NotesEnv()
        self.env.gate = asyncio.Event()
        self.env.gate.set()  # drafts run when the test says, never held
        self.coordinator = self._coordinator(self.env)
        self.replica = self._coordinator(NotesEnv())
        transition = self.coordinator.start(self.now(), seed=1)
        assert [u.recipient for u in transition.updates] == [ORDER[0]]  # the first one only
        self.apply(transition)

    def now(self) -> float:
        self.clock += 0.25
        return self.clock

    def turn(self) -> tuple[str, int, bool]:
        turns = self.coordinator.turns
        assert turns is not None
        return turns.role, turns.number, turns.busy

    def apply(self, transition: Transition) -> None:
        """Log ``transition``, check whom it woke, and hand each update to its member's copy."""
        for logged in transition.events:
            self.writer.append_event(logged)
            assert "turn" in logged.info  # every event records the turn it left
        self.logged += transition.events
        for update in transition.updates:
            event_turn = update.event.info["turn"]
            assert update.turn is not None
            assert update.turn.model_dump(exclude_defaults=True) == event_turn
            if update.event.type is EventType.END:
                continue
            # Only the member whose turn it now is hears of anything (and it is free to act).
            assert update.recipient == event_turn["role"] and not update.turn.busy
            assert update.event.recipients == [update.recipient]
        last = {update.recipient: update for update in transition.updates}
        for update in transition.updates:
            note = self.copies[update.recipient].apply(update)  # never a gap in turns mode
            if note is not None and last[update.recipient] is update:
                assert note.view == self.env.view(update.recipient)
                assert note.chat == self.coordinator.visible_chat(update.recipient)
        self.pending += [(role, deferred, transition.events[0].seq)
                         for role, deferred in transition.deferred]

    # -- what members (and the env, and time) do ------------------------------------------------

    @rule(data=st.data(), raw=acts)
    def act(self, data: st.DataObject, raw: Any) -> None:
        holder, number, busy = self.turn()
        role = data.draw(weighted((3, st.just(holder)), (2, forged_roles(ORDER))), label="role")
        before = without_seq(self.coordinator.snapshot())
        done = self.coordinator.done
        transition = self.coordinator.handle(role, raw, self.now(), request_id="r")
        self.apply(transition)
        if done:
            assert transition.events == []
            return
        if role != holder or busy:  # out of turn: refused, nobody woken, nothing changed
            event("out of turn")
            assert [e.type for e in transition.events] == [EventType.ERROR]
            assert transition.updates == [] and transition.deferred == []
            assert without_seq(self.coordinator.snapshot()) == before
            error = transition.events[0].error or ""
            if role in ORDER and role not in self.coordinator.paused:
                assert "not your turn" in error or "still running" in error
            return
        self.check_turn_after_act(holder, number, transition)

    def check_turn_after_act(self, holder: str, number: int, transition: Transition) -> None:
        first = transition.events[0]
        role, new_number, busy = self.turn()
        event(f"in turn: {first.type.value}")
        if first.type is EventType.ERROR:  # refused: the same member tries again
            assert (role, new_number) == (holder, number)
            assert [u.recipient for u in transition.updates
                    if u.event.type is not EventType.END] in ([], [holder])
        elif first.type is EventType.FINISH:
            assert self.coordinator.done
        elif first.info.get("deferred"):  # its slow work holds the turn
            assert (role, new_number, busy) == (holder, number, True)
        else:  # the act passed the turn
            assert new_number == number + 1
            assert role == next_in_order(holder, set(self.coordinator.paused))

    @precondition(lambda self: self.pending)
    @rule(data=st.data())
    def finish_deferred_work(self, data: st.DataObject) -> None:
        role, deferred, seq = self.pending.pop(data.draw(st.integers(0, len(self.pending) - 1)))
        holder, number, _ = self.turn()
        try:
            follow_up = self.loop.run_until_complete(deferred.work())
        except RuntimeError as error:
            transition = self.coordinator.deferred_failed(role, "DRAFT(...)", str(error),
                                                          self.now())
        else:
            transition = self.coordinator.apply_follow_up(role, follow_up, self.now(),
                                                          seen_seq=seq)
        self.apply(transition)
        if self.coordinator.done or not transition.events:
            return
        role_now, number_now, busy = self.turn()
        event("slow work's result applied")
        if busy:  # other work (or work the result started) still holds it
            assert (role_now, number_now) == (holder, number)
        else:  # the result is in: the turn moves on
            assert number_now == number + 1
            assert role_now == next_in_order(holder, set(self.coordinator.paused))

    @rule(now=weighted((1, st.just(True)), (3, st.just(False))))
    def tick(self, now: bool) -> None:
        if not now:  # idle ticks a quarter as often as other steps, or sessions end early
            return
        holder, number, busy = self.turn()
        done = self.coordinator.done
        transition = self.coordinator.tick(self.now())
        self.apply(transition)
        if done or self.coordinator.done:
            return
        role, new_number, _ = self.turn()
        if busy:
            assert (role, new_number) == (holder, number)
        else:  # the member in turn let it go by
            assert (role, new_number) == (next_in_order(holder, set(self.coordinator.paused)),
                                          number + 1)

    @rule(role=st.sampled_from(ORDER))
    def sync(self, role: str) -> None:
        update = self.coordinator.sync(role, self.now())
        if update is not None:  # says the turn; a member not in turn would not act on it
            assert update.turn is not None and update.turn.role == self.turn()[0]
            self.copies[role].apply(update)

    # -- what must hold after every step ----------------------------------------------------------

    @invariant()
    def the_log_replays_to_the_same_state_and_turn(self) -> None:
        if not hasattr(self, "coordinator"):
            return
        read_back = replay_the_log(self.directory, self.logged, self.replica, self.replayed_up_to)
        self.replayed_up_to = len(read_back)
        assert self.replica.snapshot() == self.coordinator.snapshot()
        assert "turn" in self.coordinator.snapshot()

    @invariant()
    def a_paused_agent_never_has_the_turn(self) -> None:
        if hasattr(self, "coordinator") and not self.coordinator.done:
            assert self.turn()[0] not in self.coordinator.paused

    def teardown(self) -> None:
        self.writer.close()
        self.loop.close()
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.mark.timeout(900)
def test_turn_taking_properties() -> None:
    run_machine(TurnTakingMachine, EXAMPLES, STEPS)
