"""The session directories of a batch run: their names, whether they finished, and what went into
them beyond what a session writes itself (the error of a failed one, the LM usage of each)."""

from __future__ import annotations

import json
import os
import shutil
import time
import traceback
import uuid
from pathlib import Path
from typing import Any

from cogym_lab.core.outcome_class import outcome_class
from cogym_lab.eval.batch.manifest import SessionEntry, TokenCount, Tokens
from cogym_lab.lm.failures import LMFailure
from cogym_lab.nodes.results import SESSION_FILE

LM_USAGE_FIELD = "lm_usage"  # added to session.json by the runner: usage by LM source


#: The folder of a run directory that sessions redone on request (``run(..., rerun=...)``) are
#: moved into: kept, not deleted, and (a hidden folder) not read as the run's sessions.
REPLACED_DIR = ".replaced"


def session_dir_name(instance: int, trial: int = 0) -> str:
    """``OUT/<name>`` of one trial of an instance: fixed, so a resumed run finds it again.
    Trial 0 is ``003`` (the name runs had before trials, so they still resume), later trials
    ``003-t1``, ``003-t2`` ..."""
    return f"{instance:03d}" if trial == 0 else f"{instance:03d}-t{trial}"


def session_id_prefix(team: str, task: str, instance: int, trial: int = 0) -> str:
    """What every session id of a trial starts with (``collaborative-travel_planning-002``,
    ``...-002-t1``): the readable part, also the id ``run.json`` shows for a session not yet
    started."""
    return f"{team}-{task}-{session_dir_name(instance, trial)}"


def new_batch_session_id(team: str, task: str, instance: int, trial: int = 0) -> str:
    """A new id for one attempt at a trial: its prefix and a random suffix. The folder keeps
    its fixed name (a resumed run finds it by name), but every attempt, a re-run or another
    batch on the same bus gets an id of its own: a bus refuses an id that has history, and one
    that did not would replay the earlier attempt's steps into this one."""
    return f"{session_id_prefix(team, task, instance, trial)}-{uuid.uuid4().hex[:8]}"


def read_session_file(directory: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((directory / SESSION_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_finished(directory: Path) -> bool:
    """True when the session in ``directory`` ran to its end (its session.json records one)."""
    data = read_session_file(directory)
    return (data is not None and data.get("status") == "finished"
            and data.get("ended_at") is not None)


def clear_partial(directory: Path) -> None:
    """Remove what an interrupted or failed attempt left, so the session starts from scratch."""
    if directory.is_dir():
        shutil.rmtree(directory)
    elif directory.exists():
        directory.unlink()


def move_aside(directory: Path) -> Path | None:
    """Move a session folder that is to be redone into ``<run>/.replaced/<name>-<n>`` (``n``
    counting the times it was replaced), so nothing a rerun replaces is lost; the new place,
    or ``None`` when there was nothing to move."""
    if not directory.exists():
        return None
    replaced = directory.parent / REPLACED_DIR
    replaced.mkdir(exist_ok=True)
    number = 1
    while (target := replaced / f"{directory.name}-{number}").exists():
        number += 1
    os.replace(directory, target)
    return target


def merge_session_file(directory: Path, **fields: Any) -> None:
    """Merge ``fields`` into ``session.json`` atomically (creating it when missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    data = read_session_file(directory) or {}
    data.update(fields)
    path = directory / SESSION_FILE
    tmp = path.with_suffix(".json.batch-tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    os.replace(tmp, path)


def record_failure(directory: Path, error: BaseException, **identity: Any) -> str:
    """Write a failed session's error into its session.json; the one-line error is returned."""
    message = f"{type(error).__name__}: {error}"
    merge_session_file(directory, **{k: v for k, v in identity.items() if v is not None},
                       status="failed", failed_at=time.time(), error=message,
                       traceback="".join(traceback.format_exception(error)))
    return message


def usage_by_model(usage: dict[str, dict[str, Any]]) -> dict[str, TokenCount]:
    """Sum the per-source usage records of one session by model name."""
    by_model: dict[str, TokenCount] = {}
    for record in usage.values():
        count = by_model.setdefault(str(record.get("model") or "unknown"), TokenCount())
        count.add(TokenCount(prompt_tokens=int(record.get("prompt_tokens") or 0),
                             completion_tokens=int(record.get("completion_tokens") or 0),
                             calls=int(record.get("calls") or 0)))
    return by_model


def recorded_usage(directory: Path, session: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The LM usage of a finished session: the runner's record, else the members' usage.json."""
    if isinstance(session.get(LM_USAGE_FIELD), dict):
        return session[LM_USAGE_FIELD]
    usage = {}
    for path in sorted(directory.glob("*/usage.json")):
        try:
            usage[path.parent.name] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    return usage


def finished_entry(directory: Path, instance: int, session_id: str,
                   trial: int = 0) -> SessionEntry:
    """The run.json entry of a session that finished in an earlier invocation."""
    session = read_session_file(directory) or {}
    tokens = Tokens.from_models(usage_by_model(recorded_usage(directory, session)))
    return SessionEntry(instance=instance, trial=trial, directory=directory.name,
                        session_id=session.get("session_id", session_id), status="finished",
                        resumed=True, end_reason=session.get("end_reason"),
                        delivered=session.get("delivered"), scores=session.get("scores") or {},
                        duration=session.get("duration"), tokens=tokens,
                        outcome_class=outcome_class(session), cause=_cause(session))


def _cause(session: dict[str, Any]) -> str | None:
    """The recorded LM failure in one sentence, if the session has one."""
    try:
        failure = LMFailure.model_validate(session["failure"]) if session.get("failure") \
            else None
    except ValueError:
        return None
    return failure.describe() if failure else None
