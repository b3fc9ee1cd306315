"""A session this server runs (or ran): :class:`HostedSession`, what the host keeps of it from
its creation to the moment it forgets it for its results folder
(:class:`~cogym_lab.runtime.stored.StoredSession`)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogym_lab.bus import Bus
from cogym_lab.core.settlements import INTERRUPTED, StepsClosed, ended_before
from cogym_lab.nodes.session import Session, SessionResult
from cogym_lab.runtime.access import SessionAccess
from cogym_lab.runtime.ended import EndedSession
from cogym_lab.runtime.errors import HostingError
from cogym_lab.runtime.models import HOSTING_FILE, CreatedIn, HostingRecord
from cogym_lab.runtime.settlements import Settlements
from cogym_lab.runtime.stored import StoredSession, this_process, write_json
from cogym_lab.sessions.spec import SessionSpec

log = logging.getLogger(__name__)


@dataclass
class HostedSession:
    """A session running (or run) by this server.

    Once it has ended, ``session`` is an :class:`EndedSession`: the coordinator, env, members
    and bus are given back, ``bus`` is a small stand-in holding the last statuses, and
    ``result`` loses its ``outcome`` when ``session.json`` holds it (``details()`` reads it from
    there). After the host's ``finished_session_ttl`` the host forgets it for a
    :class:`StoredSession` read from its results folder.
    """

    session: Session | EndedSession
    team: str
    task: str
    people: list[str]
    spec: SessionSpec
    bus: Bus | None = None
    created_at: float = field(default_factory=time.time)
    runner: asyncio.Task[SessionResult | None] | None = None
    result: SessionResult | None = None
    error: str | None = None
    restored_state: dict[str, Any] | None = None  # the state a resume rebuilt from the log
    resumed: bool = False  # carried on from an earlier server's log, not created here
    access: SessionAccess | None = None  # whose it is; None: this process's own (no server)
    #: The env's answers to the actions published here, while the session runs.
    settlements: Settlements | None = None
    #: The notebook cell that asked for the session, if one did (its kernel, notebook, cell).
    created_in: CreatedIn | None = None
    #: Which data the task reads (``"full"``, ``"sample"``; ``None``: no dataset), and, on the
    #: sample, the paragraph that says so and how to get the full data, worded for where the
    #: session was asked for (a notebook's ``%cogym data download``).
    data: str | None = None
    data_notice: str | None = None

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def outside(self) -> list[str]:
        """The seats outside agents take (over MCP): team members the host joins, as it
        does the person seats, and that an MCP client drives."""
        return list(self.spec.outside)

    @property
    def directory(self) -> Path | None:
        return self.session.results_dir

    @property
    def live(self) -> Session:
        """The running session; ``HostingError`` 409 once it has ended and been released."""
        if isinstance(self.session, EndedSession):
            raise HostingError(f"Session {self.session_id!r} has ended.", status=409)
        return self.session

    @property
    def kernel_id(self) -> str | None:
        """The kernel the session belongs to: the one of the notebook cell that created it, or
        of the notebook it runs in; ``None`` when neither is known (REST, a script)."""
        if self.created_in is not None:
            return self.created_in.kernel_id
        notebook = self.spec.notebook
        return notebook.kernel_id if notebook is not None else None

    @property
    def status(self) -> str:
        if isinstance(self.session, EndedSession):
            return self.session.status
        if self.runner is None or not self.runner.done():
            return "running"
        return ended_status(self)

    @property
    def end_reason(self) -> str | None:
        if self.result is not None:
            return self.result.end_reason
        if isinstance(self.session, EndedSession):
            return self.session.end_reason
        return self.session.coordinator.end_reason

    def summary(self) -> dict[str, Any]:
        protocol = (self.session.protocol if isinstance(self.session, EndedSession)
                    else self.session.env.protocol)
        return {
            "session_id": self.session_id,
            "task": self.task,
            "team": self.team,
            "protocol": protocol,
            "members": [member.model_dump() for member in self.session.team],
            "people": list(self.people),
            "outside": self.outside,
            "status": self.status,
            "end_reason": self.end_reason,
            "error": self.error,
            "created_at": self.created_at,
            "created_in": (self.created_in.model_dump(mode="json", exclude_none=True)
                           if self.created_in is not None else None),
            "results_dir": str(self.directory) if self.directory else None,
            "delivered": self.result.delivered if self.result else None,
            "scores": self.result.scores if self.result else None,
            "score_reports": ([r.model_dump(mode="json") for r in self.result.score_reports]
                              if self.result else None),
            "data": self.data,
            "data_notice": self.data_notice,
        }

    def details(self) -> dict[str, Any]:
        result = self.result.model_dump(mode="json") if self.result else None
        if isinstance(self.session, EndedSession):
            state, outcome = self.session.final()
            if result is not None and self.session.on_disk:
                result["outcome"] = outcome
            return {"state": state, "result": result}
        coordinator = self.session.coordinator
        return {
            # None until the session starts: the env has no state before its reset
            "state": coordinator.snapshot() if coordinator.started_at else None,
            "result": result,
        }

    def release(self, status: str, bus: Bus | None) -> None:
        """Give back what only a running session needs; keep what :meth:`summary`,
        :meth:`details` and a late panel read. ``bus`` replaces the session's own (closed)."""
        if isinstance(self.session, EndedSession):
            return
        ended = EndedSession.of(self.session, status)
        if ended.on_disk and self.result is not None:
            self.result = self.result.model_copy(update={"outcome": None})
        self.session = ended
        self.bus = bus
        self.runner = None  # a done task holds the result, and a failure's traceback the frames
        self.restored_state = None

    def record(self) -> HostingRecord:
        """What ``hosting.json`` says of this session."""
        return HostingRecord(session_id=self.session_id, spec=self.spec.without_secrets(),
                             team=self.team, people=self.people, created_at=self.created_at,
                             access=self.access, created_in=self.created_in,
                             **this_process())

    def save_record(self) -> None:
        """Write ``hosting.json`` (the request that made the session, and whose it is)."""
        directory = self.directory
        assert directory is not None
        directory.mkdir(parents=True, exist_ok=True)
        # A value JSON cannot hold (a DataFrame from a kernel) is kept as its repr: such a
        # session can be listed after a restart, not rebuilt.
        write_json(directory / HOSTING_FILE, self.record().model_dump(mode="python"))

    async def refuse_pending(self, last_word_wait: float) -> None:
        """The run is over: every action still waiting for the env's answer is refused (the
        env node normally did so already), after waiting up to ``last_word_wait`` seconds for
        the node's last answers when it sent its last word. Never raises."""
        settlements = self.settlements  # kept, closed: an action from now on gets a 409
        if settlements is None:
            return
        try:
            session = self.session
            node = session.env_node if isinstance(session, Session) else None
            if node is not None and node.closed is not None:
                # It published its last word after all its answers: an answer still on its way
                # (on Redis) must resolve its action first, applied ones included.
                await settlements.last_word(last_word_wait)
                closed = node.closed
            elif isinstance(session, Session) and session.interrupted:
                closed = StepsClosed(interrupted=True, message=INTERRUPTED)
            else:
                reason = self.end_reason or ("failed" if self.error else None)
                closed = StepsClosed(end_reason=reason, message=ended_before(reason))
            settlements.close(closed, known=node.unsent if node is not None else None)
            await settlements.stop()
        except Exception:
            log.exception("session %s: refusing its last actions failed", self.session_id)


def ended_status(hosted: HostedSession) -> str:
    """How a session whose run is over ended, from what the run left."""
    assert isinstance(hosted.session, Session)
    if hosted.session.interrupted:
        return "interrupted"
    return "failed" if hosted.error else "finished"




def created_at_of(entry: HostedSession | StoredSession) -> float:
    return entry.created_at if isinstance(entry, HostedSession) else entry.record.created_at


def final_outcome(entry: HostedSession | StoredSession) -> tuple[bool, Any]:
    """Whether the session has ended, and its final outcome. A hosted session's result has
    it once the run is over; before that (grading), the env's outcome is final as soon as the
    coordinator has ended."""
    if isinstance(entry, HostedSession) and isinstance(entry.session, Session):
        if entry.result is not None:
            return True, entry.result.outcome
        if entry.session.coordinator.end_reason is None:
            return False, None
        return True, entry.session.env.outcome()
    result = entry.details().get("result")
    if isinstance(result, dict):
        return True, result.get("outcome")
    return entry.status in ("finished", "failed"), None  # interrupted: it may go on


__all__ = ["HostedSession", "created_at_of", "ended_status", "final_outcome"]
