"""Sessions known from their files: what a server finds in its results folder after a restart,
and whose process a session belongs to."""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogym_lab.runtime.access import TOKEN_HOLDER, SessionAccess
from cogym_lab.runtime.models import HostingRecord

RESULT_FIELDS = ("end_reason", "delivered", "outcome", "scores", "score_reports", "step_counts",
                 "events", "duration")


@dataclass
class StoredSession:
    """A session an earlier server left in ``results_dir``, known only from its files."""

    directory: Path
    record: HostingRecord
    record_of_run: dict[str, Any]  # session.json ({} if the session never started)
    resuming: bool = False

    @property
    def session_id(self) -> str:
        return self.record.session_id

    @property
    def people(self) -> list[str]:
        return self.record.people

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
            "members": run.get("team", []),
            "people": list(self.people),
            "status": self.status,
            "end_reason": run.get("end_reason"),
            "error": run.get("error"),
            "created_at": self.record.created_at,
            "results_dir": str(self.directory),
            "delivered": run.get("delivered"),
            "scores": run.get("scores"),
        }

    def details(self) -> dict[str, Any]:
        run = self.record_of_run
        finished = self.status == "finished"
        return {
            "state": run.get("final_state"),  # an interrupted session shows its state on resume
            "result": {"session_id": self.session_id, "task": run.get("task"),
                       "results_dir": str(self.directory),
                       **{key: run.get(key) for key in RESULT_FIELDS}} if finished else None,
        }


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
