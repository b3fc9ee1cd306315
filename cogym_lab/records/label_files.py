"""The label files an evaluation leaves in a session folder, beside what the session wrote:
their names, and how they are read and written.

``user_audit.json`` holds the simulated-user audit (:mod:`cogym_lab.eval.users.audit`),
``failures.json`` the fine-grained failure taxonomy
(:mod:`cogym_lab.eval.judging.failure_taxonomy`); each is one JSON object of that module's model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from cogym_lab.core.text import clean

AUDIT_FILE = "user_audit.json"
FAILURES_FILE = "failures.json"

Labels = TypeVar("Labels", bound=BaseModel)


def read_label_file(path: str | Path, model: type[Labels]) -> Labels | None:
    """The labels in ``path`` as ``model``, or ``None`` when the file is missing or unreadable
    (a report then labels the session again, or goes without)."""
    try:
        return model.model_validate_json(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, ValidationError):
        return None


def write_label_file(path: str | Path, labels: BaseModel) -> Path:
    """Write ``labels`` to ``path`` atomically, as readable UTF-8 JSON; the path is returned."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(clean(labels.model_dump(mode="json")), indent=2,
                              ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)
    return path
