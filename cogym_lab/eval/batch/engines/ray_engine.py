"""The Ray engine's driver side: a batch's sessions run in Ray actors across a cluster.

:func:`ray_workers` connects to the cluster (or uses the Ray this process already joined),
starts ``actors_per_node`` :class:`~.ray_worker.SessionHost` actors on each node that has CPUs
and, around the batch, one named actor for the provider gate (:mod:`cogym_lab.lm.ray_gate`),
which every worker's LM calls go through. :class:`RayWorkers` then feeds the actors: each has
``sessions_per_actor`` lanes, and a lane takes the next session from one queue, waits for its
result and writes it, so a fast actor takes more sessions than a slow one.

What a lost worker costs. Each actor is pinned to its node and asks for no CPU. When its worker
process dies on a live node, Ray restarts it there (``ACTOR_RESTARTS`` times) and runs the calls
that were under way again (``CALL_RETRIES`` times). When its node dies, the calls under way fail,
the driver puts their sessions back in the queue and starts a new actor in its place on a node
that is left (``ACTOR_REPLACEMENTS`` times for each of the first actors). Either way a session
runs again from scratch, under a new session id, in a folder of its own; after
``SESSION_ATTEMPTS`` lost tries it is recorded as failed. The driver writes each session once,
from the first result that reaches it; a later one is dropped. Only the sessions that were
running on the lost node are run again.

(Pinned, because Ray's soft node affinity is a preference that a busy node may pass on: two
actors meant for two nodes can both land on one, and then a node's loss costs all of them.)

The actors' environment: each gets the driver's ``COGYM_*`` and ``OPENAI_*`` variables (the LM
settings, the data folder), so the workers build sessions as this process would. Ray shows an
actor's environment to whoever can see the cluster's dashboard.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from cogym_lab.core.deadline import within
from cogym_lab.core.loop_lag import LoopLag
from cogym_lab.errors import CogymError
from cogym_lab.eval.batch.engines import Ended, EngineError, RayOptions
from cogym_lab.eval.batch.engines.ray_start import with_start_retries
from cogym_lab.eval.batch.engines.ray_worker import ENTRY, FILES, INCOMING, SessionHost
from cogym_lab.eval.batch.engines.shipping import (
    clear_incoming,
    discard_incoming,
    incoming_folder,
    place_session,
    receive_session,
)
from cogym_lab.eval.batch.manifest import SessionEntry, TokenCount
from cogym_lab.eval.batch.plan import BatchPlan, SessionKey
from cogym_lab.eval.batch.progress import CostMeter
from cogym_lab.eval.batch.sessions import clear_partial, record_failure, session_dir_name
from cogym_lab.lm.limits import Gate
from cogym_lab.lm.ray_gate import import_ray

ACTOR_RESTARTS = 4
CALL_RETRIES = 3
ACTOR_REPLACEMENTS = 3
SESSION_ATTEMPTS = 3
USAGE_SECONDS = 1.0  # how often the cost meter asks the actors for their running sessions' usage
FORWARDED_PREFIXES = ("COGYM_", "OPENAI_")
CLIENT_TRIES = 3
log = logging.getLogger(__name__)
CLIENT_RETRY_SECONDS = 2.0


class WorkerLost(CogymError, RuntimeError):
    """A session's worker was lost every time it was tried."""


def _ray() -> ModuleType:
    """``ray``, imported on first use: this module imports without it (the ``ray`` extra)."""
    return import_ray("engine='ray'")


def forwarded_environment() -> dict[str, str]:
    """The driver's environment variables the workers get."""
    return {name: value for name, value in os.environ.items()
            if name.startswith(FORWARDED_PREFIXES)}


def _connect(address: str | None) -> bool:
    """Join the cluster; ``True`` when this call did (and so leaves it at the end).

    On a busy machine the start is tried again with back-off, then fails with what to do
    (:mod:`.ray_start`)."""
    ray = _ray()
    if ray.is_initialized():
        return False
    return with_start_retries("start or join the cluster", lambda: _join(address))


def _join(address: str | None) -> bool:
    """``ray.init``; through Ray Client (``ray://``) up to ``CLIENT_TRIES`` times: the client
    proxy can fail to start the server it runs for each new driver ("Initialization failure
    from server"), and another try gets another server."""
    ray = _ray()
    tries = CLIENT_TRIES if (address or "").startswith("ray://") else 1
    for attempt in range(1, tries + 1):
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
            return True
        except Exception as error:
            with contextlib.suppress(Exception):
                ray.shutdown()
            if attempt == tries or not isinstance(error, ConnectionError):
                raise
            log.warning("could not connect to %s (%s); trying again", address,
                        _first_line(error))
            time.sleep(CLIENT_RETRY_SECONDS)
    return True  # not reached: the last try returns or raises


def _nodes() -> list[str]:
    """The ids of the live nodes that have CPUs (all live nodes when none has)."""
    alive = [node for node in _ray().nodes() if node.get("Alive")]
    with_cpus = [node for node in alive if (node.get("Resources") or {}).get("CPU", 0) > 0]
    return [node["NodeID"] for node in with_cpus or alive]


def _start_gate(limits: Any) -> tuple[str, Any]:
    """The named gate actor every worker's LM calls go through; its name and handle."""
    from cogym_lab.lm.ray_gate import RayGate

    name = f"cogym-gate-{uuid.uuid4().hex[:12]}"
    return name, RayGate.create(name, limits)


@contextlib.asynccontextmanager
async def ray_workers(plan: BatchPlan, out: Path, options: RayOptions,
                      meter: CostMeter) -> AsyncIterator[RayWorkers]:
    """Actors ready for ``plan``'s sessions, for the ``async with`` block; they are ended (and
    Ray left, if this call joined it) when it ends."""
    ray = _ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    joined = _connect(options.address)
    started: list[Any] = []
    gate: Any = None
    try:
        gate_name, gate = with_start_retries("start the provider gate's actor",
                                             lambda: _start_gate(options.limits))
        host = ray.remote(SessionHost)
        environment = forwarded_environment()

        def start_actor(node: str, pinned: bool) -> Any:
            actor = host.options(
                num_cpus=0, max_restarts=ACTOR_RESTARTS, max_task_retries=CALL_RETRIES,
                max_concurrency=options.sessions_per_actor + 1,  # + the usage calls
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=not pinned),
                runtime_env={"env_vars": environment} if environment else None,
            ).remote(plan, options.storage, gate_name)
            started.append(actor)
            return actor

        nodes = _nodes()
        homes = [node for node in nodes for _ in range(options.actors_per_node)]
        actors = [start_actor(node, pinned=True) for node in homes]
        clear_incoming(out)
        yield RayWorkers(plan=plan, out=out, options=options, meter=meter, actors=actors,
                         homes=homes, nodes=len(nodes), start_actor=start_actor, gate=gate)
    finally:
        for actor in started:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        if gate is not None:
            with contextlib.suppress(Exception):
                gate.kill()
        if joined:
            ray.shutdown()
        clear_incoming(out)  # attempts that arrived too late to be used, if any


@dataclass
class _Progress:
    """Where a batch stands: the sessions waiting for a lane, tries, what was written."""

    queue: asyncio.Queue[SessionKey]
    unresolved: int
    done: asyncio.Event = field(default_factory=asyncio.Event)
    attempts: Counter[SessionKey] = field(default_factory=Counter)
    written: set[SessionKey] = field(default_factory=set)
    last_error: BaseException | None = None

    def resolve(self, key: SessionKey) -> None:
        self.written.add(key)
        self.unresolved -= 1
        if self.unresolved <= 0:
            self.done.set()


@dataclass
class RayWorkers:
    """The actors of one batch, fed from one queue (see the module)."""

    plan: BatchPlan
    out: Path
    options: RayOptions
    meter: CostMeter
    #: The actors; a lane keeps to its place in the list, whose actor may be replaced.
    actors: list[Any]
    #: The node each place's actor was started on.
    homes: list[str]
    nodes: int
    #: Starts an actor on a node (``pinned``: there only; else there if it can).
    start_actor: Callable[[str, bool], Any]
    gate: Gate | None = None
    replaced: Counter[int] = field(default_factory=Counter)
    #: The actors' loops are not watched from here (the driver's own lag is the caller's).
    lag: LoopLag | None = None
    lags: list[LoopLag] | None = None

    @property
    def concurrency(self) -> int:
        return len(self.actors) * self.options.sessions_per_actor

    def describe(self) -> dict[str, Any]:
        return {"engine": "ray", "address": self.options.address, "nodes": self.nodes,
                "actors": len(self.actors), "sessions_per_actor": self.options.sessions_per_actor,
                "storage": self.options.storage is not None}

    async def run(self, keys: Sequence[SessionKey], ended: Ended) -> None:
        if not keys:
            return
        progress = _Progress(queue=asyncio.Queue(), unresolved=len(keys))
        for key in keys:
            progress.queue.put_nowait(key)
        lanes = [asyncio.create_task(self._lane(place, progress, ended))
                 for place in range(len(self.actors))
                 for _ in range(self.options.sessions_per_actor)]
        finished = asyncio.create_task(progress.done.wait())
        usage = asyncio.create_task(self._follow_usage())
        waiting: set[asyncio.Task[Any]] = {finished, *lanes}
        try:
            while not finished.done():
                done, waiting = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    if task is not finished and task.exception() is not None:
                        raise task.exception()  # type: ignore[misc]
                if not finished.done() and waiting == {finished}:
                    raise EngineError(
                        f"every Ray worker was lost; {progress.unresolved} sessions did not run "
                        f"(last error: {_first_line(progress.last_error)}). Run the batch again "
                        "to resume them.")
        finally:
            for task in (finished, usage, *lanes):
                task.cancel()
            await asyncio.gather(finished, usage, *lanes, return_exceptions=True)
            for index in range(len(self.actors)):
                self.meter.report(index, {})

    async def _lane(self, place: int, progress: _Progress, ended: Ended) -> None:
        """Run sessions one after another on the actor at ``place``, and on its replacements
        when it is gone, until no replacement is left."""
        errors = _ray().exceptions
        gone = (errors.ActorDiedError, errors.ActorUnschedulableError)
        actor = self.actors[place]
        while True:
            key = await progress.queue.get()
            try:
                result = await actor.run_session.remote(*key)
            except errors.RayTaskError as error:  # the call raised: running it again would too
                cause = error.cause if isinstance(error.cause, BaseException) else error
                await self._record_failed(key, cause, progress, ended)
            except errors.RayError as error:  # the worker, its node or the actor was lost
                progress.last_error = error
                progress.attempts[key] += 1
                if progress.attempts[key] >= SESSION_ATTEMPTS:
                    lost = WorkerLost(f"the Ray worker running this session was lost "
                                      f"{progress.attempts[key]} times; last: "
                                      f"{_first_line(error)}")
                    await self._record_failed(key, lost, progress, ended)
                else:
                    progress.queue.put_nowait(key)
                if isinstance(error, gone):  # its node is gone, or it was restarted enough
                    actor = self._replacement(place, actor)
                    if actor is None:
                        return
            else:
                await self._receive(key, result, progress, ended)

    def _replacement(self, place: int, lost: Any) -> Any:
        """The actor that takes the place of ``lost`` (one lane of it starts it, the others find
        it there); ``None`` when the place has had all its replacements."""
        if self.actors[place] is not lost:
            return self.actors[place]
        if self.replaced[place] >= ACTOR_REPLACEMENTS:
            return None
        nodes = _nodes()
        if not nodes:
            return None
        self.replaced[place] += 1
        home = min(nodes, key=lambda node: (self.homes.count(node), nodes.index(node)))
        self.homes[place] = home
        self.actors[place] = self.start_actor(home, False)
        return self.actors[place]

    async def _receive(self, key: SessionKey, result: dict[str, Any], progress: _Progress,
                       ended: Ended) -> None:
        """Write a session's result (the first for its key; a later one is dropped)."""
        entry = SessionEntry.model_validate(result[ENTRY])
        if key in progress.written:
            if INCOMING in result:
                await asyncio.to_thread(discard_incoming, self.out, result[INCOMING])
            return
        progress.written.add(key)
        if INCOMING in result:
            await asyncio.to_thread(place_session, self.out, entry.directory,
                                    incoming_folder(self.out, result[INCOMING]))
        else:
            await asyncio.to_thread(receive_session, self.out, entry.directory, result[FILES])
        self.meter.add(entry.tokens.by_model)
        progress.resolve(key)
        ended(entry)

    async def _record_failed(self, key: SessionKey, error: BaseException, progress: _Progress,
                             ended: Ended) -> None:
        """A session no worker could bring back: recorded as failed, by the driver."""
        if key in progress.written:
            return
        progress.written.add(key)
        number, trial = key
        name = session_dir_name(number, trial)
        session_id = f"{self.plan.team.name}-{self.plan.task}-{name}"
        identity = self.plan.identity(number, trial)

        def record() -> str:
            directory = self.out / name
            clear_partial(directory)
            return record_failure(directory, error, session_id=session_id, task=self.plan.task,
                                  env_args={"instance": number, **self.plan.spec.env_args},
                                  batch=identity)

        message = await asyncio.to_thread(record)
        progress.resolve(key)
        ended(SessionEntry(instance=number, trial=trial, directory=name, session_id=session_id,
                           status="failed", error=message))

    async def _follow_usage(self) -> None:
        """Keep the cost meter told of the tokens the running sessions have used so far."""
        while True:
            await asyncio.sleep(USAGE_SECONDS)
            reports = await asyncio.gather(*(self._usage(actor) for actor in self.actors))
            for index, usage in enumerate(reports):
                self.meter.report(index, usage)

    async def _usage(self, actor: Any) -> dict[str, TokenCount]:
        try:
            usage = await within(5 * USAGE_SECONDS, actor.live_usage.remote())
        except (_ray().exceptions.RayError, TimeoutError):
            return {}
        return {model: TokenCount.model_validate(count) for model, count in usage.items()}


def _first_line(error: BaseException | None) -> str:
    if error is None:
        return "none"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


__all__ = ["ACTOR_REPLACEMENTS", "ACTOR_RESTARTS", "CALL_RETRIES", "SESSION_ATTEMPTS",
           "RayWorkers", "WorkerLost",
           "forwarded_environment", "ray_workers"]
