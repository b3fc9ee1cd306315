"""The failure and audit labels the viewer puts on the timeline, from a session's
``failures.json`` (the fine-grained failure taxonomy) and ``user_audit.json`` (the simulated-user
audit).

Both files are optional, and they are read leniently, item by item: the viewer shows what a
file holds even when one finding in it is malformed, and says which files it could not read.
A finding sits at the event its quote was found in (its ``seq``); one without a ``seq`` that the
log has labels the whole session instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cogym_lab.records.failure_types import FAILURE_TYPES
from cogym_lab.records.label_files import AUDIT_FILE, FAILURES_FILE
from cogym_lab.records.viewer.payload import Label


def read_labels(folder: str | Path, seqs: Iterable[int]) -> tuple[list[Label], dict[str, str],
                                                                  bool | None]:
    """The labels of the session in ``folder``, what became of each file (``"read"``,
    ``"absent"``, or why it could not be read) and the audit's ``flagged`` verdict (``None``
    without an audit). ``seqs`` are the events the log holds."""
    known = set(seqs)
    labels: list[Label] = []
    files: dict[str, str] = {}
    failures, files[FAILURES_FILE] = _read(Path(folder) / FAILURES_FILE)
    if isinstance(failures, dict):
        labels += _failure_labels(failures, known)
    audit, files[AUDIT_FILE] = _read(Path(folder) / AUDIT_FILE)
    flagged = None
    if isinstance(audit, dict):
        labels += _audit_labels(audit, known)
        flagged = bool(audit.get("flagged")) if "flagged" in audit else None
    return labels, files, flagged


def _read(path: Path) -> tuple[Any, str]:
    if not path.is_file():
        return None, "absent"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return None, f"unreadable: {type(error).__name__}: {error}"
    if not isinstance(data, dict):
        return None, "unreadable: not a JSON object"
    return data, "read"


def _seq(value: Any, known: set[int]) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value in known \
        else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(
        value, ensure_ascii=False, default=str)


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _failure_labels(data: dict[str, Any], known: set[int]) -> list[Label]:
    labels = []
    for finding in data.get("findings") or []:
        if not isinstance(finding, dict) or not isinstance(finding.get("code"), str):
            continue
        code = finding["code"]
        category, attribution = _text(finding.get("category")), finding.get("attribution")
        detail = category.replace("_", " ") + (
            f" · attributed to the {attribution}" if isinstance(attribution, str) else "")
        known_type = FAILURE_TYPES.get(code)
        common = {"source": "failure", "code": code,
                  "title": known_type.name if known_type else code,
                  "detail": detail,
                  "attribution": attribution if isinstance(attribution, str) else None}
        evidence = [item for item in finding.get("evidence") or [] if isinstance(item, dict)]
        placed = [item for item in evidence if _seq(item.get("seq"), known) is not None]
        for item in placed:
            labels.append(Label(seq=item["seq"], quote=_text(item.get("quote")),
                                verified=_flag(item.get("verified")), **common))
        if not placed:  # nowhere in the log: on the whole session
            first = evidence[0] if evidence else {}
            labels.append(Label(quote=_text(first.get("quote")),
                                verified=_flag(first.get("verified")), **common))
    return labels


def _audit_labels(data: dict[str, Any], known: set[int]) -> list[Label]:
    labels = []
    for error in data.get("errors") or []:
        if not isinstance(error, dict) or not isinstance(error.get("type"), str):
            continue
        severity = error.get("severity")
        labels.append(Label(
            seq=_seq(error.get("seq"), known), source="audit", code=error["type"],
            title=error["type"].replace("_", " "), quote=_text(error.get("quote")),
            severity=severity if isinstance(severity, str) else None,
            detail=f"the simulated user's error ({severity})" if isinstance(severity, str)
            else "the simulated user's error",
            verified=_flag(error.get("verified")), critical=error.get("critical") is True))
    for check in data.get("checks") or []:
        if not isinstance(check, dict) or not isinstance(check.get("check"), str):
            continue
        labels.append(Label(seq=_seq(check.get("seq"), known), source="check",
                            code=check["check"], title=check["check"].replace("_", " "),
                            detail=_text(check.get("detail"))))
    return labels
