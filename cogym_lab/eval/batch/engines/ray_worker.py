"""The Ray engine's worker side: :class:`SessionHost`, the actor that runs sessions of a batch.

The driver makes it a Ray actor (:mod:`.ray_engine`); its methods are coroutines, so Ray runs it
as an async actor: the sessions it hosts share its own event loop, as they would share the
driver's in the in-process engine. This module does not import ``ray``: the class is plain
Python, which the driver wraps.

Each call runs one session from scratch, in a folder of its own, and returns its ``run.json``
entry with either the folder's files (:func:`~.shipping.pack_folder`) or, where the workers see
the run folder (``storage``), the name of the folder it wrote there. A session that fails is
recorded in its folder and returned like any other; only a worker that dies loses a call, which
Ray then runs again on the actor restarted elsewhere.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from cogym_lab.eval.batch.engines.shipping import attempt_name, incoming_folder, pack_folder
from cogym_lab.eval.batch.plan import BatchPlan, run_planned_session
from cogym_lab.eval.batch.progress import CostMeter
from cogym_lab.eval.batch.sessions import session_dir_name

#: Keys of what :meth:`SessionHost.run_session` returns.
ENTRY, FILES, INCOMING = "entry", "files", "incoming"


def join_provider_gate(gate: str | None) -> None:
    """Route every LM call of this worker process through the cluster-wide gate named ``gate``
    (provider limits and 429 slowdowns shared by every worker; :mod:`cogym_lab.lm.ray_gate`)."""
    if gate is None:
        return
    from cogym_lab.lm.limits import install_gate
    from cogym_lab.lm.ray_gate import RayGate

    install_gate(RayGate(gate))


class SessionHost:
    """Runs sessions of one batch, many at once on its event loop."""

    def __init__(self, plan: BatchPlan, storage: str | None = None,
                 gate: str | None = None) -> None:
        self.plan = plan
        self.storage = Path(storage) if storage is not None else None
        self.meter = CostMeter()
        join_provider_gate(gate)

    async def run_session(self, number: int, trial: int = 0) -> dict[str, Any]:
        """Run one trial of an instance; its entry, and its files or where they are."""
        name = session_dir_name(number, trial)
        attempt = attempt_name(name)
        if self.storage is not None:
            directory = incoming_folder(self.storage, attempt)
            entry = await run_planned_session(self.plan, directory, number, trial,
                                              meter=self.meter)
            return {ENTRY: entry.model_dump(mode="json"), INCOMING: attempt}
        scratch = Path(tempfile.mkdtemp(prefix="cogym-session-"))
        try:
            entry = await run_planned_session(self.plan, scratch / name, number, trial,
                                              meter=self.meter)
            files = pack_folder(scratch / name)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return {ENTRY: entry.model_dump(mode="json"), FILES: files}

    async def live_usage(self) -> dict[str, dict[str, int]]:
        """Token counts so far of the sessions running here, by model."""
        return {model: count.model_dump() for model, count in self.meter.live_totals().items()}


__all__ = ["ENTRY", "FILES", "INCOMING", "SessionHost", "join_provider_gate"]
