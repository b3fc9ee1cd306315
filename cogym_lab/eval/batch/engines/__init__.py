"""Where a batch run's sessions run: in this process (the default), or on a Ray cluster.

The runner (:mod:`cogym_lab.eval.batch.runner`) does everything else the same way for both: it reads
and writes ``run.json``, skips finished sessions, draws the progress bar, keeps the cost meter
and records each session's entry as it ends. An engine only runs the sessions it is given and
says when each ended (:class:`Workers`).

* ``inprocess`` (:mod:`.inprocess`): every session in this process, at most ``concurrency`` at
  a time, on an event loop of their own on a thread (the caller's loop stays responsive). Needs
  nothing beyond cogym_lab. Above the sessions one loop carries (250 at once), or when asked
  (``workers=N``), the same engine spreads them over worker processes of this machine, each
  with its own loop (:mod:`.processes`).
* ``ray`` (:mod:`.ray_engine`): sessions in Ray actors across a cluster, each actor hosting many
  at once on its own event loop; their folders travel back to this process, which writes them.
  Needs the ``ray`` extra (``pip install 'cogym_lab[ray]'``); ``ray`` is imported only then.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from cogym_lab.core.loop_lag import LoopLag
from cogym_lab.errors import CogymError
from cogym_lab.eval.batch.manifest import SessionEntry
from cogym_lab.eval.batch.plan import SessionKey
from cogym_lab.lm.limits import Gate

EngineName = Literal["inprocess", "ray"]
ENGINES: tuple[EngineName, ...] = ("inprocess", "ray")
#: Called by an engine, on the driver's event loop, once for each session that ended.
Ended = Callable[[SessionEntry], None]


class EngineError(CogymError, RuntimeError):
    """The engine cannot go on with the batch (every Ray worker was lost, say). The sessions it
    did not end stay pending in ``run.json``: running the batch again resumes them."""


class Workers(Protocol):
    """An engine ready to run a batch's sessions."""

    #: The most sessions that run at the same time (``run.json``'s ``concurrency``).
    @property
    def concurrency(self) -> int: ...

    #: The gate the workers' LM calls go through, for the progress bar's limits (``None``: this
    #: process's own).
    @property
    def gate(self) -> Gate | None: ...

    #: How late the event loop that ran the sessions woke during :meth:`run`, for ``run.json``
    #: (``None``: not watched from this process).
    @property
    def lag(self) -> LoopLag | None: ...

    #: With several loops (worker processes), each one's lag; ``None`` otherwise.
    @property
    def lags(self) -> list[LoopLag] | None: ...

    def describe(self) -> dict[str, Any]:
        """What ran the sessions, for the invocation's record in ``run.json``."""
        ...

    async def run(self, keys: Sequence[SessionKey], ended: Ended) -> None:
        """Run the sessions ``keys`` name, calling ``ended`` with each one's entry as it ends.
        Returns when all have ended; raises :class:`EngineError` when some cannot be run."""
        ...


@dataclass(frozen=True)
class RayOptions:
    """How a batch runs on Ray (``run(..., engine="ray")``).

    ``address``: the cluster, as ``ray.init`` takes it: ``None`` (``RAY_ADDRESS``, else the
    cluster last started on this machine, else a new one in this process), ``"auto"`` (a
    running cluster, or an error), ``"HOST:PORT"`` (the head's GCS, from a machine of the
    cluster) or ``"ray://HOST:PORT"`` (Ray Client, from outside it); a process that has joined a
    cluster already (``ray.init``) runs on that one, and stays in it. ``actors_per_node`` actors
    start on each node with CPUs, each running up to ``sessions_per_actor`` sessions at once.
    ``storage``: the run folder as the workers see it (a shared file system; a path or a
    ``file://`` URL): they then write each session there themselves, and send back only its
    entry. ``limits``: provider limits every worker's LM calls share
    (:class:`cogym_lab.lm.limits.ProviderLimits`).
    """

    address: str | None = None
    sessions_per_actor: int = 8
    actors_per_node: int = 1
    storage: str | None = None
    limits: Any = None

    def __post_init__(self) -> None:
        if self.sessions_per_actor < 1:
            raise ValueError("sessions_per_actor must be at least 1")
        if self.actors_per_node < 1:
            raise ValueError("actors_per_node must be at least 1")
        if self.storage is not None:
            object.__setattr__(self, "storage", storage_folder(self.storage))


def storage_folder(storage: str | Path) -> str:
    """The folder a storage location names: a path, or a ``file://`` URL."""
    text = str(storage)
    if text.startswith("file://"):
        text = text.removeprefix("file://")
    elif "://" in text:
        scheme = text.split("://", 1)[0]
        raise ValueError(f"storage {text!r}: {scheme}:// is not supported; give a folder that "
                         "every worker and this machine see (a shared file system), as a path "
                         "or a file:// URL")
    if not text or not Path(text).is_absolute():
        raise ValueError(f"storage {text!r}: give the folder's absolute path (the workers do "
                         "not share this process's working directory)")
    return text


def check_engine(name: str) -> EngineName:
    for engine in ENGINES:
        if name == engine:
            return engine
    raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")


__all__ = ["ENGINES", "Ended", "EngineError", "EngineName", "RayOptions", "Workers",
           "check_engine", "storage_folder"]
