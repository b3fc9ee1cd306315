"""A real ``redis-server`` on a free loopback port, for tests and benchmarks.

The server runs without persistence (``--save "" --appendonly no``), like a scratch
deployment: stopping or killing it loses every key, which the restart tests rely on.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["RedisServer"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _find_binary() -> str:
    path = shutil.which("redis-server")
    if path is None:
        raise RuntimeError(
            "redis-server is not on PATH. The bus tests need a real Redis server: run "
            "`bash scripts/test.sh`, which installs it, or install Debian's redis-server "
            "package (`apt-get install redis-server`)."
        )
    return path


class RedisServer:
    """A ``redis-server`` subprocess on a free loopback port that can be stopped, killed
    and started again on the same port (with empty data, since nothing is persisted)."""

    def __init__(self, port: int | None = None, startup_timeout: float = 10.0) -> None:
        self.binary = _find_binary()
        self.port = port or _free_port()
        self.startup_timeout = startup_timeout
        self._tmp = tempfile.TemporaryDirectory(prefix="cogym-redis-")
        self._dir = Path(self._tmp.name)
        self._log_path = self._dir / "redis.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> RedisServer:
        """Start the server (again, on the same port) and wait until it answers PING."""
        if self.running:
            return self
        args = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--dir", str(self._dir),
        ]  # fmt: skip
        with open(self._log_path, "ab") as log:
            self._proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_timeout
        while not self._ping():
            if self._proc.poll() is not None:
                raise RuntimeError(f"redis-server exited at startup:\n{self._log_tail()}")
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"redis-server did not answer PING:\n{self._log_tail()}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Shut the server down gracefully (SIGTERM)."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        """Kill the server abruptly (SIGKILL), as a crash would."""
        self._end(signal.SIGKILL)

    def close(self) -> None:
        """Stop the server and remove its directory."""
        self.kill()
        self._tmp.cleanup()

    def _end(self, sig: signal.Signals) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            os.kill(proc.pid, sig)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def version(self) -> str:
        """The server's version, as ``redis-server --version`` prints it."""
        out = subprocess.run([self.binary, "--version"], capture_output=True, text=True,
                             check=True).stdout
        return next((w.removeprefix("v=") for w in out.split() if w.startswith("v=")), out.strip())

    def _ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self._log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
