"""What several benchmark scripts beside this one share: a free loopback port, a percentile,
a throw-away ``jupyter server`` with the extension, and a main that reports its total time.

The scripts run as ``python benchmarks/NAME.py``, so this folder is on their import path.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def free_port() -> int:
    """A loopback TCP port that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def percentile(values: list[float], share: float) -> float:
    """The value below which ``share`` of ``values`` lie (nearest rank; NaN for none)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def usable_cpus() -> int:
    """The cores this process may run on (all of them where the platform cannot say)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 0


class JupyterServer:
    """``jupyter server`` with the cogym_lab extension in a child process, on a free loopback
    port, with its root, config, runtime folder and log (``server.log``) in ``folder``."""

    def __init__(self, folder: Path, settings: Mapping[str, Any], *,
                 env: Mapping[str, str] | None = None, cwd: Path | None = None,
                 stop_wait: float = 30.0) -> None:
        """``settings`` are the ``CogymLabApp`` traits; ``env`` adds to the environment; the
        server runs in ``cwd`` (its root folder by default); ``stop`` waits ``stop_wait``
        seconds for it before it kills it."""
        self.folder = folder
        self.port = free_port()
        self.token = uuid.uuid4().hex
        self.stop_wait = stop_wait
        root = folder / "root"
        root.mkdir()
        config = folder / "config.json"
        config.write_text(json.dumps({
            "ServerApp": {"jpserver_extensions": {"cogym_lab": True}, "root_dir": str(root),
                          "port": self.port, "ip": "127.0.0.1", "port_retries": 0,
                          "open_browser": False, "allow_root": True},
            "IdentityProvider": {"token": self.token},
            "CogymLabApp": dict(settings)}))
        environment = {**os.environ, **(env or {}),
                       "JUPYTER_RUNTIME_DIR": str(folder / "runtime")}
        self.log = (folder / "server.log").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "server", f"--config={config}"], env=environment,
            stdout=self.log, stderr=subprocess.STDOUT, cwd=cwd or root)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(self.stop_wait)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self.log.close()


def timed_main(run: Callable[[], object]) -> int:
    """Run a benchmark's body and print its total time: 0, or 130 when Ctrl+C stopped it."""
    began = time.perf_counter()
    try:
        run()
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    print(f"total benchmark time: {time.perf_counter() - began:.1f} s")
    return 0
