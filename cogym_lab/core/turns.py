"""Strict turn-taking: the rule a session follows when its interaction is ``"turns"``.

Co-Gym coordinates its members through a notification protocol: anyone may act at any time,
and each change notifies whom it concerns. Its ablation (Co-Gym paper §5.3, Table 6) compares
that with a version in which the notification protocol is off and the members must take turns.
This module holds that version's rule; the :class:`~cogym_lab.core.coordinator.Coordinator`
applies it, so the turn is part of the shared state that the event log rebuilds.

* The members take turns in a fixed order, the team's (a paused agent is skipped).
* Only the member in turn is woken: each event notifies the member whose turn it is after it,
  and nobody else (an END still reaches everyone). A member sees the state on its turn only.
* The member in turn acts once, and the turn passes to the next: a task action, a message, a
  confirmation act, a pause or resume, or a wait (doing nothing passes the turn). A refused
  act keeps the turn: the member is told why and tries again (refused attempts count as steps,
  so a member stuck on bad output still meets its step limit).
* An act whose slow work (an LM draft, a kernel cell) is still running holds the turn: nobody
  may act until its result is applied (or fails), and then the turn passes.
* An act out of turn is refused with an error that says whose turn it is. It is logged,
  notifies nobody and changes nothing: no step is counted and the turn stays where it was.
* An idle tick (no step for ``idle_seconds``) passes the turn of a member that let it go by.
  Whole rounds of passes in a row end the session as idle: ``max_idle_ticks`` rounds, where
  the default interaction ends after that many idle ticks.
* What the env saw a member do outside the session (``apply_observed``: a person's own kernel)
  cannot be refused, since it already happened: it is recorded and passes no turn.

A clocked (real-time) env cannot take turns: its world moves on every tick whoever acts.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final, Literal, cast

from cogym_lab.core.messages import EventType, Turn

Interaction = Literal["notifications", "turns"]
NOTIFICATIONS: Final = "notifications"
TURNS: Final = "turns"
INTERACTIONS: tuple[Interaction, ...] = (NOTIFICATIONS, TURNS)


def check_interaction(value: Any) -> Interaction:
    """``value`` if it names an interaction; ``ValueError`` saying which ones exist."""
    if value not in INTERACTIONS:
        raise ValueError(f"interaction must be one of {', '.join(map(repr, INTERACTIONS))}, "
                         f"not {value!r}")
    return cast(Interaction, value)


def refuse_clocked(interaction: str, env_name: str, tick_seconds: float | None) -> None:
    """``ValueError`` for a clocked env under turn-taking: its world advances on a clock,
    whether or not anyone acts, so there is no turn to wait for."""
    if interaction == TURNS and tick_seconds is not None:
        raise ValueError(f"Task {env_name!r} runs in real time (its world moves on every "
                         f"{tick_seconds} s), so it cannot run with interaction = \"turns\": "
                         "strict turn-taking needs a world that waits for each member's act. "
                         "Use the default interaction, \"notifications\".")


class TurnTaking:
    """The turn state of one session: whose turn, how many so far, the slow work that holds
    it, and the passes in a row; and the rules that move it on as each event is emitted
    (:meth:`wakes`) and refuse an act out of turn (:meth:`refuses`). No I/O and no events: the
    coordinator asks, and emits."""

    def __init__(self, order: Sequence[str]) -> None:
        if not order:
            raise ValueError("turn-taking needs at least one member")
        self.order = list(order)
        self.role = self.order[0]
        self.number = 0  # 1 once the session starts
        self.work: dict[str, int] = {}  # role -> its slow work not yet applied
        self.passes = 0  # turns passed in a row without an act (waits, idle ticks)

    @property
    def busy(self) -> bool:
        return any(self.work.values())

    def begin(self) -> None:
        """The session starts: the first member of the order is in turn."""
        self.role, self.number, self.work, self.passes = self.order[0], 1, {}, 0

    def may_act(self, role: str) -> bool:
        return role == self.role and not self.busy

    def pass_turn(self, paused: Collection[str], *, idle: bool) -> None:
        """Give the turn to the next member in the order that is not paused (the same member
        when every other is); ``idle`` when the turn went by without an act."""
        start = self.order.index(self.role)
        for step in range(1, len(self.order) + 1):
            candidate = self.order[(start + step) % len(self.order)]
            if candidate not in paused:
                self.role = candidate
                break
        self.number += 1
        self.passes = self.passes + 1 if idle else 0

    def started_work(self, role: str) -> None:
        self.work[role] = self.work.get(role, 0) + 1

    def finished_work(self, role: str) -> bool:
        """One of ``role``'s slow works is over; ``False`` when it had none running."""
        if not self.work.get(role):
            return False
        self.work[role] -= 1
        if not self.work[role]:
            del self.work[role]
        return True

    def refuses(self, role: str, paused: Collection[str], *, follow_up: bool) -> bool:
        """Whether a step of ``role``'s must be refused as out of turn (a paused agent is never
        in turn); ``follow_up``: it is the result of ``role``'s slow work, applied if that work
        runs (a paused member's result is refused as paused)."""
        if follow_up:
            return not self.work.get(role)
        return role in paused or not self.may_act(role)

    def wakes(self, type_: EventType, actor: str | None, info: Mapping[str, Any],
              recipients: Sequence[str], paused: Collection[str]) -> list[str]:
        """Move the turn on as an event of ``type_`` by ``actor`` requires, and return who is
        woken: the member in turn after it (nobody while slow work holds the turn), or
        ``recipients`` (everyone) for the END."""
        if type_ is EventType.END:
            return list(recipients)
        if type_ is EventType.START:
            self.begin()
            return [self.role]
        if type_ is EventType.TICK:  # the member in turn let it go by (unless work holds it)
            if self.busy:
                return []
            self.pass_turn(paused, idle=True)
            return [self.role]
        if actor is None or info.get("out_of_turn") or info.get("observed") \
                or type_ is EventType.FINISH:
            return []
        if info.get("follow_up") or (type_ is EventType.ERROR and info.get("deferred")):
            # The result of slow work (or its failure): the turn it held may pass now.
            if not self.finished_work(actor):
                return []
            if type_ is not EventType.ERROR and info.get("deferred"):
                self.started_work(actor)  # its result started more work
            return self._pass_unless_busy(paused)
        if type_ is EventType.ERROR:  # a refused act: the member in turn tries again
            return [actor] if actor == self.role else []
        if actor != self.role:  # the coordinator lets nobody else act
            return []
        if info.get("deferred"):  # the act started slow work: it holds the turn
            worker = info.get("requester") if type_ is EventType.CONFIRM_ACCEPT else actor
            self.started_work(str(worker))
            return []
        self.pass_turn(paused, idle=type_ is EventType.WAIT)
        return [self.role]

    def _pass_unless_busy(self, paused: Collection[str]) -> list[str]:
        if self.busy:
            return []
        self.pass_turn(paused, idle=False)
        return [self.role]

    def idle_rounds(self) -> int:
        """Whole rounds of the team that went by without an act."""
        return self.passes // len(self.order)

    def current(self) -> Turn:
        return Turn(role=self.role, number=self.number, busy=self.busy)

    def refusal(self, role: str) -> str:
        """Why ``role`` may not act now, in words for the member."""
        if self.busy:
            working = ", ".join(sorted(self.work))
            if role == self.role:
                return ("Your previous action is still running; strict turn-taking is on, so "
                        "the turn passes once its result is in, and you act again on your next "
                        "turn.")
            return (f"It is not your turn: {self.role} has the turn (turn {self.number}) and "
                    f"the work its action started ({working}) is still running. Strict "
                    "turn-taking is on: you will be notified when your turn comes.")
        return (f"It is not your turn: {self.role} acts now (turn {self.number}). Strict "
                "turn-taking is on: you will be notified when your turn comes.")

    def snapshot(self) -> dict[str, Any]:
        return {"role": self.role, "number": self.number, "work": dict(sorted(self.work.items())),
                "passes": self.passes}


__all__ = ["INTERACTIONS", "NOTIFICATIONS", "TURNS", "Interaction", "TurnTaking",
           "check_interaction", "refuse_clocked"]
