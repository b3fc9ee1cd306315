"""A Jupyter server whose live documents come from jupyter-server-documents, for tests.

jupyter-server-documents (the backend jupyter-ai v3 installs) and jupyter-collaboration both
claim the ``jupyter_server_ydoc`` server setting, so they cannot share a venv. The test venv has
jupyter-collaboration; this module builds a second venv with jupyter-server-documents and
cogym_lab, runs a real ``jupyter server`` from it, and talks to that server as JupyterLab does:
REST, the kernel websocket (protocol v1, the only one that backend's kernel connection speaks)
and the backend's server-side cell execution.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from jupyter_client.session import Session
from jupyter_server.services.kernels.connection.base import (
    deserialize_msg_from_ws_v1,
    serialize_msg_to_ws_v1,
)
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from tests.support.jupyter_process import JupyterServerProcess
from tests.support.kernel_messages import collect_output, execute_request
from tests.support.paths import REPO_ROOT
from tests.support.yroom import RoomReplica

BACKEND = "jupyter-server-documents>=0.3"
KERNEL_WS_PROTOCOL = "v1.kernel.websocket.jupyter.org"


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def build_server_documents_venv(venv: Path, timeout: float = 900.0) -> Path:
    """Make ``venv`` with jupyter-server-documents and cogym_lab (a regular install of this
    repository, so without jupyter-collaboration); returns its python."""
    log = venv.parent / f"{venv.name}-install.log"
    with log.open("w") as out:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, stdout=out,
                       stderr=subprocess.STDOUT, timeout=timeout)
        python = venv_python(venv)
        done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", BACKEND,
                               str(REPO_ROOT)], stdout=out, stderr=subprocess.STDOUT,
                              timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"installing into {venv} failed:\n{log.read_text()[-5000:]}")
    return python


def installed_modules(python: Path, *modules: str) -> dict[str, bool]:
    """Which of ``modules`` the interpreter ``python`` can import (without importing them)."""
    probe = ("import importlib.util, json, sys\n"
             "print(json.dumps({m: importlib.util.find_spec(m) is not None "
             "for m in sys.argv[1:]}))")
    done = subprocess.run([str(python), "-c", probe, *modules], capture_output=True, text=True,
                          check=True, timeout=120)
    return json.loads(done.stdout)


def source_hash(python: Path, source: str) -> str:
    """The hash that jupyter-server-documents checks before it runs a cell (JupyterLab sends
    it with each run), computed by the backend's own function."""
    code = ("import sys\n"
            "from jupyter_server_documents.rooms.ynotebook_room import _source_hash\n"
            "print(_source_hash(sys.stdin.read()))")
    done = subprocess.run([str(python), "-c", code], input=source, capture_output=True,
                          text=True, check=True, timeout=120)
    return done.stdout.strip()


class ServerDocumentsServer(JupyterServerProcess):
    """``jupyter server`` from the venv of ``python``, with cogym_lab and
    jupyter-server-documents, in ``root`` on a free loopback port with a token."""

    def __init__(self, python: Path, root: Path) -> None:
        state = root.parent / "jupyter-state"  # config and data of our own, not the user's
        super().__init__(root, env={
            # Team files name tests.support.notebook_agents. cogym_lab is then imported from
            # this checkout too, the same code as the copy installed from it.
            "PYTHONPATH": str(REPO_ROOT),
            "JUPYTER_CONFIG_DIR": str(state / "config"),
            "JUPYTER_DATA_DIR": str(state / "data")})
        self.python = python
        self.state = state

    #: The teams the tests create sessions with: the server takes registered names only.
    TEAMS = {"server-documents-greet": True, "server-documents-quiet": False}
    #: A team whose agent runs a slow cell, then a next one (notebook_agents.TwoCellAnalyst).
    TWO_CELLS = "server-documents-two-cells"

    def _write_teams(self) -> dict[str, str]:
        paths = {}
        for name, greet in self.TEAMS.items():
            path = self.root.parent / f"{name}.toml"
            path.write_text(f'name = "{name}"\n[members.agent]\n'
                            'type = "scripted-analyst"\n'
                            f'[members.agent.options]\ngreet = {str(greet).lower()}\n')
            paths[name] = str(path)
        path = self.root.parent / f"{self.TWO_CELLS}.toml"
        path.write_text(f'name = "{self.TWO_CELLS}"\n[members.agent]\n'
                        'type = "two-cell-analyst"\n[members.agent.options]\nseconds = 2.5\n')
        paths[self.TWO_CELLS] = str(path)
        return paths

    def start(self, timeout: float = 120.0) -> ServerDocumentsServer:
        config = self.root.parent / f"server-{self.port}-config.json"
        config.write_text(json.dumps({
            "ServerApp": {"jpserver_extensions": {"cogym_lab": True,
                                                  "jupyter_server_documents": True,
                                                  "jupyter_server_fileid": True},
                          "root_dir": str(self.root), "port": self.port, "ip": "127.0.0.1",
                          "port_retries": 0, "open_browser": False, "allow_root": True},
            "IdentityProvider": {"token": self.token},
            "CogymLabApp": {"results_dir": str(self.results_dir), "teams": self._write_teams(),
                            "members": {"scripted-analyst":
                                        "tests.support.notebook_agents:SCRIPTED_ANALYST",
                                        "two-cell-analyst":
                                        "tests.support.notebook_agents:TWO_CELL_ANALYST"}},
            "BaseFileIdManager": {"db_path": str(self.state / "file-ids.db")}}))
        command = [str(self.python), "-m", "jupyter", "server", f"--config={config}"]
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(command, env=self.env, stdout=log,
                                            stderr=subprocess.STDOUT, cwd=self.root)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter server exited:\n{self.log()}")
            try:
                self.request("GET", "cogym/api/sessions", timeout=5)
                return self
            except (urllib.error.URLError, OSError):
                time.sleep(0.25)
        raise RuntimeError(f"jupyter server did not answer in {timeout} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-8000:]

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """(status, JSON) of a request; HTTP errors are returned, not raised."""
        try:
            data = None if body is None else json.dumps(body).encode()
            request = urllib.request.Request(self.url + path, data=data, method=method,
                                             headers={"Authorization": f"token {self.token}",
                                                      "Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=30) as response:
                status, text = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read()
        return status, json.loads(text) if text else None

    def notebook(self, path: str) -> dict[str, Any]:
        """The notebook as saved on disk, read through the contents API.

        jupyter_server saves a notebook by writing the file in place (its "atomic" writing
        keeps a backup copy to restore on failure, not a renamed temporary file), so a read
        during a save can find it empty or cut short: such a read is tried again."""
        deadline = time.monotonic() + 10
        while True:
            status, model = self.call("GET", f"api/contents/{path}?content=1&type=notebook")
            mid_save = status != 200 and "Unreadable Notebook" in str(model)
            if not mid_save or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert status == 200, model
        return model["content"]

    def room_id(self, path: str) -> str:
        """The backend's room (document) id of a notebook, as JupyterLab gets it."""
        status, index = self.call("POST", f"api/fileid/index?path={path}")
        assert status in (200, 201), index
        return f"json:notebook:{index['id']}"

    async def replica(self, path: str) -> RoomReplica:
        """A person's copy of the notebook's live document, joined to its room over the
        backend's websocket as JupyterLab joins it (tests/support/yroom.py)."""
        url = f"ws://127.0.0.1:{self.port}/api/collaboration/room/{self.room_id(path)}"
        request = HTTPRequest(url, headers={"Authorization": f"token {self.token}"})
        return await RoomReplica(await websocket_connect(request)).join()

    async def person(self, kernel_id: str) -> BrowserKernel:
        """A connection to the kernel's websocket, as JupyterLab opens it."""
        url = (f"ws://127.0.0.1:{self.port}/api/kernels/{kernel_id}/channels"
               f"?session_id={uuid.uuid4().hex}")
        request = HTTPRequest(url, headers={"Authorization": f"token {self.token}"})
        ws = await websocket_connect(request, subprotocols=[KERNEL_WS_PROTOCOL])
        assert ws.selected_subprotocol == KERNEL_WS_PROTOCOL, ws.selected_subprotocol
        return BrowserKernel(ws)


class BrowserKernel:
    """Runs cells over the kernel websocket (protocol v1) with a session of its own."""

    def __init__(self, ws: WebSocketClientConnection) -> None:
        self.ws = ws
        self.session = Session(username="person")

    async def execute(self, code: str, timeout: float = 60.0) -> list[dict[str, Any]]:
        """Run ``code``; returns its IOPub outputs once the kernel is idle again."""
        message = execute_request(self.session, code)
        parts = [json.dumps(message[key], default=str).encode()
                 for key in ("header", "parent_header", "metadata", "content")]
        await self.ws.write_message(serialize_msg_to_ws_v1(parts, "shell"), binary=True)
        msg_id = message["header"]["msg_id"]
        outputs = []
        async with asyncio.timeout(timeout):
            while True:
                raw = await self.ws.read_message()
                assert raw is not None, "the kernel websocket closed"
                channel, parts = deserialize_msg_from_ws_v1(raw)
                header, parent, _, content = (json.loads(part) for part in parts[:4])
                if channel != "iopub" or parent.get("msg_id") != msg_id:
                    continue
                if collect_output(header["msg_type"], content, outputs):
                    return outputs

    def close(self) -> None:
        self.ws.close()
