"""Tabular Analysis (Co-Gym §4.2): analyse real data tables in a shared Jupyter kernel and write
the findings together; a judge checks them against the gold hypothesis (DiscoveryBench-Real).

Running a cell is slow I/O, so ``EXECUTE_JUPYTER_CELL`` starts deferred work: the kernel runs the
code outside the coordinator and the outputs land as the internal ``RECORD_CELL`` step of the same
member. The event log keeps the outputs, so replay needs no kernel.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogym_lab.core import (
    ActionError, ActionOutcome, Component, Deferred, RenderType, action,
)
from cogym_lab.envs.dataset_env import DatasetEnv
from cogym_lab.envs.tabular_analysis.executor import KernelExecutor, LocalKernelExecutor
from cogym_lab.envs.tabular_analysis.grader import judge_hypothesis
from cogym_lab.envs.tabular_analysis.instances import copy_files, load_instances
from cogym_lab.lm import LM, configured_lm


@dataclass
class TabularAnalysisEnv(DatasetEnv):
    """One selected DiscoveryBench-Real query (``instance`` = its number).

    The instance's tables are copied into ``workdir`` (a fresh temporary folder by default), where
    the kernel starts. ``executor`` defaults to a standalone IPython kernel; the Jupyter product
    passes one that runs in the notebook's own kernel.
    """

    workdir: str | None = None
    cell_timeout: float = 60.0
    executor: KernelExecutor | None = field(default=None, repr=False)
    judge_lm: LM | None = field(default=None, repr=False)

    name = "tabular_analysis"

    @classmethod
    def load_dataset(cls, data_dir: str | None) -> list[Any]:
        return load_instances(data_dir)

    @property
    def task_description(self) -> str:
        files = ", ".join(path.name for path in self.files) if self._is_reset else "the tables"
        return (f"{self.task.query}\n\nThe data files ({files}) are in the kernel's working "
                "directory. Analyse them with Python cells (pandas is available) and write the "
                "finding as a hypothesis in the shared editor: what relation holds between which "
                "variables, under which conditions.")

    def hidden_information(self) -> str:
        return self.task.hidden_information()

    def _reset(self, seed: int | None) -> None:
        self.cells: list[dict[str, Any]] = []
        self.running: dict[str, str] = {}  # role -> code now running
        self.findings = ""
        folder = Path(self.workdir or tempfile.mkdtemp(prefix="cogym-tabular-"))
        folder.mkdir(parents=True, exist_ok=True)
        self.workdir = str(folder)
        self.files = copy_files(self.task, folder, self.data_dir)

    def public_components(self) -> list[Component]:
        return [
            Component(name="notebook", title="Notebook", render_type=RenderType.NOTEBOOK,
                      content={"cells": self.cells, "running": dict(self.running)}),
            Component(name="findings", title="Findings (shared editor)",
                      render_type=RenderType.EDITOR, content=self.findings),
            Component(name="files", title="Data files", render_type=RenderType.TEXT,
                      content="\n".join(path.name for path in self.files)),
        ]

    def outcome(self) -> str | None:
        return self.findings.strip() or None

    async def aevaluate(self) -> dict[str, float]:
        judge = self.judge_lm or configured_lm("the hypothesis judge")
        if judge is None or not self.findings.strip():
            return {}
        grade = await judge_hypothesis(self.findings, self.task, judge)
        return {"performance": grade.score}

    async def aclose(self) -> None:
        if self.executor is not None:
            await self.executor.shutdown()

    def _kernel(self) -> KernelExecutor:
        if self.executor is None:
            self.executor = LocalKernelExecutor(Path(self.workdir or "."),
                                                timeout=self.cell_timeout)
        return self.executor

    # -- actions -------------------------------------------------------------------------------

    @action("Run Python code in the shared Jupyter kernel; the cell and its outputs join the "
            "notebook everyone sees.", code="The code of one cell")
    def execute_jupyter_cell(self, role: str, code: str) -> ActionOutcome:
        if not code.strip():
            raise ActionError("EXECUTE_JUPYTER_CELL needs some code.")
        if role in self.running:
            raise ActionError("Your previous cell is still running; wait for its outputs.")
        self.running[role] = code
        kernel, timeout = self._kernel(), self.cell_timeout

        async def run() -> dict[str, Any]:
            if not kernel.alive:
                await kernel.start()
            result = await kernel.execute(code, timeout=timeout)
            return {"name": "RECORD_CELL", "args": {"code": code, "result": result.to_dict()}}

        return ActionOutcome(deferred=Deferred(work=run, label="Running the cell"))

    @action("Record a cell's outputs in the notebook.", internal=True, code="The cell's code",
            result="The outputs")
    def record_cell(self, role: str, code: str, result: dict) -> None:
        self.running.pop(role, None)
        self.cells.append({"index": len(self.cells) + 1, "ran_by": role, "source": code,
                           "execution_count": result.get("execution_count"),
                           "status": result.get("status"), "outputs": result.get("outputs", []),
                           "error": result.get("error"), "truncated": result.get("truncated")})

    @action("Replace the findings in the shared editor.", text="The findings")
    def editor_update(self, role: str, text: str) -> None:
        self.findings = text
