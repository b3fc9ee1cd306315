"""The notifications members would act on, for tests that drive a Coordinator by hand.

A coordinator sends updates (what each event changed); members keep copies. ``notified`` keeps
one set of copies per coordinator and turns a transition's updates into the members' whole
notifications, once per transition however often it is asked. A test need not ask for every
transition: a copy that missed some catches up from a watcher's snapshot, which changes nothing
in the coordinator.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from cogym_lab.core import Notification
from cogym_lab.core.coordinator import Coordinator, Transition
from cogym_lab.core.member_copy import MemberCopies, MemberCopy, OutOfSync


class _Record:
    def __init__(self) -> None:
        self.copies = MemberCopies()
        self.made: dict[int, tuple[Transition, list[Notification]]] = {}


_RECORDS: WeakKeyDictionary[Coordinator, _Record] = WeakKeyDictionary()


def notified(coordinator: Coordinator, transition: Transition) -> list[Notification]:
    """The notifications ``transition`` (made by ``coordinator``) gives its members. Ask in the
    order the transitions were made: each member's copy follows its updates."""
    record = _RECORDS.setdefault(coordinator, _Record())
    made = record.made.get(id(transition))
    if made is not None and made[0] is transition:
        return made[1]
    notifications = []
    for update in transition.updates:
        copy = record.copies.copies.setdefault(update.recipient, MemberCopy(update.recipient))
        try:
            notification = copy.apply(update)
        except OutOfSync:  # transitions the test did not ask about: catch up
            snapshot = coordinator.watch(update.recipient, update.time)
            assert snapshot is not None
            copy.apply(snapshot)
            notification = copy.notification(update)
        if notification is not None:
            notifications.append(notification)
    record.made[id(transition)] = (transition, notifications)
    return notifications


__all__ = ["notified"]
