"""The sessions a host knows: those it runs (or ran) and those an earlier server left in its
results folder, found by id; and, after an ended session's time is up, the hosted one
forgotten for its results folder.

A server that starts calls :meth:`SessionRegistry.recover`: sessions an earlier server left
behind are listed again, finished ones as they are and open ones (no recorded end) marked
``interrupted``, to be resumed.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import time
from pathlib import Path

from cogym_lab.nodes.results import SESSION_FILE, read_session, update_session
from cogym_lab.runtime.ended import EndedSession
from cogym_lab.runtime.errors import HostingError
from cogym_lab.runtime.hosted import HostedSession, created_at_of
from cogym_lab.runtime.models import HOSTING_FILE, HostingRecord
from cogym_lab.runtime.stored import (
    STORED_FIELDS,
    StoredSession,
    runs_elsewhere,
    summary_fields,
    write_json,
)

log = logging.getLogger(__name__)

SHUTDOWN_REASON = "the server stopped"


class SessionRegistry:
    """Every session known here, by id: ``sessions`` hosted by this server, ``stored`` known
    from their files only."""

    def __init__(self) -> None:
        self.sessions: dict[str, HostedSession] = {}
        self.stored: dict[str, StoredSession] = {}
        self._evictions: dict[str, asyncio.TimerHandle] = {}

    def get(self, session_id: str) -> HostedSession:
        """A session this server runs (or ran). Raises ``HostingError``: 404 for an unknown id,
        409 for a session from an earlier server that has not been resumed."""
        hosted = self.sessions.get(session_id)
        if hosted is not None:
            return hosted
        stored = self.stored_session(session_id)
        if stored.evicted:
            raise HostingError(f"Session {session_id!r} is {stored.status}; only its results "
                               "are kept now (it ended more than finished_session_ttl seconds "
                               "ago).", status=409)
        hint = " Resume it first." if stored.status == "interrupted" else ""
        raise HostingError(f"Session {session_id!r} is {stored.status} (from an earlier server "
                           f"run).{hint}", status=409)

    def stored_session(self, session_id: str) -> StoredSession:
        """A session known from its files only; ``HostingError`` 404 if there is none."""
        try:
            return self.stored[session_id]
        except KeyError:
            raise HostingError(f"No session {session_id!r}.", status=404) from None

    def find(self, session_id: str) -> HostedSession | StoredSession:
        """A session this server runs or an earlier one left; ``HostingError`` 404 if neither."""
        return self.sessions.get(session_id) or self.stored_session(session_id)

    def entries(self) -> builtins.list[HostedSession | StoredSession]:
        """Every session known here, oldest first."""
        known: builtins.list[HostedSession | StoredSession] = [*self.stored.values(),
                                                              *self.sessions.values()]
        return sorted(known, key=created_at_of)

    def running(self, owner: str | None = None) -> int:
        """How many sessions run here now (those of ``owner`` only, when given)."""
        return sum(1 for hosted in self.sessions.values() if hosted.status == "running"
                   and (owner is None or (hosted.access is not None
                                          and hosted.access.owner == owner)))

    def recover(self, results_dir: Path) -> builtins.list[StoredSession]:
        """List the sessions an earlier server left in ``results_dir``.

        A session whose ``session.json`` records no end (the server was killed) is marked
        ``interrupted`` there; its log is left as it is. Call once, when the server starts.
        """
        found = []
        for path in sorted(results_dir.glob(f"*/{HOSTING_FILE}")):
            directory = path.parent
            try:
                record = HostingRecord.model_validate_json(path.read_text(encoding="utf-8"))
                run = read_session(directory) if (directory / SESSION_FILE).is_file() else {}
            except (OSError, ValueError) as error:
                log.warning("skipping %s: %s", directory, error)
                continue
            if record.session_id in self.sessions or runs_elsewhere(record):
                continue
            stored = StoredSession(directory=directory, record=record, record_of_run=run)
            if run.get("status") not in ("finished", "failed", "interrupted"):
                marks = {"status": "interrupted", "interrupted_at": time.time(),
                         "interrupt_reason": SHUTDOWN_REASON}
                if run:
                    stored.record_of_run = summary_fields(update_session(directory, **marks))
                else:  # it never started: a session.json says so for every reader
                    stored.record_of_run = {"session_id": record.session_id,
                                            "task": record.spec.task, **marks}
                    write_json(directory / SESSION_FILE, stored.record_of_run)
            self.stored[record.session_id] = stored
            found.append(stored)
        return found

    # -- forgetting ended sessions --------------------------------------------------------------

    def schedule_eviction(self, session_id: str, ttl: float | None) -> None:
        """Forget an ended session after ``ttl`` seconds (zero or less: now; ``None``: never)."""
        if ttl is None:
            return
        if ttl <= 0:
            self.evict(session_id)
            return
        self._evictions[session_id] = asyncio.get_running_loop().call_later(
            ttl, self.evict, session_id)

    def evict(self, session_id: str) -> None:
        """Forget an ended session for a :class:`StoredSession` on its results folder (as a
        later server would know it); it is listed, read and rated as before."""
        self._evictions.pop(session_id, None)
        hosted = self.sessions.get(session_id)
        if hosted is None or not isinstance(hosted.session, EndedSession):
            return
        directory = hosted.directory
        if directory is None:  # nothing on disk to read it from: it stays as it is
            return
        summary = hosted.summary()
        run = {key: summary[key] for key in STORED_FIELDS if key in summary}
        run["team"] = summary["members"]  # named as in session.json
        self.stored[session_id] = StoredSession(
            directory=directory, record=hosted.record(), record_of_run=run, evicted=True)
        del self.sessions[session_id]

    def cancel_evictions(self) -> None:
        for timer in self._evictions.values():
            timer.cancel()
        self._evictions.clear()


__all__ = ["SHUTDOWN_REASON", "SessionRegistry"]
