"""Provider-wide limits on LM calls: requests in flight and requests per minute, per endpoint and
model, and a slowdown for everyone when the provider answers 429.

Every attempt of :meth:`cogym_lab.lm.LM.complete` runs inside ``async with gate.slot(key)`` of the
process's *gate* (:func:`current_gate`), ``key`` naming the LM's model and endpoint
(:func:`~cogym_lab.lm.limit_rules.limit_key`). A 429 that says how long to wait (``Retry-After``)
becomes ``gate.slowdown(key, seconds)``: no caller of that key starts a request before then, not
only the one that was told. Waiting for a slot counts against the call's deadline.

Two gates:

* :class:`LocalGate`, for one process: every LM of the process shares it, on any event loop and
  any thread (a batch run on a thread inside a notebook, say). The default one has no limits:
  it lets every request through at once, after one check, until a 429 slows a key down.
* :class:`~cogym_lab.lm.ray_gate.RayGate`, for a Ray cluster: one named actor holds the counts
  for every worker. The driver makes it with ``RayGate.create(name, limits)``; each worker
  process routes its LM calls through it with ``install_gate(RayGate(name))``.

The rules themselves are :class:`~cogym_lab.lm.limit_rules.ProviderLimits`. A gate starts with
some limits and more can be laid over them for a while (:meth:`Gate.applied`): a batch run does
that with its ``limits=``, so two runs in one notebook share the provider's limits.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import itertools
import threading
import time
from collections import deque
from collections.abc import Iterator
from types import TracebackType

from cogym_lab.lm.gate_book import FREE, GateBook, LimitState, Ticket, describe_states
from cogym_lab.lm.limit_rules import Limit, ProviderLimits, limit_key, parse_limits

__all__ = ["Gate", "Limit", "LimitState", "LocalGate", "ProviderLimits",
           "current_gate", "describe_states", "install_gate", "limit_key", "parse_limits"]


class Gate(abc.ABC):
    """Where every LM attempt waits for its turn: slots per key, and slowdowns."""

    @abc.abstractmethod
    def slot(self, key: str) -> contextlib.AbstractAsyncContextManager[None]:
        """``async with gate.slot(key):`` around one request under ``key``: entering waits until
        the limits let it start, leaving gives the slot back (also on error or cancellation)."""

    @abc.abstractmethod
    def slowdown(self, key: str, seconds: float) -> None:
        """The provider asked for a pause: no request under ``key`` starts for ``seconds``."""

    @abc.abstractmethod
    def states(self) -> list[LimitState]:
        """How every limited pool stands now, for a progress bar. Never blocks for long."""

    @abc.abstractmethod
    def add_limits(self, limits: ProviderLimits) -> int:
        """Lay ``limits`` over the gate's (later layers win); a token for :meth:`remove_limits`."""

    @abc.abstractmethod
    def remove_limits(self, token: int) -> None:
        """Take back the layer ``token`` names."""

    @contextlib.contextmanager
    def applied(self, limits: ProviderLimits | None) -> Iterator[Gate]:
        """``limits`` laid over this gate's for the ``with`` block (nothing for ``None``)."""
        if limits is None or limits.is_empty:
            yield self
            return
        token = self.add_limits(limits)
        try:
            yield self
        finally:
            self.remove_limits(token)

    def describe(self) -> str:
        """Every limited pool's state in one line; ``""`` when nothing is limited."""
        return describe_states(self.states())


class _Waiter:
    """One caller waiting for a slot, on its own event loop."""

    __slots__ = ("future", "key", "loop", "ticket", "wake_at")

    def __init__(self, key: str, loop: asyncio.AbstractEventLoop) -> None:
        self.key = key
        self.loop = loop
        self.future: asyncio.Future[None] = loop.create_future()
        self.ticket: Ticket | None = None
        self.wake_at: float | None = None  # monotonic time it should look again, if any


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _Slot:
    """``async with gate.slot(key)`` of a :class:`LocalGate`."""

    __slots__ = ("_gate", "_key", "_ticket")

    def __init__(self, gate: LocalGate, key: str) -> None:
        self._gate, self._key, self._ticket = gate, key, FREE

    async def __aenter__(self) -> None:
        self._ticket = await self._gate.acquire(self._key)

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        self._gate.release(self._ticket)


class LocalGate(Gate):
    """The gate of one process, shared by its event loops and threads.

    Callers of one key get their slots in the order they asked. A caller that waits is woken by
    a slot given back (from any thread: through its loop's ``call_soon_threadsafe``), or at the
    time a rate window or a slowdown ends; a cancelled caller (its deadline passed) leaves the
    queue, and gives back a slot it was granted meanwhile.
    """

    def __init__(self, limits: ProviderLimits | None = None) -> None:
        self._base = limits or ProviderLimits()
        self._layers: dict[int, ProviderLimits] = {}
        self._tokens = itertools.count(1)
        self._book = GateBook(self._base)
        self._lock = threading.Lock()
        self._queues: dict[str, deque[_Waiter]] = {}

    @property
    def limits(self) -> ProviderLimits:
        """The limits in force: the gate's own with every layer over them."""
        return self._book.limits

    # -- slots ---------------------------------------------------------------------------------

    def slot(self, key: str) -> _Slot:
        return _Slot(self, key)

    async def acquire(self, key: str) -> Ticket:
        """Wait for a slot under ``key``; :meth:`release` gives it back."""
        book = self._book
        if book.free and not self._queues:  # nothing limited: no lock, no wait
            return FREE
        loop = asyncio.get_running_loop()
        with self._lock:
            if not self._queues.get(key):
                got = book.take(key, time.monotonic())
                if isinstance(got, Ticket):
                    return got
            waiter = _Waiter(key, loop)
            self._queues.setdefault(key, deque()).append(waiter)
            self._pump()
        try:
            return await self._wait(waiter)
        except BaseException:
            self._abandon(waiter)
            raise

    async def _wait(self, waiter: _Waiter) -> Ticket:
        while True:
            with self._lock:
                if waiter.ticket is not None:
                    return waiter.ticket
                if waiter.future.done():
                    waiter.future = waiter.loop.create_future()
                future = waiter.future
                timeout = None if waiter.wake_at is None else \
                    max(waiter.wake_at - time.monotonic(), 0.0)
            done, _ = await asyncio.wait({future}, timeout=timeout)
            if not done:  # a rate window or a slowdown is over: look again
                with self._lock:
                    waiter.wake_at = None
                    self._pump()

    def release(self, ticket: Ticket) -> None:
        """Give back a slot from :meth:`acquire`."""
        if ticket.flight_pool is None:
            return  # it held no place in any pool
        with self._lock:
            self._book.give_back(ticket)
            self._pump()

    def _abandon(self, waiter: _Waiter) -> None:
        """The caller stopped waiting (cancelled): out of the queue, its slot back if granted."""
        with self._lock:
            if waiter.ticket is not None:
                self._book.give_back(waiter.ticket)
            else:
                queue = self._queues.get(waiter.key)
                if queue is not None and waiter in queue:
                    queue.remove(waiter)
            self._pump()

    def _pump(self) -> None:
        """Grant slots to the callers first in line, and tell each head still waiting when to
        look again. Called with the lock held."""
        now = time.monotonic()
        for key in list(self._queues):
            queue = self._queues[key]
            while queue:
                head = queue[0]
                got = self._book.take(key, now)
                if isinstance(got, Ticket):
                    queue.popleft()
                    head.ticket = got
                    if not self._notify(head):
                        head.ticket = None
                        self._book.give_back(got)
                    continue
                if got is not None and (head.wake_at is None or head.wake_at > now + got):
                    head.wake_at = now + got
                    if not self._notify(head):
                        queue.popleft()  # nobody is waiting there any more
                        continue
                break
            if not queue:
                del self._queues[key]

    @staticmethod
    def _notify(waiter: _Waiter) -> bool:
        """Wake ``waiter`` on its loop; ``False`` when that loop is gone."""
        try:
            waiter.loop.call_soon_threadsafe(_wake, waiter.future)
        except RuntimeError:  # its event loop is closed: nobody is waiting any more
            return False
        return True

    # -- slowdowns, limits, state ------------------------------------------------------------

    def slowdown(self, key: str, seconds: float) -> None:
        with self._lock:
            self._book.slow_down(key, seconds, time.monotonic())
            self._pump()

    def add_limits(self, limits: ProviderLimits) -> int:
        with self._lock:
            token = next(self._tokens)
            self._layers[token] = limits
            self._relimit()
        return token

    def remove_limits(self, token: int) -> None:
        with self._lock:
            if self._layers.pop(token, None) is not None:
                self._relimit()

    def _relimit(self) -> None:
        limits = self._base
        for layer in self._layers.values():
            limits = limits.merged(layer)
        self._book.limits = limits
        self._pump()

    def states(self) -> list[LimitState]:
        with self._lock:
            waiting = {key: len(queue) for key, queue in self._queues.items()}
            return self._book.states(time.monotonic(), waiting)


_DEFAULT_GATE = LocalGate()
_installed: Gate | None = None


def current_gate() -> Gate:
    """The gate every LM call of this process goes through: the installed one, else the
    process's own :class:`LocalGate` (no limits unless a run lays some over it)."""
    return _installed if _installed is not None else _DEFAULT_GATE


def install_gate(gate: Gate | None) -> Gate | None:
    """Route every LM call of this process through ``gate`` from now on (``None``: back to the
    process's own); the gate installed before, for putting it back."""
    global _installed
    previous, _installed = _installed, gate
    return previous

