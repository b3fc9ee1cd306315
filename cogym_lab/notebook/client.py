"""Find the Jupyter server this kernel runs under, and talk to its cogym_lab REST API.

A kernel started by a Jupyter server knows its own id (the name of its connection file,
``kernel-<id>.json``) and, for a notebook, its session path (``JPY_SESSION_NAME``). The servers
running on this machine list themselves in runtime files (``jpserver-<pid>.json``). The server
that launched this kernel is the one that knows the kernel id; it is usable when its cogym_lab
extension answers. Everything here is plain HTTP with the standard library.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogym_lab.errors import CogymError

API_PREFIX = "cogym/api/sessions"
_KERNEL_FILE = re.compile(r"kernel-(?P<id>[0-9A-Za-z-]+)\.json$")


class CogymServerError(CogymError):
    """The server refused a request or could not be reached; ``status`` is the HTTP status
    (0 when there was no answer)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True)
class KernelIdentity:
    """What this kernel knows about where it runs."""

    kernel_id: str | None = None
    connection_file: str | None = None
    session_name: str | None = None  # the notebook's path, set by the server's session manager
    parent_pid: int | None = None

    @classmethod
    def current(cls) -> KernelIdentity:
        """The identity of the kernel this code runs in (empty outside a kernel)."""
        connection_file = _connection_file()
        kernel_id = None
        if connection_file:
            match = _KERNEL_FILE.search(Path(connection_file).name)
            kernel_id = match.group("id") if match else None
        parent = os.environ.get("JPY_PARENT_PID", "")
        return cls(kernel_id=kernel_id, connection_file=connection_file,
                   session_name=os.environ.get("JPY_SESSION_NAME") or None,
                   parent_pid=int(parent) if parent.isdigit() else None)


def running_cell_id() -> str | None:
    """The id JupyterLab gives the cell now running (it sends it in the execute request's
    metadata), or ``None`` outside such a cell."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    kernel = getattr(get_ipython(), "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    parent = get_parent() if callable(get_parent) else None
    metadata = parent.get("metadata") if isinstance(parent, dict) else None
    cell = metadata.get("cellId") if isinstance(metadata, dict) else None
    return cell if isinstance(cell, str) and cell else None


def _connection_file() -> str | None:
    try:
        from ipykernel.connect import get_connection_file

        return get_connection_file()
    except Exception:  # noqa: BLE001 - not inside an ipykernel: plain IPython or a script
        return None


class CogymServer:
    """The REST API of a Jupyter server with the cogym_lab extension.

    ``url`` is the server's root (``http://127.0.0.1:8888/`` plus its base URL); ``token`` its
    API token. Methods return the parsed JSON answer and raise :class:`CogymServerError`.
    """

    def __init__(self, url: str, token: str = "", *, root_dir: str | None = None,
                 timeout: float = 30.0) -> None:
        self.url = url if url.endswith("/") else url + "/"
        self.token = token
        self.root_dir = root_dir
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"CogymServer({self.url!r})"

    @property
    def base_path(self) -> str:
        """The server's base URL path (``/`` unless it runs under a prefix)."""
        return urllib.parse.urlsplit(self.url).path or "/"

    def request(self, method: str, path: str, body: Any = None,
                timeout: float | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path.lstrip("/"), data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"token {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as response:
                text = response.read()
        except urllib.error.HTTPError as error:
            raise CogymServerError(_error_text(error), status=error.code) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise CogymServerError(f"The Jupyter server at {self.url} did not answer: {reason}"
                                   ) from None
        return json.loads(text) if text else None

    # -- the cogym_lab API --------------------------------------------------------------------

    def answers(self, timeout: float = 5.0) -> bool:
        """Whether the cogym_lab extension is loaded and accepts this token."""
        try:
            return isinstance(self.request("GET", API_PREFIX, timeout=timeout), dict)
        except (CogymServerError, ValueError):
            return False

    def sessions(self) -> list[dict[str, Any]]:
        return self.request("GET", API_PREFIX)["sessions"]

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        # Creating builds an env (a dataset, a paper index, a link to a kernel still starting):
        # on a busy machine that can outlast an ordinary request.
        return self.request("POST", API_PREFIX, body, timeout=max(self.timeout, 120.0))

    def get(self, session_id: str) -> dict[str, Any]:
        return self.request("GET", f"{API_PREFIX}/{_quote(session_id)}")

    def end(self, session_id: str) -> dict[str, Any]:
        return self.request("DELETE", f"{API_PREFIX}/{_quote(session_id)}")

    def act(self, session_id: str, role: str, action: str | dict[str, Any]) -> dict[str, Any]:
        return self.request("POST", f"{API_PREFIX}/{_quote(session_id)}/actions",
                            {"role": role, "action": action})

    # -- the server's own API -----------------------------------------------------------------

    def knows_kernel(self, kernel_id: str, timeout: float = 5.0) -> bool:
        try:
            self.request("GET", f"api/kernels/{_quote(kernel_id)}", timeout=timeout)
            return True
        except (CogymServerError, ValueError):
            return False

    def notebook_path(self, kernel_id: str) -> str | None:
        """The path (relative to the server's root) of the notebook session using the kernel."""
        try:
            sessions = self.request("GET", "api/sessions")
        except (CogymServerError, ValueError):
            return None
        for session in sessions or []:
            if (session.get("kernel") or {}).get("id") == kernel_id:
                return session.get("path") or None
        return None


def _quote(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _error_text(error: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(error.read() or b"{}")
    except ValueError:
        body = {}
    message = body.get("message") or body.get("error")
    if message and error.code < 500:  # the server's own words are the whole story
        return str(message)
    return f"{message or error.reason} (HTTP {error.code})"


def running_servers(runtime_dirs: Iterable[str | Path] = ()) -> Iterator[dict[str, Any]]:
    """The servers that list themselves in the runtime folders (default: Jupyter's own, and
    the folder of this kernel's connection file). Each is jupyter_server's runtime info."""
    try:
        from jupyter_core.paths import jupyter_runtime_dir
        from jupyter_server.serverapp import list_running_servers
    except ImportError:  # no jupyter_server here: there is no server to find
        return
    folders = [str(folder) for folder in runtime_dirs] or [jupyter_runtime_dir()]
    connection_file = _connection_file()
    if not runtime_dirs and connection_file:
        folders.append(str(Path(connection_file).parent))
    seen: set[tuple[Any, Any]] = set()
    for folder in dict.fromkeys(folders):
        if not Path(folder).is_dir():
            continue
        for info in list_running_servers(folder):
            key = (info.get("pid"), info.get("port"))
            if key not in seen:
                seen.add(key)
                yield info


def _urls(info: dict[str, Any]) -> list[str]:
    """Ways to reach a server from this machine: its own URL, then loopback on its port."""
    urls = [info["url"]] if info.get("url") else []
    if info.get("port"):
        scheme = "https" if info.get("secure") else "http"
        urls.append(f"{scheme}://127.0.0.1:{info['port']}{info.get('base_url') or '/'}")
    return list(dict.fromkeys(urls))


def find_server(identity: KernelIdentity | None = None,
                runtime_dirs: Iterable[str | Path] = ()) -> CogymServer | None:
    """The server with the cogym_lab extension that launched this kernel, or ``None``.

    Only a server that knows this kernel's id counts, so another user's or another test's
    server on the same machine is never picked by mistake.
    """
    identity = identity or KernelIdentity.current()
    if not identity.kernel_id:
        return None
    servers = sorted(running_servers(runtime_dirs),
                     key=lambda info: info.get("pid") != identity.parent_pid)
    for info in servers:
        for url in _urls(info):
            server = CogymServer(url, info.get("token") or "", root_dir=info.get("root_dir"))
            if server.knows_kernel(identity.kernel_id):
                return server if server.answers() else None
    return None
