"""Run the agent's cells in a kernel the Jupyter server already manages (a notebook's kernel).

The executor talks to the kernel over its own ZMQ connection, with a session id of its own, so
the kernel's messages caused by the agent can be told from the person's. It never starts, stops
or restarts the kernel on its own: the kernel belongs to the person. When the person restarts
it, the executor notices (a new kernel process) and reconnects.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from jupyter_client.session import Session
from jupyter_server.utils import ensure_async

from cogym_lab.kernels import CellResult, LocalKernelExecutor

log = logging.getLogger(__name__)

RESTARTED_DURING_CELL = ("The notebook's kernel was restarted while the cell ran; every "
                         "variable is gone.")


def kernel_pid(kernel_manager: Any) -> int | None:
    """The process id of a managed kernel (changes when the kernel restarts)."""
    provisioner = getattr(kernel_manager, "provisioner", None)
    return getattr(provisioner, "pid", None) if provisioner is not None else None


async def open_client(kernel_manager: Any, username: str, timeout: float) -> tuple[Any, str]:
    """A client of a managed kernel with a session id of its own: (client, session id).

    Unless the kernel is busy, wait until it answers: a kernel still starting drops requests,
    and the answer proves that its broadcasts reach us. A busy kernel is up, and waiting on it
    could deadlock: the busy cell may be the very one asking for this connection (``%cogym new``
    waiting on the server).
    """
    session = Session(key=kernel_manager.session.key,
                      signature_scheme=kernel_manager.session.signature_scheme, username=username)
    client = kernel_manager.client(session=session)
    client.start_channels()
    if getattr(kernel_manager, "execution_state", None) != "busy":
        try:
            await client.wait_for_ready(timeout=timeout)
        except RuntimeError:  # became busy meanwhile, or slow: the connection still works
            log.debug("kernel %s did not answer within %ss", kernel_manager.kernel_id, timeout)
    return client, session.session


class ServerKernelExecutor(LocalKernelExecutor):
    """A :class:`KernelExecutor` on kernel ``kernel_id`` of the server's ``kernels`` (its
    ``MultiKernelManager``). ``cwd`` is the notebook's folder, where the kernel runs."""

    restart_stuck_cells = False  # a person's kernel is never restarted behind their back
    #: How long (seconds) to wait for a kernel that is not busy to answer when connecting.
    ready_timeout = 60.0

    def __init__(self, kernels: Any, kernel_id: str, cwd: str | Path, *,
                 timeout: float | None = 60.0, max_output_chars: int = 20_000,
                 startup_timeout: float = 60.0) -> None:
        super().__init__(cwd, timeout=timeout, max_output_chars=max_output_chars,
                         startup_timeout=startup_timeout)
        self.kernels = kernels
        self.kernel_id = kernel_id
        #: Every client session id this executor used: messages with these parents are ours.
        self.client_sessions: set[str] = set()
        self._pid: int | None = None

    def owns(self, parent_header: dict[str, Any]) -> bool:
        """Whether a kernel message answers a request this executor sent."""
        return parent_header.get("session") in self.client_sessions

    def _server_kernel(self) -> Any:
        if self.kernel_id not in self.kernels:
            raise RuntimeError(f"The notebook's kernel {self.kernel_id} is not running in this "
                               "Jupyter server any more; start it again from the notebook.")
        return self.kernels.get_kernel(self.kernel_id)

    @property
    def alive(self) -> bool:
        return self._km is not None and self.kernel_id in self.kernels and super().alive

    async def start(self) -> None:
        async with self._start_lock:
            if self._kc is not None:
                return
            self._closed = False
            self._km = self._server_kernel()
            await self._connect()

    async def _connect(self) -> None:
        self._pid = kernel_pid(self._km)
        self._kc, session_id = await open_client(self._km, "cogym-agent", self.ready_timeout)
        self.client_sessions.add(session_id)

    def _replaced(self) -> bool:
        """Whether the kernel process changed since we connected (a restart)."""
        pid = kernel_pid(self._km) if self._km is not None else None
        return pid is not None and pid != self._pid

    async def _reconnect(self) -> None:
        await self._disconnect()
        self._km = self._server_kernel()
        await self._connect()

    async def _restart_kernel(self) -> None:
        await ensure_async(self.kernels.restart_kernel(self.kernel_id))
        self.restarts += 1
        await self._reconnect()

    async def _teardown(self) -> None:
        await self._disconnect()
        self._km = None

    async def interrupt(self) -> None:
        if self.kernel_id in self.kernels:
            await ensure_async(self.kernels.interrupt_kernel(self.kernel_id))

    async def execute(self, code: str, *, timeout: float | None = None) -> CellResult:
        async with self._lock:
            if self._kc is None:
                await self.start()
            elif self.kernel_id in self.kernels and self._replaced():
                await self._reconnect()
            if not self.alive:
                return CellResult(code=code, status="died", execution_count=None,
                                  error="The notebook's kernel is not running; start it from the "
                                        "notebook and run the cell again.")
            return await self._execute(code, self.timeout if timeout is None else timeout)

    async def _check_kernel(self) -> str | None:
        if self._closed or self._km is None:
            return "The executor was shut down while the cell ran."
        if self.kernel_id not in self.kernels:
            return "The notebook's kernel was shut down while the cell ran."
        if self._replaced():
            await self._reconnect()
            return RESTARTED_DURING_CELL
        if not super().alive:
            return ("The notebook's kernel died while the cell ran; Jupyter restarts it, and "
                    "every variable is gone.")
        return None
