"""A real ``jupyter lab`` subprocess on a free loopback port, for the browser tests.

The server gets its own config, data, runtime and settings folders, so nothing from the machine's
user Jupyter setup leaks in. The cogym_lab server extension and the real-time collaboration
extension (jupyter_server_ydoc, from jupyter-collaboration) are enabled explicitly.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["BROWSER_LIMITS", "JupyterLabServer", "free_port", "write_quiet_settings"]

# A low action rate, so that a person typing fast can meet it; the other tests act at a
# person's pace and stay far below it.
BROWSER_LIMITS = {"ws_actions_per_second": 2.0, "ws_action_burst": 5}

# JupyterLab settings that keep pop-ups (news, update checks) from covering the page.
_QUIET_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}


def write_quiet_settings(settings_dir: Path) -> None:
    """JupyterLab user settings (in ``settings_dir``) that keep news and update checks away."""
    for relative, values in _QUIET_SETTINGS.items():
        target = settings_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class JupyterLabServer:
    """Start, query and stop one ``jupyter lab`` process.

    ``root_dir`` is the folder the server shows; ``home`` holds its private Jupyter folders and
    the log; ``extra_env`` is added to the server's environment (and so to its kernels').
    """

    def __init__(self, root_dir: Path, home: Path, extra_env: Mapping[str, str] | None = None,
                 startup_timeout: float = 180.0) -> None:
        self.root_dir = Path(root_dir)
        self.home = Path(home)
        self.extra_env = dict(extra_env or {})
        self.startup_timeout = startup_timeout
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.results_dir = self.home / "results"
        #: The server's baseline folder (c.CogymLab.baseline_dirs): the autonomous runs the rating
        #: form's pairwise question compares with; a test writes the runs it needs there.
        self.baseline_dir = self.home / "baseline"
        self.log_path = self.home / "jupyter-lab.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: Any = None

    # -- addresses --------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str, **query: str) -> str:
        """A server URL with the token in its query, ready for a browser."""
        params = "&".join([*(f"{k}={v}" if v else k for k, v in query.items()),
                           f"token={self.token}"])
        return f"{self.base_url}/{path.lstrip('/')}?{params}"

    # -- REST -------------------------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, timeout: float = 30.0,
                authenticated: bool = True) -> tuple[int, Any]:
        """Call the server's REST API (with the token unless ``authenticated`` is false);
        returns (status, parsed JSON, or the text when it is not JSON)."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if authenticated:
            headers["Authorization"] = f"token {self.token}"
        request = urllib.request.Request(f"{self.base_url}/{path.lstrip('/')}", data=data,
                                         method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    # -- life cycle ---------------------------------------------------------------------------

    def _prepare_home(self) -> dict[str, str]:
        folders = {name: self.home / name for name in ("config", "data", "runtime", "settings",
                                                       "workspaces")}
        for folder in folders.values():
            folder.mkdir(parents=True, exist_ok=True)
        self.results_dir.mkdir(parents=True, exist_ok=True)
        server_config = {
            "ServerApp": {"jpserver_extensions": {"cogym_lab": True,
                                                  "jupyter_server_ydoc": True}},
            "CogymLabApp": {"results_dir": str(self.results_dir),
                            "baseline_dirs": [str(self.baseline_dir)], **BROWSER_LIMITS},
        }
        (folders["config"] / "jupyter_server_config.json").write_text(json.dumps(server_config))
        write_quiet_settings(folders["settings"])
        return {"JUPYTER_CONFIG_DIR": str(folders["config"]),
                "JUPYTER_DATA_DIR": str(folders["data"]),
                "JUPYTER_RUNTIME_DIR": str(folders["runtime"]),
                "JUPYTERLAB_SETTINGS_DIR": str(folders["settings"]),
                "JUPYTERLAB_WORKSPACES_DIR": str(folders["workspaces"])}

    def start(self) -> JupyterLabServer:
        """Start the server and wait until its REST API answers with the token."""
        env = {**os.environ, **self._prepare_home(), **self.extra_env,
               "PYTHONUNBUFFERED": "1"}
        command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
                   f"--port={self.port}", "--port-retries=0",
                   f"--IdentityProvider.token={self.token}",
                   f"--ServerApp.root_dir={self.root_dir}",
                   "--allow-root",  # CI machines often run as root; harmless otherwise
                   "--LabApp.extension_manager=readonly"]  # no package-index look-ups
        self._log_file = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        # its own process group, so stop() can end the kernels it started with it
        self._proc = subprocess.Popen(command, cwd=self.root_dir, env=env, stdout=self._log_file,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_until_ready()
        return self

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self._proc is not None and self._proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self._proc.returncode} while "
                                   f"starting:\n{self.log_tail()}")
            try:
                status, _ = self.request("GET", "api/status", timeout=5)
                if status == 200:
                    return
            except OSError:
                pass  # not listening yet
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"jupyter lab did not answer within {self.startup_timeout:.0f}"
                                   f" s:\n{self.log_tail()}")
            time.sleep(0.25)

    def log_tail(self, lines: int = 60) -> str:
        """The end of the server's log, for failure messages."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Shut the kernels down politely, then the server; kill what is left after 30 s."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                _, kernels = self.request("GET", "api/kernels", timeout=10)
                for kernel in kernels or []:
                    self.request("DELETE", f"api/kernels/{kernel['id']}", timeout=30)
            except (OSError, TypeError, KeyError):
                pass  # the server is going away anyway
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # kernels or helpers the server left behind
        except (ProcessLookupError, PermissionError):
            pass
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> JupyterLabServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class ServerSession:
    """A session as the Jupyter server holds it, read through its REST API."""

    def __init__(self, lab: JupyterLabServer, session_id: str) -> None:
        self.lab = lab
        self.session_id = session_id

    def snapshot(self) -> dict[str, Any]:
        status, snapshot = self.lab.request("GET", f"cogym/api/sessions/{self.session_id}")
        assert status == 200, snapshot
        return snapshot

    def component(self, name: str, role: str = "user") -> Any:
        """The content of ``role``'s component ``name`` as the server holds it now."""
        components = self.snapshot()["state"]["views"][role]["components"]
        return next(c["content"] for c in components if c["name"] == name)
