"""The cluster-wide gate: one named Ray actor keeps the slots, rate windows and slowdowns of every
worker, so a provider's limits hold across all the machines of a study.

Driver side, once per run::

    from cogym_lab.lm.limits import ProviderLimits
    from cogym_lab.lm.ray_gate import RayGate
    gate = RayGate.create("cogym-gate-RUN", limits)      # the named actor (job-scoped by default)

Worker side, in every process that makes LM calls (a Ray actor's ``__init__``)::

    from cogym_lab.lm.limits import install_gate
    from cogym_lab.lm.ray_gate import RayGate
    install_gate(RayGate("cogym-gate-RUN"))               # every LM call now asks the actor

Each attempt then costs one actor call before it starts (awaited: it returns when a slot is
free) and one after (not awaited). The actor is an :class:`~cogym_lab.lm.limits.LocalGate` on
its own event loop; callers name their tickets, so a caller that stops waiting (its deadline
passed) can tell the actor, which drops the wait or gives the slot back. A worker that dies
holding slots cannot say so: the actor takes back a slot held longer than
``ProviderLimits.lease`` seconds. The actor asks for no CPU, stays on the driver's node when it
can, and is restarted by Ray if it dies (with empty counts). If it cannot be reached at all, LM
calls go ahead without it, with a warning: the provider's own 429s still slow everyone down.

``ray`` is imported only when a :class:`RayGate` is made or used (the ``ray`` extra).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

from cogym_lab.lm.gate_book import LimitState, Ticket
from cogym_lab.lm.limit_rules import ProviderLimits
from cogym_lab.lm.limits import Gate, LocalGate

__all__ = ["GateActor", "RayGate", "import_ray"]

log = logging.getLogger(__name__)

#: Calls the actor serves at once: each caller waiting for a slot is one.
MAX_WAITING_CALLS = 100_000
RECLAIM_EVERY = 1.0  # seconds between looks for slots held past their lease
WARN_EVERY = 60.0  # seconds between two warnings that the actor cannot be reached
_FORGOTTEN_KEPT = 10_000  # tickets abandoned before their wait began, remembered


def import_ray(needed_by: str = "the cluster-wide gate") -> ModuleType:
    """``ray``, imported on first use (modules that use it import without it: the ``ray``
    extra); an ImportError that says how to install it otherwise."""
    try:
        import ray
    except ImportError as error:
        raise ImportError(f"{needed_by} needs Ray: pip install 'cogym_lab[ray]'") from error
    return ray


class GateActor:
    """What the named actor runs (Ray makes it an async actor): a :class:`LocalGate` whose
    tickets the callers name."""

    def __init__(self, limits: dict[str, Any]) -> None:
        self._gate = LocalGate(ProviderLimits.model_validate(limits))
        self._base_token: int | None = None
        self._held: dict[str, tuple[Ticket, float]] = {}
        self._waiting: dict[str, asyncio.Task[Ticket]] = {}
        self._forgotten: deque[str] = deque(maxlen=_FORGOTTEN_KEPT)
        self._reclaimed_at = 0.0

    async def ready(self) -> bool:
        return True

    async def set_limits(self, limits: dict[str, Any]) -> None:
        """The actor's own limits (a second ``RayGate.create`` of the same name sets them)."""
        if self._base_token is not None:
            self._gate.remove_limits(self._base_token)
        self._base_token = self._gate.add_limits(ProviderLimits.model_validate(limits))

    async def acquire(self, key: str, ticket_id: str) -> bool:
        """Wait for a slot under ``key``; ``True`` if the caller must give one back."""
        self._reclaim()
        if ticket_id in self._forgotten:
            return False
        wait = asyncio.ensure_future(self._gate.acquire(key))
        self._waiting[ticket_id] = wait
        try:
            ticket = await wait
        except asyncio.CancelledError:
            if not wait.cancelled():
                raise  # the actor itself is being stopped
            return False  # the caller gave up (abandon)
        finally:
            self._waiting.pop(ticket_id, None)
        if ticket.flight_pool is None:
            return False
        self._held[ticket_id] = (ticket, time.monotonic())
        return True

    async def release(self, ticket_id: str) -> None:
        held = self._held.pop(ticket_id, None)
        if held is not None:
            self._gate.release(held[0])

    async def abandon(self, ticket_id: str) -> None:
        """The caller stopped waiting: drop its wait, or give back the slot it got meanwhile."""
        wait = self._waiting.get(ticket_id)
        if wait is not None:
            wait.cancel()
        elif ticket_id in self._held:
            await self.release(ticket_id)
        else:
            self._forgotten.append(ticket_id)

    async def slowdown(self, key: str, seconds: float) -> None:
        self._gate.slowdown(key, seconds)

    async def add_limits(self, limits: dict[str, Any]) -> int:
        return self._gate.add_limits(ProviderLimits.model_validate(limits))

    async def remove_limits(self, token: int) -> None:
        self._gate.remove_limits(token)

    async def states(self) -> list[LimitState]:
        self._reclaim()
        return self._gate.states()

    def _reclaim(self) -> None:
        """Give back slots held past the lease: their holders died without saying so."""
        now = time.monotonic()
        if now - self._reclaimed_at < RECLAIM_EVERY:
            return
        self._reclaimed_at = now
        lease = self._gate.limits.lease
        for ticket_id, (ticket, since) in list(self._held.items()):
            if now - since > lease:
                log.warning("taking back a slot of %s held for %.0f s: its holder is gone",
                            ticket.key, now - since)
                del self._held[ticket_id]
                self._gate.release(ticket)


def _limits_json(limits: ProviderLimits | None) -> dict[str, Any]:
    return (limits or ProviderLimits()).model_dump(mode="json", exclude_unset=True)


class RayGate(Gate):
    """A handle on the named gate actor: ``RayGate(name)`` in a worker, made by the driver with
    :meth:`create`. Picklable: a handle sent to an actor finds the gate again by name."""

    def __init__(self, name: str, *, namespace: str | None = None) -> None:
        self.name = name
        self.namespace = namespace
        self._actor: Any = None
        self._lock = threading.Lock()
        self._state_call: Any = None
        self._last_states: list[LimitState] = []
        self._warned_at = -WARN_EVERY

    def __reduce__(self) -> tuple[Any, ...]:
        return (_handle, (self.name, self.namespace))

    @classmethod
    def create(cls, name: str, limits: ProviderLimits | None = None, *, detached: bool = False,
               namespace: str | None = None) -> RayGate:
        """Start the named gate actor with ``limits`` (or take the running one of that name and
        give it these limits), and wait until it answers. Call ``ray.init`` first.

        ``detached=False`` (the default) ties the actor to this driver's job: it ends with the
        job. ``detached=True`` keeps it for later jobs too, until :meth:`kill`.
        """
        ray = import_ray()
        options: dict[str, Any] = {
            "name": name, "namespace": namespace, "get_if_exists": True, "num_cpus": 0,
            "max_concurrency": MAX_WAITING_CALLS, "max_restarts": -1}
        with contextlib.suppress(Exception):  # a client (ray://) driver may have no node here
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            here = ray.get_runtime_context().get_node_id()
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id=here,
                                                                             soft=True)
        if detached:
            options["lifetime"] = "detached"
        actor = ray.remote(GateActor).options(**options).remote(_limits_json(limits))
        ray.get(actor.set_limits.remote(_limits_json(limits)))
        gate = cls(name, namespace=namespace)
        gate._actor = actor
        return gate

    def kill(self) -> None:
        """End the actor (a detached one does not end by itself)."""
        import_ray().kill(self._handle())
        self._actor = None

    def _handle(self) -> Any:
        with self._lock:
            if self._actor is None:
                self._actor = import_ray().get_actor(self.name, namespace=self.namespace)
            return self._actor

    def _unreachable(self, error: BaseException) -> None:
        now = time.monotonic()
        if now - self._warned_at >= WARN_EVERY:
            self._warned_at = now
            log.warning("the gate actor %r cannot be reached (%s: %s); LM calls go ahead "
                        "without provider limits", self.name, type(error).__name__, error)

    @contextlib.asynccontextmanager
    async def slot(self, key: str) -> AsyncIterator[None]:
        ticket_id = uuid.uuid4().hex
        held = False
        try:
            actor = self._handle()
            held = await actor.acquire.remote(key, ticket_id)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                self._handle().abandon.remote(ticket_id)
            raise
        except Exception as error:  # noqa: BLE001 - an unreachable gate must not stop the calls
            self._unreachable(error)
        try:
            yield
        finally:
            if held:
                try:
                    actor.release.remote(ticket_id)
                except Exception as error:  # noqa: BLE001 - the lease takes the slot back
                    self._unreachable(error)

    def slowdown(self, key: str, seconds: float) -> None:
        try:
            self._handle().slowdown.remote(key, seconds)
        except Exception as error:  # noqa: BLE001 - the caller backs off anyway
            self._unreachable(error)

    def add_limits(self, limits: ProviderLimits) -> int:
        token: int = import_ray().get(self._handle().add_limits.remote(_limits_json(limits)))
        return token

    def remove_limits(self, token: int) -> None:
        import_ray().get(self._handle().remove_limits.remote(token))

    def states(self) -> list[LimitState]:
        """The actor's last reported states; asks for fresh ones without waiting for them."""
        ray = import_ray()
        try:
            if self._state_call is not None:
                ready, _ = ray.wait([self._state_call], timeout=0)
                if ready:
                    self._last_states = ray.get(self._state_call)
                    self._state_call = None
            if self._state_call is None:
                self._state_call = self._handle().states.remote()
        except Exception as error:  # noqa: BLE001 - a progress bar goes on without it
            self._state_call = None
            self._unreachable(error)
        return self._last_states

    async def fetch_states(self) -> list[LimitState]:
        """The actor's states now (awaited)."""
        states: list[LimitState] = await self._handle().states.remote()
        self._last_states = states
        return states


def _handle(name: str, namespace: str | None) -> RayGate:
    """Unpickle a :class:`RayGate`: a fresh handle on the same named actor."""
    return RayGate(name, namespace=namespace)
