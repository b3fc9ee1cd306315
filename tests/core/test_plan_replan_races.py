"""A replanning offer crossing a person's edit made from a stale copy of the plan, on a real
coordinator (the todo task with a plan), in every order.

The person rewrote step s1 so that the plan's course changed; the agent offers to replan the
steps after s1 (``OFFER_REPLAN``) while the person, from the copy their panel showed, edits a
step (``EDIT_STEP`` with the older ``base``), and then accepts (``ACCEPT_REPLAN``), or the other
way round. Whatever the order, nothing either side wrote is lost: the person's edit is kept (or
merged with what changed since), an accepted choice's steps follow s1, and an accept that would
drop a step edited after the offer was made is refused (the offer stays, to be dismissed). The
log replays to the same state after every step.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from cogym_lab.core.coordinator import Coordinator
from cogym_lab.envs import make_env
from cogym_lab.nodes.restore import replay_events
from tests.core.test_plans import TEAM, THREE_STEPS, Team
from tests.support.hostile import hostile_text

ORIGINAL = {f"s{n}": step["description"] for n, step in enumerate(THREE_STEPS[0]["steps"], 1)}
NEW_S1 = "Ask a friend who hikes a lot what to bring"
CHOICES = [["Add what the friend names", "Check the list with the friend"],
           [{"description": "Say which of the friend's tips to keep", "assignee": "person"}]]


def chosen(choice: int) -> list[str]:
    return [c if isinstance(c, str) else c["description"] for c in CHOICES[choice]]


class Race:
    """A planned session after the person's course-changing edit of s1, with the copy of the
    step texts the person's panel showed before it (so every edit from that copy is stale)."""

    def __init__(self) -> None:
        self.team = Team().planned()
        self.copy = dict(ORIGINAL)  # the person's panel, as of before their edit of s1
        self.team.ok("user", "EDIT_STEP", step="s1", description=NEW_S1)

    @property
    def board(self) -> Any:
        return self.team.env.plan_board  # type: ignore[attr-defined]

    def texts(self) -> dict[str, str]:
        return {step.id: step.description for step in self.board.steps}

    def offer(self) -> None:
        self.team.ok("agent", "OFFER_REPLAN", step="s1", choices=CHOICES,
                     reason="No papers come any more.")

    def stale_edit(self, step: str, line: str) -> Any:
        """The person's edit of ``step`` from their copy: a line added below its text."""
        base = self.copy[step]
        return self.team.act("user", "EDIT_STEP", step=step, description=f"{base}\n{line}",
                             base=base)

    def replays(self) -> None:
        fresh = Coordinator(make_env("todo", plans=True), TEAM, session_id="plans")
        for _ in replay_events(fresh, self.team.events):
            pass
        assert fresh.snapshot() == self.team.coordinator.snapshot()


def test_offer_then_a_stale_edit_of_the_edited_step_then_accept() -> None:
    race = Race()
    race.offer()
    assert race.stale_edit("s1", "and a stove").status == "ok"
    race.replays()
    race.team.ok("user", "ACCEPT_REPLAN", choice=0)
    texts = race.texts()
    assert NEW_S1 in texts["s1"] and "and a stove" in texts["s1"]  # both edits, merged
    assert list(texts.values())[1:] == chosen(0)  # the accepted steps follow s1
    race.replays()


def test_a_stale_edit_then_the_offer_then_accept() -> None:
    race = Race()
    assert race.stale_edit("s1", "and a stove").status == "ok"
    race.offer()
    race.team.ok("user", "ACCEPT_REPLAN", choice=1)
    texts = race.texts()
    assert NEW_S1 in texts["s1"] and "and a stove" in texts["s1"]
    assert list(texts.values())[1:] == chosen(1)
    race.replays()


def test_offer_accept_then_a_stale_edit_is_merged_into_the_kept_step() -> None:
    race = Race()
    race.offer()
    race.team.ok("user", "ACCEPT_REPLAN", choice=0)
    assert race.stale_edit("s1", "and a stove").status == "ok"
    texts = race.texts()
    assert NEW_S1 in texts["s1"] and "and a stove" in texts["s1"]
    assert list(texts.values())[1:] == chosen(0)
    race.replays()


def test_an_accept_that_would_drop_a_step_edited_after_the_offer_is_refused() -> None:
    race = Race()
    race.offer()
    assert race.stale_edit("s2", "headlamp!").status == "ok"  # a step the offer would replace
    race.team.refused("user", "ACCEPT_REPLAN", "changed since this replanning offer",
                      choice=0)
    assert race.texts()["s2"].endswith("headlamp!") and race.board.state.replan is not None
    race.team.ok("user", "DISMISS_REPLAN")  # the person keeps the plan as it now is
    race.offer()  # an offer made after the edit sees it: accepting it replaces it, knowingly
    race.team.ok("user", "ACCEPT_REPLAN", choice=0)
    assert list(race.texts().values())[1:] == chosen(0)
    race.replays()


def test_an_edit_of_a_step_the_accepted_replan_replaced_is_refused_and_changes_nothing() -> None:
    race = Race()
    race.offer()
    race.team.ok("user", "ACCEPT_REPLAN", choice=0)
    before = race.texts()
    refused = race.stale_edit("s2", "headlamp!")
    assert refused.status == "error" and "No step 's2'" in (refused.error or "")
    assert race.texts() == before
    race.replays()


# -- every order, as a state machine -----------------------------------------------------------

class ReplanRaceMachine(RuleBasedStateMachine):
    """Offers, accepts, looks (the panel catching up) and stale edits in any order and number.

    The model keeps the lines the person added that must still be in each step (an edit that
    took effect), and drops them only when an accepted offer made after that edit replaced the
    step. After every rule, the lines are where they should be and the log replays."""

    @initialize()
    def start(self) -> None:
        self.race = Race()
        self.replica = Coordinator(make_env("todo", plans=True), TEAM, session_id="plans")
        self.replayed = 0
        self.lines: dict[str, list[str]] = {"s1": []}  # the person's lines per step
        self.edited_at: dict[str, int] = {}  # each step's last edit (a counter of rules)
        self.offered_at: int | None = None  # when the open offer was made
        self.clock = 0
        self.count = 0

    def _tick(self) -> int:
        self.clock += 1
        return self.clock

    @rule()
    def offer(self) -> None:
        self.race.offer()
        self.offered_at = self._tick()

    @rule(choice=st.integers(0, 1))
    def accept(self, choice: int) -> None:
        rest = [s for s in self.race.texts() if s != "s1"]
        event = self.race.team.act("user", "ACCEPT_REPLAN", choice=choice)
        if self.offered_at is None:
            assert event.status == "error"  # no offer open
            return
        crossed = [s for s in rest if self.edited_at.get(s, 0) > self.offered_at]
        if crossed:  # an edit crossed the offer: refused, the edit and the offer both stay
            assert event.status == "error" and "changed since" in (event.error or "")
            return
        assert event.status == "ok", event.error
        assert list(self.race.texts().values())[1:] == chosen(choice)
        for step in rest:  # replaced by the person's own choice, made after seeing the offer
            self.lines.pop(step, None)
        self.offered_at = None
        self._tick()

    @rule()
    def dismiss(self) -> None:
        event = self.race.team.act("user", "DISMISS_REPLAN")
        assert (event.status == "ok") == (self.offered_at is not None)
        self.offered_at = None

    @rule()
    def look(self) -> None:
        self.race.copy = self.race.texts()  # the panel shows the plan as it is now

    @rule(step=st.sampled_from(["s1", "s2", "s3", "s4", "s5", "s6"]), words=hostile_text)
    def stale_edit(self, step: str, words: str) -> None:
        if step not in self.race.copy:
            return
        self.count += 1
        line = f"mark{self.count} {' '.join(words.split())}".strip()
        event = self.race.stale_edit(step, line)
        if step not in self.race.texts():  # gone since the copy: refused, nothing changes
            assert event.status == "error" and f"No step {step!r}" in (event.error or "")
            return
        assert event.status == "ok", event.error
        self.lines.setdefault(step, []).append(f"mark{self.count}")
        self.edited_at[step] = self._tick()

    @invariant()
    def nothing_the_person_wrote_is_lost(self) -> None:
        texts = self.race.texts()
        assert NEW_S1 in texts["s1"]  # the course-changing edit, never replaced
        for step, marks in self.lines.items():
            for mark in marks:
                assert step in texts and re.search(rf"\b{mark}\b", texts[step]), (step, mark,
                                                                                 texts)

    @invariant()
    def the_log_replays_to_the_same_state(self) -> None:
        team = self.race.team
        for _ in replay_events(self.replica, team.events[self.replayed:]):
            pass
        self.replayed = len(team.events)
        assert self.replica.snapshot() == team.coordinator.snapshot()


def test_replan_offers_and_stale_edits_in_every_order() -> None:
    run = ReplanRaceMachine.TestCase
    run.settings = settings(max_examples=60, stateful_step_count=12, deadline=None,
                            suppress_health_check=[HealthCheck.too_slow])
    run("runTest").runTest()
