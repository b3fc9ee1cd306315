"""A widget comm that records what the kernel side would send to the browser, and a fixture that
makes every new comm one of them (the ``comm`` package's own, otherwise)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import comm
import pytest
from comm.base_comm import BaseComm

__all__ = ["RecordingComm", "comms"]


class RecordingComm(BaseComm):
    """The kernel side of a widget's comm, recording what it would send to the browser."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        super().__init__(*args, **kwargs)

    def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None,
                    buffers: Any = None, **keys: Any) -> None:
        self.sent.append((msg_type, json.loads(json.dumps(data or {}, default=str))))

    def custom(self) -> list[dict[str, Any]]:
        """The custom messages sent to the browser so far (anywidget's ``msg:custom``)."""
        return [data["content"] for kind, data in self.sent
                if kind == "comm_msg" and data.get("method") == "custom"]

    def from_browser(self, content: dict[str, Any]) -> None:
        """A custom message from the panel's browser code, as the kernel receives it."""
        self.handle_msg({"content": {"comm_id": self.comm_id,
                                     "data": {"method": "custom", "content": content}},
                         "buffers": []})

    async def until(self, predicate, timeout: float = 60.0, since: int = 0) -> dict[str, Any]:
        """The first custom message (from number ``since`` on) that matches ``predicate``."""
        deadline = time.monotonic() + timeout
        while True:
            for message in self.custom()[since:]:
                if predicate(message):
                    return message
            assert time.monotonic() < deadline, f"timed out; received {self.custom()[-5:]}"
            await asyncio.sleep(0.02)


@pytest.fixture
def comms(monkeypatch: pytest.MonkeyPatch) -> list[RecordingComm]:
    """Every comm made during the test, recording."""
    created: list[RecordingComm] = []

    def create(*args: Any, **kwargs: Any) -> RecordingComm:
        created.append(RecordingComm(*args, **kwargs))
        return created[-1]

    monkeypatch.setattr(comm, "create_comm", create)
    return created
