"""Watch a notebook's kernel for the cells the person runs, and for restarts.

A kernel broadcasts every execution on its IOPub channel: ``execute_input`` (the code), then the
outputs, then ``status: idle``, each with the request's header as parent. Requests sent by the
agent's executor carry its own session ids; everything else was run by the person (from the
browser, a console, another client). Silent executions (completion, inspection) broadcast no
``execute_input`` and are ignored.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from queue import Empty
from typing import Any

from cogym_lab.kernels import CellResult, Happening, KernelRestarted, PersonCell
from cogym_lab.kernels.cells import OutputCollector
from cogym_lab.server.live_notebooks.server_kernel import kernel_pid, open_client

log = logging.getLogger(__name__)


@dataclass
class _Running:
    code: str
    started: float
    collector: OutputCollector
    execution_count: int | None = None
    error: str | None = None
    status: str = "ok"


class KernelWatcher:
    """Reports the person's cells and the kernel's restarts on kernel ``kernel_id``.

    ``ignore(parent_header)`` says which requests are not the person's (the agent's executor).
    Call :meth:`start` before the person may act, so no cell is missed; then iterate
    :meth:`happenings`.
    """

    #: How often (seconds) the kernel process is checked for a restart while IOPub is quiet.
    poll_interval = 0.5

    def __init__(self, kernels: Any, kernel_id: str, *,
                 ignore: Callable[[dict[str, Any]], bool] = lambda parent: False,
                 max_output_chars: int = 20_000, ready_timeout: float = 60.0) -> None:
        self.kernels = kernels
        self.kernel_id = kernel_id
        self.ignore = ignore
        self.max_output_chars = max_output_chars
        self.ready_timeout = ready_timeout
        self._client: Any = None
        self._session_id: str | None = None
        self._pid: int | None = None
        self._closed = False

    @property
    def watching(self) -> bool:
        return self._client is not None

    async def start(self) -> None:
        """Connect to the kernel and wait until its broadcasts reach us."""
        if self._client is not None:
            return
        km = self.kernels.get_kernel(self.kernel_id)
        self._pid = kernel_pid(km)
        self._client, self._session_id = await open_client(km, "cogym-watch",
                                                           self.ready_timeout)

    async def close(self) -> None:
        self._closed = True
        client, self._client = self._client, None
        if client is not None:
            try:
                client.stop_channels()
            except Exception:  # best effort: the kernel may be gone already
                log.debug("stop_channels failed", exc_info=True)

    async def happenings(self) -> AsyncIterator[Happening]:
        """The person's finished cells and the kernel's restarts, in order, until closed."""
        await self.start()
        running: dict[str, _Running] = {}
        while not self._closed and self._client is not None:
            try:
                message = await self._client.get_iopub_msg(timeout=self.poll_interval)
            except Empty:
                if await self._restarted():
                    running.clear()  # their outputs will never come
                    yield KernelRestarted()
                continue
            except (asyncio.CancelledError, GeneratorExit):
                raise
            except Exception:  # a closed socket while stopping
                if self._closed:
                    return
                log.debug("reading IOPub failed", exc_info=True)
                await asyncio.sleep(self.poll_interval)
                continue
            finished = self._take(message, running)
            if finished is not None:
                yield finished

    async def _restarted(self) -> bool:
        """Whether the kernel process changed; if so, reconnect to the new one."""
        if self.kernel_id not in self.kernels:
            return False
        km = self.kernels.get_kernel(self.kernel_id)
        pid = kernel_pid(km)
        if pid is None or pid == self._pid:
            return False
        client, self._client = self._client, None
        if client is not None:
            client.stop_channels()
        try:
            await self.start()
        except Exception:  # still starting: try again at the next quiet moment
            log.debug("reconnecting to the restarted kernel failed", exc_info=True)
            self._client = None
            await asyncio.sleep(self.poll_interval)
            return await self._restarted() if not self._closed else False
        return True

    def _take(self, message: dict[str, Any], running: dict[str, _Running]) -> PersonCell | None:
        """Add one IOPub message to the cell it belongs to; return the cell once it is done."""
        parent = message.get("parent_header") or {}
        if parent.get("session") == self._session_id or self.ignore(parent):
            return None
        msg_id, kind = parent.get("msg_id"), message.get("msg_type")
        if not isinstance(msg_id, str):  # no execution request to tie it to
            return None
        content = message.get("content", {})
        if kind == "execute_input":
            running[msg_id] = _Running(code=content.get("code", ""), started=time.monotonic(),
                                       collector=OutputCollector(self.max_output_chars),
                                       execution_count=content.get("execution_count"))
            return None
        cell = running.get(msg_id)
        if cell is None:  # began before we watched, or not an execution
            return None
        if kind == "stream":
            cell.collector.stream(content.get("name", "stdout"), content.get("text", ""))
        elif kind in ("execute_result", "display_data", "update_display_data"):
            cell.collector.rich("result" if kind == "execute_result" else "display",
                                content.get("data", {}))
        elif kind == "error":
            cell.collector.error(content.get("ename", "Error"), content.get("evalue", ""),
                                 content.get("traceback", []))
            cell.status = "error"
            cell.error = f"{content.get('ename', 'Error')}: {content.get('evalue', '')}"
        elif kind == "clear_output":
            cell.collector.outputs.clear()
        elif kind == "status" and content.get("execution_state") == "idle":
            del running[msg_id]
            truncated = cell.collector.finish()
            return PersonCell(code=cell.code, result=CellResult(
                code=cell.code, status=cell.status,  # type: ignore[arg-type]
                execution_count=cell.execution_count, outputs=cell.collector.outputs,
                error=cell.error, truncated=truncated,
                duration=time.monotonic() - cell.started))
        return None
