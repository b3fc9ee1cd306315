"""Running a cell on a kernel as a browser does, whatever the websocket's wire format: the
``execute_request`` to send, and the IOPub messages that make up its outputs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from jupyter_client.session import Session

OUTPUT_KINDS = ("stream", "execute_result", "error", "display_data")


def execute_request(session: Session, code: str) -> dict[str, Any]:
    """An ``execute_request`` message for ``code`` from ``session`` (a person's, not ours)."""
    message = session.msg("execute_request", {
        "code": code, "silent": False, "store_history": True, "user_expressions": {},
        "allow_stdin": False, "stop_on_error": True})
    message["header"]["date"] = datetime.now(UTC).isoformat()
    return message


def collect_output(kind: str, content: dict[str, Any], outputs: list[dict[str, Any]]) -> bool:
    """Add an IOPub output of the cell to ``outputs``; True once the kernel is idle again."""
    if kind in OUTPUT_KINDS:
        outputs.append(content | {"kind": kind})
    return kind == "status" and content.get("execution_state") == "idle"
