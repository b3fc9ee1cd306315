"""Sessions known from their files: what a server finds in its results folder after a restart
(or keeps of a session it hosted once that was evicted), and whose process a session belongs to.

A stored session keeps only the few fields of ``session.json`` its summary shows; the final
state and the result (the outcome may be a whole document) are read from the file when asked
for, so that a server listing thousands of past sessions does not hold their documents."""

from __future__ import annotations

import json
import logging
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogym_lab.nodes.results import SESSION_FILE, read_session
from cogym_lab.runtime.access import TOKEN_HOLDER, SessionAccess
from cogym_lab.runtime.models import HostingRecord

log = logging.getLogger(__name__)

RESULT_FIELDS = ("end_reason", "delivered", "outcome", "scores", "score_reports", "step_counts",
                 "events", "duration", "grading_note", "grading_error")
#: The fields of ``session.json`` a stored session keeps in memory: what its summary shows.
STORED_FIELDS = ("session_id", "task", "team", "protocol", "status", "end_reason", "error",
                 "delivered", "scores", "score_reports", "data")


def summary_fields(run: dict[str, Any]) -> dict[str, Any]:
    """The part of a ``session.json`` that :class:`StoredSession` keeps."""
    return {key: run[key] for key in STORED_FIELDS if key in run}


@dataclass
class StoredSession:
    """A session an earlier server left in ``results_dir``, known only from its files."""

    directory: Path
    record: HostingRecord
    #: ``session.json``'s summary fields (``{}`` if the session never started): see
    #: :func:`summary_fields`; the rest is read from the file when asked for.
    record_of_run: dict[str, Any]
    resuming: bool = False
    #: Hosted by this server until it was evicted (``finished_session_ttl``), not left by an
    #: earlier one.
    evicted: bool = False

    def __post_init__(self) -> None:
        self.record_of_run = summary_fields(self.record_of_run)

    @property
    def session_id(self) -> str:
        return self.record.session_id

    @property
    def people(self) -> list[str]:
        return self.record.people

    @property
    def outside(self) -> list[str]:
        """The seats outside agents take (over MCP)."""
        return list(self.record.spec.outside)

    @property
    def access(self) -> SessionAccess:
        """Whose session it is; a record older than ownership is the server token holder's."""
        if self.record.access is None:
            self.record.access = SessionAccess(owner=TOKEN_HOLDER)
        return self.record.access

    @property
    def status(self) -> str:
        status = self.record_of_run.get("status")
        return status if status in ("finished", "failed") else "interrupted"

    def summary(self) -> dict[str, Any]:
        run = self.record_of_run
        return {
            "session_id": self.session_id,
            "task": run.get("task") or self.record.spec.task,
            "team": self.record.team,
            "protocol": run.get("protocol"),
            "members": run.get("team", []),
            "people": list(self.people),
            "outside": self.outside,
            "status": self.status,
            "end_reason": run.get("end_reason"),
            "error": run.get("error"),
            "created_at": self.record.created_at,
            "created_in": (self.record.created_in.model_dump(mode="json", exclude_none=True)
                           if self.record.created_in is not None else None),
            "results_dir": str(self.directory),
            "delivered": run.get("delivered"),
            "scores": run.get("scores"),
            "score_reports": run.get("score_reports"),
            "data": run.get("data"),
            "data_notice": None,  # said when the session started
        }

    def details(self) -> dict[str, Any]:
        run = self._whole_record()
        finished = self.status == "finished"
        return {
            "state": run.get("final_state"),  # an interrupted session shows its state on resume
            "result": {"session_id": self.session_id, "task": run.get("task"),
                       "results_dir": str(self.directory),
                       **{key: run.get(key) for key in RESULT_FIELDS}} if finished else None,
        }

    def _whole_record(self) -> dict[str, Any]:
        """``session.json`` as it is now; the kept fields if it cannot be read."""
        if not (self.directory / SESSION_FILE).is_file():
            return self.record_of_run
        try:
            return read_session(self.directory)
        except (OSError, ValueError) as error:
            log.warning("session %s: session.json cannot be read: %s", self.session_id, error)
            return self.record_of_run


def this_process() -> dict[str, Any]:
    """The fields of a ``HostingRecord`` that name the process hosting a session."""
    return {"hostname": socket.gethostname(), "pid": os.getpid(),
            "process_start": _process_start(os.getpid())}


def runs_elsewhere(record: HostingRecord) -> bool:
    """Whether another live process on this machine hosts the session (a kernel's own host
    sharing the results folder): it is not this server's to mark interrupted."""
    if record.pid is None or record.pid == os.getpid() or record.hostname != socket.gethostname():
        return False
    try:
        os.kill(record.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        pass
    # The pid may have been reused since: only the same start time makes it the same process.
    return record.process_start is None or _process_start(record.pid) == record.process_start


def _process_start(pid: int) -> str | None:
    """When process ``pid`` started, in clock ticks since boot (Linux); None elsewhere."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # after the command name, which may hold spaces
    return fields[19] if len(fields) > 19 else None


def write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".json.tmp")  # readers never see half a file
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=repr),
                   encoding="utf-8")
    os.replace(tmp, path)
