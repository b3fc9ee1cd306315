"""Kernel executors: run notebook cells in a Jupyter kernel and collect their outputs.

:class:`KernelExecutor` is the interface a task talks to; :class:`LocalKernelExecutor` is the
default implementation, which starts a real IPython kernel as a local subprocess through
``jupyter_client`` (no containers), isolated by default in a :class:`KernelSandbox` (a private
home and temp folder, and an environment that names no data directory; see ``sandbox.py``) and,
on Linux, confined (``confine.py``: its own process and mount namespaces, where no other process
can be seen and the data folders are empty).
"""

from __future__ import annotations

import abc
import asyncio
import functools
import logging
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from queue import Empty
from typing import Any, Literal, Self

from cogym_lab.kernels.cells import CellResult, OutputCollector
from cogym_lab.kernels.confine import confined_command, confinement_available
from cogym_lab.kernels.sandbox import KernelSandbox, hidden_locations

log = logging.getLogger(__name__)


@functools.cache
def _kernel_manager_class() -> type:
    from jupyter_client.manager import AsyncKernelManager

    class ConfinedKernelManager(AsyncKernelManager):
        """Starts its kernel through the confinement launcher, unless ``covered`` is None."""

        def __init__(self, *, covered: list[str] | None, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.covered = covered

        def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
            command = super().format_kernel_cmd(extra_arguments)
            return command if self.covered is None else confined_command(command, self.covered)

    return ConfinedKernelManager


def _confined_kernel_manager(*, kernel_name: str, covered: list[str] | None) -> Any:
    """An ``AsyncKernelManager`` whose kernel is confined with ``covered`` folders covered
    (``None``: not confined). jupyter_client is imported only when a kernel starts."""
    return _kernel_manager_class()(kernel_name=kernel_name, covered=covered)


@functools.cache
def _warn_unconfined() -> None:
    log.warning("Kernels are not confined on this machine (no Linux user namespaces): a cell can "
                "read other processes' environment and find the data directory. See "
                "docs/tabular-scoring.md (the kernel sandbox).")

__all__ = ["KernelExecutor", "LocalKernelExecutor"]


class KernelExecutor(abc.ABC):
    """Runs code cells in one stateful kernel whose working directory is `cwd`.

    The default implementation is `LocalKernelExecutor` (a private IPython kernel
    started through jupyter_client). The Jupyter server extension implements it again for
    the kernel of the notebook a person has open, so callers must only rely on the methods
    declared here.

    Usable as an async context manager: ``async with LocalKernelExecutor(d) as ex:``
    starts the kernel on entry and shuts it down on exit.
    """

    cwd: Path

    @abc.abstractmethod
    async def start(self) -> None:
        """Start the kernel (no-op if it is already running)."""

    @abc.abstractmethod
    async def execute(self, code: str, *, timeout: float | None = None) -> CellResult:
        """Execute `code` as one cell and return its outputs.

        Never raises for problems of the cell itself: errors, timeouts and kernel
        deaths are reported through `CellResult.status` / `CellResult.error`.
        """

    @abc.abstractmethod
    async def interrupt(self) -> None:
        """Interrupt the currently running cell (like the notebook's stop button)."""

    @abc.abstractmethod
    async def restart(self) -> None:
        """Restart the kernel; all variables are lost."""

    @abc.abstractmethod
    async def shutdown(self) -> None:
        """Stop the kernel and release its resources. Idempotent."""

    @property
    @abc.abstractmethod
    def alive(self) -> bool:
        """Whether the kernel is currently running."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()


class LocalKernelExecutor(KernelExecutor):
    """A private IPython kernel, started as a local subprocess in `cwd`.

    One kernel per executor. Concurrent `execute` calls run one at a time.

    Per-cell timeout: when a cell runs longer than its timeout the kernel is
    interrupted (SIGINT, i.e. KeyboardInterrupt); if the cell does not stop within
    `interrupt_grace` seconds (stuck in C code, SIGINT ignored) the kernel is
    restarted and its state is lost. A kernel that dies during a cell is restarted.

    Isolation (``isolated=True``, the default): the kernel gets a :class:`KernelSandbox`, a
    fresh empty home and a private temp folder in ``sandbox_root`` (a new temporary folder by
    default), and an environment without ``COGYM_DATA`` or anything else that names the data
    directory, the data cache or a folder in ``hidden_paths``. The sandbox lives until
    :meth:`shutdown` (restarts keep it). ``isolated=False`` gives the kernel the parent's
    environment unchanged, for a person's own data.

    Confinement (isolated kernels only; :mod:`cogym_lab.kernels.confine`): the kernel runs in
    its own user, PID and mount namespaces, where it sees no other process (so no parent's
    ``/proc/<pid>/environ`` or command line names the data) and the hidden folders are empty.
    ``confine=None`` (the default) confines wherever the machine allows it and warns once where
    it does not (not Linux, or user namespaces switched off); ``True`` refuses to start an
    unconfined kernel; ``False`` does not confine. :attr:`confined` says what happened.
    """

    #: How often (seconds) the kernel process is checked while waiting for output.
    poll_interval = 0.5
    #: How long (seconds) to wait for an interrupted cell to stop before restarting.
    interrupt_grace = 5.0
    #: How long (seconds) to wait for a cell's execute_reply after its final idle status.
    reply_timeout = 5.0
    #: Whether a cell that ignores the interrupt after its timeout gets the kernel restarted (a
    #: private kernel: yes; a person's own kernel is never restarted behind their back).
    restart_stuck_cells = True

    def __init__(
        self,
        cwd: str | Path,
        *,
        kernel_name: str = "python3",
        timeout: float | None = 60.0,
        max_output_chars: int = 20_000,
        startup_timeout: float = 60.0,
        isolated: bool = True,
        sandbox_root: str | Path | None = None,
        hidden_paths: Iterable[str | Path] = (),
        confine: bool | None = None,
    ) -> None:
        self.cwd = Path(cwd).resolve()
        self.kernel_name = kernel_name
        self.timeout = timeout
        self.max_output_chars = max_output_chars
        self.startup_timeout = startup_timeout
        self.isolated = isolated
        self.sandbox_root = Path(sandbox_root) if sandbox_root is not None else None
        self.hidden_paths = [Path(p) for p in hidden_paths]
        self.sandbox: KernelSandbox | None = None  # while an isolated kernel runs
        self.confine = confine
        self.confined = False  # whether the running kernel is confined (see the class doc)
        self._km: Any = None  # AsyncKernelManager
        self._kc: Any = None  # AsyncKernelClient
        self._lock = asyncio.Lock()
        self._start_lock = asyncio.Lock()
        self._closed = False
        self.restarts = 0

    # ------------------------------------------------------------------ lifecycle

    @property
    def kernel_manager(self) -> Any:
        """The underlying `jupyter_client.AsyncKernelManager` (None when stopped)."""
        return self._km

    @property
    def pid(self) -> int | None:
        """The kernel process id, when it is running."""
        km = self._km
        prov = getattr(km, "provisioner", None) if km is not None else None
        proc = getattr(prov, "process", None)
        return getattr(proc, "pid", None) if proc is not None else None

    @property
    def alive(self) -> bool:
        km = self._km
        if km is None or not km.has_kernel:
            return False
        proc = getattr(km.provisioner, "process", None)
        if proc is None:  # a non-local provisioner: trust it has a kernel
            return True
        return proc.poll() is None

    async def start(self) -> None:
        async with self._start_lock:
            if self._km is not None:
                return
            self._closed = False
            self.cwd.mkdir(parents=True, exist_ok=True)
            launch: dict[str, Any] = {"cwd": str(self.cwd)}
            covered: list[str] | None = None
            if self.isolated:
                if self.sandbox is None:
                    self.sandbox = KernelSandbox.create(self.sandbox_root)
                launch["env"] = self.sandbox.environment(hidden=self.hidden_paths)
                covered = self._covered_folders()
            km = _confined_kernel_manager(kernel_name=self.kernel_name, covered=covered)
            self.confined = covered is not None
            await km.start_kernel(**launch)
            self._km = km
            try:
                await self._connect()
            except BaseException:
                await self._teardown()
                raise

    def _covered_folders(self) -> list[str] | None:
        """The folders to cover in a confined kernel, or ``None`` not to confine it."""
        if self.confine is False:
            return None
        if not confinement_available():
            if self.confine:
                raise RuntimeError(
                    "The kernel cannot be confined on this machine (it needs Linux with user "
                    "namespaces allowed); it was asked to be, so it was not started.")
            _warn_unconfined()
            return None
        assert self.sandbox is not None
        # A folder that holds what the kernel needs (its folder, Python) is not covered: a
        # data directory set to such a place cannot be hidden this way.
        needed = [self.cwd, self.sandbox.root, Path(sys.executable).resolve(), Path(sys.prefix)]
        return [str(folder) for folder in hidden_locations(self.hidden_paths)
                if not any(path == folder or path.is_relative_to(folder) for path in needed)]

    async def _connect(self) -> None:
        kc = self._km.client()
        kc.start_channels()
        self._kc = kc
        try:
            await kc.wait_for_ready(timeout=self.startup_timeout)
        except RuntimeError as exc:
            raise RuntimeError(f"kernel {self.kernel_name!r} did not become ready: {exc}") from exc

    async def _disconnect(self) -> None:
        kc, self._kc = self._kc, None
        if kc is not None:
            try:
                kc.stop_channels()
            except Exception:  # pragma: no cover - best effort
                log.debug("stop_channels failed", exc_info=True)

    async def _teardown(self) -> None:
        await self._disconnect()
        km, self._km = self._km, None
        if km is not None:
            try:
                if km.has_kernel:
                    await km.shutdown_kernel(now=True)
                else:
                    await km.cleanup_resources()
            except Exception:  # pragma: no cover - best effort
                log.debug("shutdown_kernel failed", exc_info=True)

    async def _restart_kernel(self) -> None:
        """Kill and start the kernel again (no locking; state is lost)."""
        if self._km is None:
            await self.start()
            return
        await self._disconnect()
        await self._km.restart_kernel(now=True)
        self.restarts += 1
        await self._connect()

    async def interrupt(self) -> None:
        if self._km is not None and self._km.has_kernel:
            await self._km.interrupt_kernel()

    async def restart(self) -> None:
        """Restart the kernel (waits for a running cell; `interrupt()` it first)."""
        async with self._lock:
            await self._restart_kernel()

    async def shutdown(self) -> None:
        self._closed = True
        await self._teardown()
        sandbox, self.sandbox = self.sandbox, None
        if sandbox is not None:
            sandbox.remove()

    # ------------------------------------------------------------------ execution

    async def execute(self, code: str, *, timeout: float | None = None) -> CellResult:
        async with self._lock:
            if self._km is None:
                await self.start()
            elif not self.alive:
                await self._restart_kernel()
            return await self._execute(code, self.timeout if timeout is None else timeout)

    async def _execute(self, code: str, timeout: float | None) -> CellResult:
        kc = self._kc
        started = time.monotonic()
        deadline = None if timeout is None else started + timeout
        msg_id = kc.execute(code, silent=False, store_history=True, allow_stdin=False)
        collector = OutputCollector(self.max_output_chars)
        execution_count: int | None = None
        status: Literal["ok", "error", "timeout", "died"] = "ok"
        error: str | None = None
        interrupted_at: float | None = None
        finished = False

        while not finished:
            now = time.monotonic()
            if interrupted_at is not None:
                wait = interrupted_at + self.interrupt_grace - now
            elif deadline is not None:
                wait = deadline - now
            else:
                wait = self.poll_interval
            if wait <= 0:
                if interrupted_at is None:
                    # first: try to stop the cell like the notebook's stop button
                    interrupted_at = time.monotonic()
                    status = "timeout"
                    try:
                        await self.interrupt()
                    except Exception:  # pragma: no cover
                        log.debug("interrupt failed", exc_info=True)
                    continue
                if not self.restart_stuck_cells:
                    error = (f"Cell timed out after {timeout:g}s and did not stop when "
                             "interrupted; the kernel is still busy with it.")
                    break
                # the cell ignored the interrupt: restart the kernel
                await self._restart_kernel()
                error = (
                    f"Cell timed out after {timeout:g}s and did not stop when interrupted; "
                    "the kernel was restarted and all variables were lost."
                )
                break
            try:
                msg = await kc.get_iopub_msg(timeout=min(wait, self.poll_interval))
            except Empty:
                lost = await self._check_kernel()
                if lost is not None:
                    status, error = "died", lost
                    break
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            mtype = msg["msg_type"]
            content = msg.get("content", {})
            if mtype == "status":
                if content.get("execution_state") == "idle":
                    finished = True
            elif mtype == "execute_input":
                execution_count = content.get("execution_count", execution_count)
            elif mtype == "stream":
                collector.stream(content.get("name", "stdout"), content.get("text", ""))
            elif mtype in ("execute_result", "display_data", "update_display_data"):
                kind: Literal["result", "display"] = (
                    "result" if mtype == "execute_result" else "display"
                )
                collector.rich(kind, content.get("data", {}))
                if mtype == "execute_result":
                    execution_count = content.get("execution_count", execution_count)
            elif mtype == "error":
                collector.error(
                    content.get("ename", "Error"),
                    content.get("evalue", ""),
                    content.get("traceback", []),
                )
                if status != "timeout":
                    status = "error"
                    error = f"{content.get('ename', 'Error')}: {content.get('evalue', '')}"
            elif mtype == "clear_output":
                collector.outputs.clear()

        if finished:
            reply = await self._get_reply(msg_id)
            if reply is not None:
                rc = reply.get("content", {})
                execution_count = rc.get("execution_count", execution_count)
                if status == "ok" and rc.get("status") == "error":
                    status = "error"
                    error = f"{rc.get('ename', 'Error')}: {rc.get('evalue', '')}"
            if status == "timeout":
                error = (
                    f"Cell timed out after {timeout:g}s and was interrupted "
                    "(KeyboardInterrupt); the kernel is still running and its state is kept."
                )

        truncated = collector.finish()
        return CellResult(
            code=code,
            status=status,
            execution_count=execution_count,
            outputs=collector.outputs,
            error=error,
            truncated=truncated,
            duration=time.monotonic() - started,
        )

    async def _check_kernel(self) -> str | None:
        """Called while a cell waits for output: ``None`` while the kernel is fine, else why the
        cell's result is lost (here: the kernel died, and is restarted)."""
        if self.alive:
            return None
        if self._closed or self._km is None:
            return "The executor was shut down while the cell ran."
        await self._restart_kernel()
        return ("The kernel died while executing the cell and was restarted; "
                "all variables were lost.")

    async def _get_reply(self, msg_id: str) -> dict[str, Any] | None:
        """The shell execute_reply for `msg_id` (skipping stale replies of earlier cells)."""
        end = time.monotonic() + self.reply_timeout
        while (left := end - time.monotonic()) > 0:
            try:
                msg = await self._kc.get_shell_msg(timeout=left)
            except Empty:
                return None
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return msg
        return None
