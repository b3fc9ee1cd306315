"""Where a notebook's sessions run: in the Jupyter server (over its REST API) or in this kernel.

Both backends take the same create request and give the same answers (the server extension's
JSON), so the Python API and the magics never care which one they use.
"""

from __future__ import annotations

import builtins
import logging
from pathlib import Path
from typing import Any, Protocol

from cogym_lab.errors import CogymError
from cogym_lab.notebook.client import (
    CogymServer,
    CogymServerError,
    KernelIdentity,
    find_server,
    running_cell_id,
)
from cogym_lab.runtime.models import CreatedIn, CreateRequest

log = logging.getLogger(__name__)

__all__ = ["Backend", "CreateRequest", "LocalBackend", "ServerBackend", "SessionError", "backend",
           "server_backend"]


class SessionError(CogymError):
    """A session could not be created, found or driven; the message says why."""


class Backend(Protocol):
    kind: str  # "server" or "local"

    @property
    def can_block(self) -> bool:
        """Whether a caller may wait for the session with a blocking sleep."""

    def create(self, request: CreateRequest) -> dict[str, Any]: ...
    def snapshot(self, session_id: str) -> dict[str, Any]: ...
    def act(self, session_id: str, role: str, action: str | dict[str, Any]) -> None:
        """Act as ``role``. Raises :class:`SessionError` when the action was not applied (the
        session ended first), once the env has said so; see the backends for when it waits."""
    def end(self, session_id: str) -> dict[str, Any]: ...
    def list(self) -> builtins.list[dict[str, Any]]: ...
    def panel(self, session_id: str, role: str, readonly: bool = False,
              part: str = "all") -> Any:
        """The session panel following ``role``: its person seat, or (``readonly``) any
        member, watched; ``part="chat"``: only its chat and the agents' status."""
    async def asnapshot(self, session_id: str) -> dict[str, Any]: ...


class ServerBackend:
    """Sessions hosted by the Jupyter server this kernel belongs to."""

    kind = "server"
    can_block = True  # the session runs in another process: waiting here does not stall it

    def __init__(self, server: CogymServer, identity: KernelIdentity | None = None) -> None:
        self.server = server
        self.identity = identity or KernelIdentity()

    def __repr__(self) -> str:
        return f"ServerBackend({self.server.url!r})"

    def _call(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self.server, method)(*args)
        except CogymServerError as error:
            raise SessionError(error.message) from None

    def create(self, request: CreateRequest) -> dict[str, Any]:
        """Create the session; the request says which notebook cell of this kernel asks, so
        that the session belongs to this kernel and a cell run again can find it."""
        if request.created_in is None:
            request = request.model_copy(update={"created_in": self.created_in()})
        return self._call("create", request.body())

    def created_in(self) -> CreatedIn | None:
        """This kernel, its notebook and the cell running now, as far as they are known."""
        kernel_id = self.identity.kernel_id
        if not kernel_id:
            return None
        notebook = self.notebook()
        return CreatedIn(kernel_id=kernel_id,
                         path=notebook["path"] if notebook else None,
                         cell_id=notebook.get("cell_id") if notebook else None)

    def started_in_cell(self, cell_id: str) -> dict[str, Any] | None:
        """The newest running session of yours that this notebook's cell ``cell_id`` created
        (from this kernel or an earlier one of the notebook: a restart, a reopened notebook);
        ``None`` if there is none."""
        notebook = self.notebook()
        if notebook is None:
            return None
        found = [summary for summary in self.list()
                 if summary.get("status") == "running"
                 and (summary.get("owned") or summary.get("seats"))
                 and (summary.get("created_in") or {}).get("path") == notebook["path"]
                 and (summary.get("created_in") or {}).get("cell_id") == cell_id]
        return max(found, key=lambda s: s.get("created_at") or 0, default=None)

    def snapshot(self, session_id: str) -> dict[str, Any]:
        return self._call("get", session_id)

    async def asnapshot(self, session_id: str) -> dict[str, Any]:
        import asyncio

        return await asyncio.to_thread(self.snapshot, session_id)

    def act(self, session_id: str, role: str, action: str | dict[str, Any]) -> None:
        self._call("act", session_id, role, action)

    def end(self, session_id: str) -> dict[str, Any]:
        return self._call("end", session_id)

    def list(self) -> builtins.list[dict[str, Any]]:
        return self._call("sessions")

    def notebook(self) -> dict[str, str] | None:
        """This kernel's notebook (path relative to the server's root), kernel id, and the cell
        running now (the agent's cells go below it)."""
        kernel_id = self.identity.kernel_id
        if not kernel_id:
            return None
        path = self.server.notebook_path(kernel_id) or self.identity.session_name
        if not path:
            return None
        cell = running_cell_id()
        return {"path": path, "kernel_id": kernel_id, **({"cell_id": cell} if cell else {})}

    def panel(self, session_id: str, role: str, readonly: bool = False,
              part: str = "all") -> Any:
        from cogym_lab.widgets import SessionPanel

        return SessionPanel.for_server(self.server.base_path, self.server.token, session_id,
                                       role, readonly=readonly, part=part)


class LocalBackend:
    """Sessions hosted in this process (see :mod:`cogym_lab.notebook.local`)."""

    kind = "local"

    def __init__(self, results_dir: str | Path | None = None) -> None:
        from cogym_lab.notebook.local import local_runtime

        self.runtime = local_runtime(results_dir)
        self.host = self.runtime.host

    @property
    def can_block(self) -> bool:
        """False inside the kernel's loop: blocking there would stop the session too."""
        return not self.runtime.in_kernel_loop

    def __repr__(self) -> str:
        return f"LocalBackend({str(self.host.results_dir)!r})"

    def _call(self, coroutine: Any) -> Any:
        from cogym_lab.runtime.hosting import HostingError

        try:
            return self.runtime.call(coroutine)
        except HostingError as error:
            raise SessionError(error.message) from None

    def create(self, request: CreateRequest) -> dict[str, Any]:
        spec = request.spec().model_copy(update={"notebook": None})  # no server: own kernel
        hosted = self._call(self.host.create(spec))
        return hosted.summary()

    def snapshot(self, session_id: str) -> dict[str, Any]:
        return self._call(self._snapshot(session_id))

    async def asnapshot(self, session_id: str) -> dict[str, Any]:
        from cogym_lab.runtime.hosting import HostingError

        try:
            return await self.runtime.wait_for(self._snapshot(session_id))
        except HostingError as error:
            raise SessionError(error.message) from None

    async def _snapshot(self, session_id: str) -> dict[str, Any]:
        return self.host.snapshot(session_id)

    def act(self, session_id: str, role: str, action: str | dict[str, Any]) -> None:
        """Outside the kernel's loop, wait (up to :data:`ANSWER_WAIT` seconds) for the env to
        apply it, and raise :class:`SessionError` if it did not. Inside it nothing may wait:
        the action is passed on, and a refusal that comes later is logged as a warning."""
        if self.can_block:
            self._call(self._act_settled(session_id, role, action))
            return
        submitted = self._call(self.host.submit(session_id, role, action))
        if submitted.outcome is not None:
            submitted.outcome.add_done_callback(_warn_if_refused)

    async def _act_settled(self, session_id: str, role: str, action: Any) -> None:
        from cogym_lab.runtime.hosting import HostingError

        submitted = await self.host.submit(session_id, role, action)
        settled = await submitted.settled(ANSWER_WAIT)
        if settled is not None and not settled.applied:
            raise HostingError(settled.message or "The action was not applied.", status=409)

    def end(self, session_id: str) -> dict[str, Any]:
        from cogym_lab.notebook.local import StillRunning
        from cogym_lab.runtime.hosting import HostingError

        try:
            hosted = self.runtime.call(self.host.end(session_id))
        except HostingError as error:
            raise SessionError(error.message) from None
        except StillRunning:  # inside the kernel's loop: the session stops in a moment
            hosted = self.host.get(session_id)
        return hosted.summary()

    def list(self) -> builtins.list[dict[str, Any]]:
        return self._call(self._list())

    async def _list(self) -> builtins.list[dict[str, Any]]:
        return self.host.list()

    def panel(self, session_id: str, role: str, readonly: bool = False,
              part: str = "all") -> Any:
        from cogym_lab.widgets import SessionPanel

        return SessionPanel.for_local(self.host, session_id, role, loop=self.runtime.loop,
                                      readonly=readonly, part=part)


#: Seconds a blocking ``act`` of a local session waits for the env's answer.
ANSWER_WAIT = 5.0


def _warn_if_refused(outcome: Any) -> None:
    """Say that an action passed on from inside the kernel's loop was not applied after all."""
    if outcome.cancelled():
        return
    settled = outcome.result()
    if not settled.applied:
        log.warning("The action of %s was not applied: %s", settled.role, settled.message)


_server_backend: ServerBackend | None = None
_looked_for_server = False


def server_backend(refresh: bool = False) -> ServerBackend | None:
    """The backend of the Jupyter server that launched this kernel, if it has cogym_lab."""
    global _server_backend, _looked_for_server
    if refresh or not _looked_for_server or (
            _server_backend is not None and not _server_backend.server.answers()):
        identity = KernelIdentity.current()
        server = find_server(identity)
        _server_backend = ServerBackend(server, identity) if server else None
        _looked_for_server = True
    return _server_backend


def backend(mode: str = "auto", results_dir: str | Path | None = None) -> Backend:
    """``"server"``, ``"local"``, or ``"auto"``: the server when one is reachable, else local."""
    if mode not in ("auto", "server", "local"):
        raise SessionError(f"mode must be 'auto', 'server' or 'local', not {mode!r}.")
    if mode != "local":
        found = server_backend()
        if found is not None:
            return found
        if mode == "server":
            raise SessionError("No Jupyter server with the cogym_lab extension launched this "
                               "kernel. Open the notebook in JupyterLab started from the same "
                               "environment (`jupyter lab`), or use mode='local'.")
    return LocalBackend(results_dir)
