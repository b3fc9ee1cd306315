"""A user that replays a logged session's user turns: the fixed side of the noise study.

To measure how much an agent alone varies, its sessions are run again against the very turns the
simulated user took the first time (``cogym_lab.eval.batch.noise``). :class:`ReplayUser` holds those
turns (the user's messages and actions as ``events.jsonl`` logged them, in order) and gives the
next one each time it is asked to act, whatever it is shown: one logged turn per turn. When they
run out it does nothing, and the session ends as its rules say (the agent finishing, idling).

A simulated user's ``usage.json`` lists the move it chose on each turn, "do nothing" included;
when those moves line up with the logged acts, the turns it passed are replayed as passes
(:func:`turn_script`), so its acts come on the same turns as before. Otherwise (a person, a user
type that keeps no moves, a move that produced nothing to log) the logged acts are replayed one
per turn, and those after a pass come sooner than they did.

It does not react. Where the first session's user answered a question, the replay says the same
words on the same turn, asked or not. An act that named something of the first session (a
confirmation request's id) may be refused now. The measure is meant to hold the user's side
fixed, and this is as fixed as a scripted side can be.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from cogym_lab.core.member import MemberSetup, MemberType
from cogym_lab.core.messages import Event, EventType, Notification, SessionContext

#: Logged events that are no act of their member: keep-alives and the session's own.
NOT_TURNS = frozenset({EventType.WAIT, EventType.START, EventType.TICK, EventType.CLOCK,
                       EventType.END, EventType.SYNC, EventType.EDIT})


#: The simulated user's name for a turn it passed (``usage.json`` → ``moves``).
PASSED = "NOTHING"


def logged_turns(events: Iterable[Event], role: str) -> list[str]:
    """``role``'s acts in a session's log, in order, as it sent them (refused ones included:
    they were its turns too); waits are left out."""
    return [event.action for event in events
            if event.actor == role and event.action and event.type not in NOT_TURNS]


def turn_script(events: Iterable[Event], role: str,
                moves: Sequence[str] | None = None) -> list[str | None]:
    """What ``role`` did on each of its turns: its logged acts, with ``None`` for the turns
    ``moves`` (the simulated user's own record) says it passed, when the moves that are not
    passes are exactly as many as the acts logged; else the acts alone."""
    acts = logged_turns(events, role)
    if not moves or sum(move != PASSED for move in moves) != len(acts):
        return list(acts)
    remaining = iter(acts)
    return [None if move == PASSED else next(remaining) for move in moves]


class ReplayUser:
    """Gives the logged ``turns`` back, one per call of :meth:`act` (``None``: pass that
    turn); then nothing."""

    def __init__(self, turns: Sequence[str | None]) -> None:
        self.turns = [None if turn is None else str(turn) for turn in turns]
        self.replayed = 0
        self.asked = 0

    def start(self, context: SessionContext) -> None:
        self.context = context

    async def act(self, notification: Notification) -> str | None:
        self.asked += 1
        if self.replayed >= len(self.turns):
            return None
        turn = self.turns[self.replayed]
        self.replayed += 1
        return turn

    def end(self, final: Notification) -> None:
        if self.context.results_dir:
            folder = Path(self.context.results_dir)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "usage.json").write_text(json.dumps(
                {"member": "replay-user", "turns": self.asked, "replayed": self.replayed,
                 "logged": len(self.turns)}, indent=2))


def _build(setup: MemberSetup) -> Any:
    turns = setup.options.get("turns", [])
    if not isinstance(turns, list) or not all(turn is None or isinstance(turn, str)
                                              for turn in turns):
        raise ValueError("the replay user's option 'turns' is a list of logged actions "
                         "(null for a turn passed)")
    return ReplayUser(turns)


REPLAY_USER = MemberType(
    name="replay", kind="user", build=_build, uses_lm=False,
    summary="Replays a logged user's turns in order, one per turn (options: turns).")

__all__ = ["NOT_TURNS", "PASSED", "REPLAY_USER", "ReplayUser", "logged_turns", "turn_script"]
