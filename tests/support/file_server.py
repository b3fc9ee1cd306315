"""A file server on loopback for download tests, with the faults a real download meets.

It serves bytes by name, honours ``Range: bytes=N-`` (``206``, or ``416`` past the end), and per
file can cut the connection after some bytes or go silent after them (once), send damaged bytes,
or ignore ``Range`` and send the whole file (``200``). It records each request's path and
``Range`` header.

A test task for the real command line: :func:`install_task` writes a module and a package's
metadata with a ``cogym_lab.envs`` entry point into a folder, the way an installed plugin task is
found; a ``cogym-lab`` process with that folder on ``PYTHONPATH`` has the task.
"""

from __future__ import annotations

import http.server
import os
import re
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.paths import REPO_ROOT


@dataclass
class Served:
    """A file and how the server misbehaves with it."""

    body: bytes
    cut_after: int | None = None  # close the connection after this many bytes, on the next GET
    stall_after: int | None = None  # go silent after this many bytes, on the next GET
    corrupt: bool = False  # flip the first byte of what is sent
    ignore_range: bool = False  # answer 200 with the whole file even when asked for a range


@dataclass
class FileServer:
    base: str = ""
    files: dict[str, Served] = field(default_factory=dict)
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # (name, Range)
    closing: threading.Event = field(default_factory=threading.Event)  # ends a stall

    def serve(self, name: str, body: bytes, **behaviour: Any) -> str:
        """Serve ``body`` as ``name``; its address."""
        self.files[name] = Served(body, **behaviour)
        return self.url(name)

    def url(self, name: str) -> str:
        return f"{self.base}/{urllib.parse.quote(name)}"

    def ranges(self, name: str) -> list[str | None]:
        """The ``Range`` header of each request for ``name``, in order."""
        return [asked for path, asked in self.requests if path == name]


class _Handler(http.server.BaseHTTPRequestHandler):
    state: FileServer  # set on the subclass each server gets

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read the recorded requests instead."""

    def do_GET(self) -> None:
        name = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path.lstrip("/"))
        asked = self.headers.get("Range")
        self.state.requests.append((name, asked))
        served = self.state.files.get(name)
        if served is None:
            self.send_error(404, "Not Found")
            return
        body = bytes([served.body[0] ^ 0xFF]) + served.body[1:] if served.corrupt \
            else served.body
        start = 0
        match = re.fullmatch(r"bytes=(\d+)-", asked or "")
        if match and not served.ignore_range:
            start = int(match[1])
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        payload = body[start:]
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if served.cut_after is not None:
            payload, served.cut_after = payload[:served.cut_after], None
            self.close_connection = True
        elif served.stall_after is not None:
            self.wfile.write(payload[:served.stall_after])
            self.wfile.flush()
            served.stall_after = None
            self.state.closing.wait(60)  # silent until the server stops
            return
        self.wfile.write(payload)


@contextmanager
def file_server() -> Iterator[FileServer]:
    """A :class:`FileServer` on 127.0.0.1, running in a thread until the block ends."""
    state = FileServer()
    handler = type("Handler", (_Handler,), {"state": state})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    state.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.closing.set()
        server.shutdown()
        server.server_close()


def install_task(site: Path, task: str, items: list[dict[str, Any]]) -> dict[str, str]:
    """Install, into the folder ``site``, a task named ``task`` that declares ``items`` (the
    keyword arguments of each ``DataItem`` after its task); the environment a ``cogym-lab``
    process needs to find it."""
    module = f"cogym_fixture_{task}"
    site.mkdir(parents=True, exist_ok=True)
    source = ['"""A task that only declares data, for the download tests."""',
              "from cogym_lab.datasets import DataItem", "", "", "class FixtureTask:",
              "    data_files = (",
              *(f"        DataItem({task!r}, **{item!r})," for item in items),
              "    )", ""]
    (site / f"{module}.py").write_text("\n".join(source), encoding="utf-8")
    info = site / f"cogym_fixture_{task}-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: cogym-fixture-{task}\n"
                                   "Version: 1.0\n")
    (info / "entry_points.txt").write_text(f"[cogym_lab.envs]\n{task} = {module}:FixtureTask\n")
    paths = [str(site), str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]
    return {"PYTHONPATH": os.pathsep.join(path for path in paths if path)}
