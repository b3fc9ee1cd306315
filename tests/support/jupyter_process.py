"""A real ``jupyter server`` in a subprocess, and kernels to run code in, for tests.

The in-process server of pytest-jupyter cannot be reached from a kernel subprocess, and code in
a kernel is what the magics run as. So the server runs on its own, on a free loopback port with
a token and its own runtime folder; its kernels find it the way they would on a laptop.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client import BlockingKernelClient
from jupyter_client.manager import KernelManager


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Outputs:
    """What a cell printed and displayed, and its error if it raised."""

    stdout: str = ""
    stderr: str = ""
    displays: list[dict[str, Any]] = field(default_factory=list)  # data bundles
    error: dict[str, Any] | None = None

    @property
    def text(self) -> str:
        """Everything shown as text: printed output, then each display's text/plain."""
        plain = [str(d.get("text/plain", "")) for d in self.displays]
        return "\n".join([self.stdout, *plain])

    def html(self) -> str:
        return "\n".join(str(d.get("text/html", "")) for d in self.displays)


class Kernel:
    """Runs cells in a kernel through a blocking client."""

    def __init__(self, client: BlockingKernelClient) -> None:
        self.client = client

    def run(self, code: str, timeout: float = 120.0, allow_error: bool = False,
            cell_id: str | None = None) -> Outputs:
        """Run ``code``; with ``cell_id``, as the notebook cell of that id (JupyterLab sends it
        in the request's metadata)."""
        outputs = Outputs()

        def collect(message: dict[str, Any]) -> None:
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                if content["name"] == "stdout":
                    outputs.stdout += content["text"]
                else:
                    outputs.stderr += content["text"]
            elif kind in ("display_data", "execute_result", "update_display_data"):
                outputs.displays.append(content["data"])
            elif kind == "error":
                outputs.error = content

        if cell_id is None:
            self.client.execute_interactive(code, output_hook=collect, timeout=timeout)
        else:
            self._run_in_cell(code, cell_id, collect, timeout)
        if outputs.error and not allow_error:
            trace = "\n".join(outputs.error.get("traceback", []))
            raise AssertionError(f"the cell raised:\n{code}\n{trace}")
        return outputs

    def _run_in_cell(self, code: str, cell_id: str, collect: Any, timeout: float) -> None:
        """An execute request with the cell's id in its metadata, as JupyterLab sends it;
        ``collect`` gets its IOPub messages until the kernel is idle again."""
        content = {"code": code, "silent": False, "store_history": True,
                   "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}
        request = self.client.session.msg("execute_request", content,
                                          metadata={"cellId": cell_id})
        self.client.shell_channel.send(request)
        msg_id = request["header"]["msg_id"]
        deadline = time.monotonic() + timeout
        while True:
            message = self.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            if (message["msg_type"] == "status"
                    and message["content"]["execution_state"] == "idle"):
                break
            collect(message)
        while self.client.get_shell_msg(timeout=max(0.1, deadline - time.monotonic())
                                        )["parent_header"].get("msg_id") != msg_id:
            pass  # an earlier request's reply

    def value(self, expression: str, timeout: float = 120.0) -> Any:
        """The JSON value of ``expression`` evaluated in the kernel."""
        marker = uuid.uuid4().hex
        out = self.run(f"import json as _j\nprint({marker!r}, _j.dumps({expression}, "
                       f"default=str))", timeout=timeout)
        line = next(line for line in out.stdout.splitlines() if line.startswith(marker))
        return json.loads(line[len(marker) + 1:])


class JupyterServerProcess:
    """``jupyter server`` with the cogym_lab extension, in ``root`` on a free port."""

    def __init__(self, root: Path, env: dict[str, str] | None = None,
                 cogym: dict[str, Any] | None = None, python: str = sys.executable) -> None:
        """``env`` is added to this process's environment for the server (and its kernels);
        ``cogym`` holds more ``c.CogymLab`` settings; ``python``: the interpreter (and so the
        environment) the server runs in."""
        self.root = root
        self.python = python
        self.cogym = dict(cogym or {})
        self.port = free_port()
        self.token = uuid.uuid4().hex
        self.runtime_dir = root.parent / f"runtime-{self.port}"
        self.runtime_dir.mkdir(parents=True, exist_ok=True)
        self.results_dir = root.parent / f"results-{self.port}"
        self.env = {**os.environ, **(env or {}), "JUPYTER_RUNTIME_DIR": str(self.runtime_dir)}
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = root.parent / f"server-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, timeout: float = 90.0) -> JupyterServerProcess:
        config = self.root.parent / f"server-{self.port}-config.json"
        config.write_text(json.dumps({
            "ServerApp": {"jpserver_extensions": {"cogym_lab": True}, "root_dir": str(self.root),
                          "port": self.port, "ip": "127.0.0.1", "port_retries": 0,
                          "open_browser": False, "allow_root": True},
            "IdentityProvider": {"token": self.token},
            "CogymLabApp": {"results_dir": str(self.results_dir), **self.cogym}}))
        command = [self.python, "-m", "jupyter", "server", f"--config={config}"]
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(command, env=self.env, stdout=log,
                                        stderr=subprocess.STDOUT, cwd=self.root)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter server exited:\n{self.log_path.read_text()}")
            try:
                self.request("GET", "cogym/api/sessions", timeout=5)
                return self
            except (urllib.error.URLError, OSError):
                time.sleep(0.25)
        raise RuntimeError(f"jupyter server did not answer in {timeout} s:\n"
                           f"{self.log_path.read_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def request(self, method: str, path: str, body: Any = None, timeout: float = 30) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Authorization": f"token {self.token}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read()
        return json.loads(text) if text else None

    def open_notebook_kernel(self, path: str = "analysis.ipynb") -> tuple[str, Kernel]:
        """Start a kernel for notebook ``path`` the way JupyterLab does (a server session);
        returns the kernel id and a client connected to it."""
        notebook = self.root / path
        if not notebook.exists():
            notebook.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                            "nbformat_minor": 5}))
        session = self.request("POST", "api/sessions", {
            "path": path, "name": path, "type": "notebook", "kernel": {"name": "python3"}})
        kernel_id = session["kernel"]["id"]
        connection_file = self.runtime_dir / f"kernel-{kernel_id}.json"
        deadline = time.monotonic() + 60
        while not connection_file.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"no connection file for kernel {kernel_id}")
            time.sleep(0.1)
        client = BlockingKernelClient(connection_file=str(connection_file))
        client.load_connection_file()
        client.start_channels()
        client.wait_for_ready(timeout=90)
        return kernel_id, Kernel(client)

    def __enter__(self) -> JupyterServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class StandaloneKernel:
    """A kernel started by jupyter_client, with no Jupyter server around it."""

    def __init__(self, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.manager = KernelManager(kernel_name="python3")
        self.cwd = cwd
        self.env = {**os.environ, **(env or {})}

    def __enter__(self) -> Kernel:
        self.manager.start_kernel(cwd=str(self.cwd), env=self.env)
        client = self.manager.blocking_client()
        client.start_channels()
        client.wait_for_ready(timeout=90)
        self.client = client
        return Kernel(client)

    def __exit__(self, *exc: object) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)
