"""What a member had been shown when it decided: its view and chat as its own updates built them.

A member never sees the shared state itself: it keeps a copy built from the updates it was sent
(:class:`~cogym_lab.core.member_copy.MemberCopy`) and decides on a notification of that copy. An
LM member's call takes time, and what arrives meanwhile (a person's "Stop, please") is logged
before its act but was never in its prompt. So the context of a decision is rebuilt here from
the replayed updates, as of the update the member acted on:

* ``seen_seq`` recorded with the act (``info["seen_seq"]``, which member nodes send with every
  step): the copy right after that update, exactly what its prompt was built from;
* an act that records none (a person's act from a panel that does not send it, or a log
  written before cogym_lab recorded it): the copy after the last update the member was sent
  before the act, the most it can have seen.

Replay sends no syncs (a member that reconnected was sent its whole state then); the copy is the
same, because a sync shows what the updates before it built.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.member_copy import MemberCopy, OutOfSync
from cogym_lab.core.messages import ChatMessage, Event, Update
from cogym_lab.nodes.replay import rebuild_coordinator
from cogym_lab.nodes.restore import replay_events
from cogym_lab.nodes.results import read_events, read_session


@dataclass(frozen=True)
class Shown:
    """One member's view and chat as of update ``seen_seq`` (``None``: it had been sent none)."""

    seen_seq: int | None
    recorded: bool  # the act named the update it was made on (else: the last one sent before)
    view: dict[str, Any]
    chat: list[dict[str, Any]]


def recorded_seen_seq(event: Event) -> int | None:
    """The update ``event``'s actor acted on, as the log recorded it; ``None`` when it did not
    (or recorded something that cannot be: an update not older than the act)."""
    seen = event.info.get("seen_seq")
    if isinstance(seen, bool) or not isinstance(seen, int) or not 0 < seen < event.seq:
        return None
    return seen


def shown_before(results_dir: str | Path, acts: Iterable[Event]) -> dict[int, Shown]:
    """Act ``seq`` -> what its actor had been shown when it chose it (see the module).

    Replays the session's log once; raises :class:`~cogym_lab.nodes.restore.ReplayMismatch`
    when it does not replay."""
    wanted: dict[int, list[tuple[Event, bool]]] = defaultdict(list)  # seq to take it at
    for act in acts:
        recorded = recorded_seen_seq(act)
        wanted[act.seq - 1 if recorded is None else recorded].append((act, recorded is not None))
    coordinator = rebuild_coordinator(read_session(results_dir))
    copies: dict[str, MemberCopy] = {}
    stale: set[str] = set()  # copies an update could not apply to (never, on a sound log)
    pending: list[Update] = []
    shown: dict[int, Shown] = {}
    for event, transition in replay_events(coordinator, read_events(results_dir)):
        if transition is not None:
            pending += transition.updates
        # A transition's later events (an END after a FINISH) have their updates in it too.
        while pending and pending[0].seq <= event.seq:
            _apply(copies, stale, pending.pop(0))
        for act, recorded in wanted.pop(event.seq, ()):
            role = str(act.actor)
            shown[act.seq] = _shown(coordinator, copies.get(role), role in stale, role,
                                    event.seq, recorded)
    for acts_left in wanted.values():  # taken before the first event: nothing was shown yet
        for act, recorded in acts_left:
            shown[act.seq] = Shown(seen_seq=None, recorded=recorded, view={}, chat=[])
    return shown


def _apply(copies: dict[str, MemberCopy], stale: set[str], update: Update) -> None:
    role = update.recipient
    copy = copies.setdefault(role, MemberCopy(role))
    try:
        copy.apply(update)
    except OutOfSync:
        stale.add(role)


def _shown(coordinator: Coordinator, copy: MemberCopy | None, stale: bool, role: str,
           seq: int, recorded: bool) -> Shown:
    if copy is None or copy.seq is None:
        return Shown(seen_seq=None, recorded=recorded, view={}, chat=[])
    if stale:  # a gap in the replayed updates: the state itself is the best account left
        return Shown(seen_seq=seq, recorded=recorded,
                     view=coordinator.env.view(role).model_dump(mode="json"),
                     chat=[_message(m) for m in coordinator.visible_chat(role)])
    return Shown(seen_seq=copy.seq, recorded=recorded, view=copy.view.model_dump(mode="json"),
                 chat=[_message(m) for m in copy.chat])


def _message(message: ChatMessage) -> dict[str, Any]:
    return {"seq": message.seq, "sender": message.sender, "text": message.text,
            "to": message.to}


__all__ = ["Shown", "recorded_seen_seq", "shown_before"]
