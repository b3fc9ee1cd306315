"""The server's door to its sessions: every handler reaches a session through a :class:`Gate`
for the caller, which applies the session's :class:`~cogym_lab.runtime.access.SessionAccess`.

A caller who may not see a session at all gets ``404`` (ids of others' sessions are not
confirmed); one who sees it but asks for more than its share gets ``403``. Watching a member
read-only (:meth:`Gate.watch`) is the owner's alone: a seat holder sees its own seat, not the
others' views.
"""

from __future__ import annotations

from typing import Any

from cogym_lab.runtime.access import TOKEN_HOLDER, SessionAccess, visible_state
from cogym_lab.runtime.hosting import HostedSession, HostingError, SessionHost
from cogym_lab.runtime.stored import StoredSession

Entry = HostedSession | StoredSession


class Gate:
    """What one identity (``who``) may reach of ``host``'s sessions."""

    def __init__(self, host: SessionHost, who: str) -> None:
        self.host = host
        self.who = who

    # -- finding --------------------------------------------------------------------------------

    def entry(self, session_id: str) -> Entry:
        """A session the caller owns or holds a seat of; 404 otherwise."""
        entry = self.host.find(session_id)
        if not access_of(entry).can_see(self.who, [*entry.people, *entry.outside]):
            raise HostingError(f"No session {session_id!r}.", status=404)
        return entry

    def owned(self, session_id: str, doing: str) -> Entry:
        """A session the caller created; 403 for one it only holds a seat of."""
        entry = self.entry(session_id)
        if not access_of(entry).is_owner(self.who):
            raise HostingError(f"Only the user who created session {session_id!r} may "
                               f"{doing} it.", status=403)
        return entry

    def seat(self, session_id: str, role: Any) -> Entry:
        """A session in which the caller holds seat ``role``: 400 when ``role`` is no person
        seat, 403 when it is someone else's."""
        entry = self.entry(session_id)
        if not isinstance(role, str) or role not in entry.people:
            seats = ", ".join(self.seats(entry)) or "none"
            raise HostingError(f"{_shown(role)} is not a person seat of this session (your "
                               f"seats: {seats}).", status=400)
        if role not in self.seats(entry):
            raise HostingError(f"Seat {role!r} of session {session_id!r} is not yours.",
                               status=403)
        return entry

    def outside_seat(self, session_id: str, role: Any) -> Entry:
        """A session in which the caller holds outside seat ``role`` (an MCP client drives
        it): 400 when ``role`` is no outside seat (a person seat is a panel's, not an MCP
        client's), 403 when it is someone else's."""
        entry = self.entry(session_id)
        if not isinstance(role, str) or role not in entry.outside:
            seats = ", ".join(self.outside_seats(entry)) or "none"
            raise HostingError(f"{_shown(role)} is not an outside seat of this session (your "
                               f"outside seats: {seats}); a session takes an outside agent in "
                               "a seat its create request names in 'outside'.", status=400)
        if role not in self.outside_seats(entry):
            raise HostingError(f"Seat {role!r} of session {session_id!r} is not yours.",
                               status=403)
        return entry

    def watch(self, session_id: str, role: Any) -> Entry:
        """A session whose member ``role`` the caller may watch read-only: only the session's
        creator may (it sees every view anyway: it chose the team). 404 for a session the caller
        cannot see, 403 for one it only holds a seat of, 400 when ``role`` is no member."""
        entry = self.owned(session_id, "watch")
        members = [member.get("role") for member in entry.summary().get("members") or []
                   if isinstance(member, dict)]
        if not isinstance(role, str) or role not in members:
            shown = ", ".join(str(m) for m in members) or "none yet"
            raise HostingError(f"{_shown(role)} is not a member of session {session_id!r} "
                               f"(its members: {shown}).", status=400)
        return entry

    def seats(self, entry: Entry) -> list[str]:
        return access_of(entry).seats_of(self.who, entry.people)

    def outside_seats(self, entry: Entry) -> list[str]:
        """The outside seats the caller holds: the owner's, but those given to others."""
        return access_of(entry).seats_of(self.who, entry.outside)

    # -- reading --------------------------------------------------------------------------------

    def summary(self, entry: Entry) -> dict[str, Any]:
        """The session's summary, with the caller's own seats as ``seats``. Where it was
        created (the creator's kernel and notebook) is the creator's to see only."""
        owned = access_of(entry).is_owner(self.who)
        summary = entry.summary() | {"seats": self.seats(entry), "owned": owned,
                                     "outside_seats": self.outside_seats(entry)}
        if not owned:
            summary["created_in"] = None
        return summary

    def sessions(self) -> list[dict[str, Any]]:
        """The sessions the caller created or holds seats of, oldest first."""
        return [self.summary(entry) for entry in self.host.entries()
                if access_of(entry).can_see(self.who, [*entry.people, *entry.outside])]

    def snapshot(self, session_id: str) -> dict[str, Any]:
        """Summary, state, result and ratings, as far as the caller's seats may read them."""
        entry = self.entry(session_id)
        seats = self.seats(entry)
        details = entry.details()
        ratings = {role: rating for role, rating in self.host.ratings(session_id).items()
                   if role in seats}
        return self.summary(entry) | details | {
            "state": visible_state(details.get("state"), seats), "ratings": ratings}


def access_of(entry: Entry) -> SessionAccess:
    """An entry's access; one hosted without any (a kernel's, a test's) is the token holder's."""
    if entry.access is None:
        entry.access = SessionAccess(owner=TOKEN_HOLDER)
    return entry.access


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "…"
