"""A member's own copy of its view and chat, kept up to date from the env's :class:`Update` frames.

The env sends each member only what an event changed (``docs/notifications.md``). The member
keeps the rest: :class:`MemberCopy` applies each update and hands back the whole
:class:`Notification` the member acts on. When an update cannot apply (one was missed, or a
component is not at the version the update expects) the copy says it is out of sync, and the
member asks the env for a sync, whose whole update replaces the copy.

Applying an update costs what the update carries, plus one pass over the view's few component
names and one copy of the chat list for the notification handed out (a copy of pointers, not of
the messages).
"""

from __future__ import annotations

from collections.abc import Iterable

from cogym_lab.core.messages import ChatMessage, Notification, SessionMoment, Update
from cogym_lab.core.observation import Component, Observation
from cogym_lab.errors import CogymError


class OutOfSync(CogymError):
    """An update that the copy cannot apply: the member must ask for a sync."""


class MemberCopy:
    """One member's view and chat as its updates built them."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.seq: int | None = None  # the last update applied
        self._components: dict[str, tuple[int, Component]] = {}  # in display order
        self._chat: list[ChatMessage] = []
        #: The copy came from a whole update and no delta followed yet: a watcher's snapshot
        #: may be newer than the member's last update, so the next delta may start before it.
        self._from_whole = False
        self.out_of_sync = False  # a sync was asked for; deltas wait for its whole update

    def apply(self, update: Update) -> Notification | None:
        """Apply ``update`` and return the notification it makes; ``None`` for an update that
        is older than the copy. Raises :class:`OutOfSync` when it cannot apply (then every
        delta is refused until a whole update arrives)."""
        if update.whole:
            self._replace(update)
        else:
            if self.out_of_sync:
                raise OutOfSync(f"{self.role} waits for a sync before it takes updates again")
            if self.seq is not None and update.seq <= self.seq:
                return None
            try:
                self._apply_delta(update)
            except OutOfSync:
                self.out_of_sync = True
                raise
        self.seq = update.seq
        return self.notification(update)

    @property
    def view(self) -> Observation:
        """The view as the copy holds it now."""
        # Validated components already: construct, as the coordinator does on its hot path.
        return Observation.model_construct(
            components=tuple(c for _, c in self._components.values()))

    @property
    def chat(self) -> list[ChatMessage]:
        """The chat as the copy holds it now (a copy of the list)."""
        return list(self._chat)

    def versions(self) -> dict[str, int]:
        """Each component's version, in display order."""
        return {name: version for name, (version, _) in self._components.items()}

    def _replace(self, update: Update) -> None:
        given = {component.name: component for component in update.components}
        missing = [name for name in update.versions if name not in given]
        if missing:  # a whole update that lacks a part is a bug of its sender, not a gap
            raise ValueError(f"A whole update lacks components {missing}")
        self._components = {name: (version, given[name])
                            for name, version in update.versions.items()}
        self._chat = list(update.messages)
        self._from_whole = True
        self.out_of_sync = False

    def _apply_delta(self, update: Update) -> None:
        if self.seq is None:
            raise OutOfSync(f"{self.role} got a change before any whole view")
        follows = update.prev_seq == self.seq or (
            self._from_whole and update.prev_seq is not None and update.prev_seq <= self.seq)
        if not follows:
            raise OutOfSync(f"{self.role} missed an update: it holds {self.seq}, "
                            f"the update follows {update.prev_seq}")
        changed = {component.name: component for component in update.components}
        rebuilt: dict[str, tuple[int, Component]] = {}
        for name, version in update.versions.items():
            if name in changed:
                rebuilt[name] = (version, changed[name])
                continue
            held = self._components.get(name)
            if held is None or held[0] != version:
                raise OutOfSync(f"{self.role} holds {name!r} at version "
                                f"{held[0] if held else None}, the update expects {version}")
            rebuilt[name] = held
        self._components = rebuilt
        self._append(update.messages)
        self._from_whole = False

    def _append(self, messages: Iterable[ChatMessage]) -> None:
        last = self._chat[-1].seq if self._chat else 0
        for message in messages:
            if message.seq > last:
                self._chat.append(message)
                last = message.seq

    def notification(self, update: Update) -> Notification:
        """The notification ``update``, the last one applied, makes with the copy as it is."""
        # Already validated models: skip re-validating, as the coordinator did before.
        return Notification.model_construct(
            **{name: getattr(update, name) for name in SessionMoment.model_fields},
            view=self.view,
            chat=list(self._chat),
            new_messages=[m for m in update.messages
                          if m.sender != self.role and (update.prev_seq is None
                                                        or m.seq > update.prev_seq)],
            merged_events=[],
        )

    def whole_update(self, latest: Update) -> Update:
        """``latest`` (the last update applied) as a whole update of the copy: what a panel
        that connects later is sent to start its own copy."""
        return latest.model_copy(update={
            "whole": True, "components": [c for _, c in self._components.values()],
            "versions": self.versions(), "messages": list(self._chat)})


class MemberCopies:
    """A copy per member, for code that runs a :class:`~cogym_lab.core.coordinator.Coordinator`
    itself (tests, notebooks) and wants the whole notifications each member would act on."""

    def __init__(self) -> None:
        self.copies: dict[str, MemberCopy] = {}

    def apply(self, updates: Iterable[Update]) -> list[Notification]:
        """The notifications ``updates`` make, in order (an out-of-date one is left out)."""
        made = []
        for update in updates:
            copy = self.copies.setdefault(update.recipient, MemberCopy(update.recipient))
            notification = copy.apply(update)
            if notification is not None:
                made.append(notification)
        return made


__all__ = ["MemberCopies", "MemberCopy", "OutOfSync"]
