"""Tabular Analysis (Co-Gym §4.2): analyse real data tables in a shared Jupyter kernel and write
the findings together; a judge checks them against the gold hypothesis (DiscoveryBench-Real).

Running a cell is slow I/O, so ``EXECUTE_JUPYTER_CELL`` starts deferred work: the kernel runs the
code outside the coordinator and the outputs land as the internal ``RECORD_CELL`` step of the same
member. The event log keeps the outputs, so replay needs no kernel.

Scores (``aevaluate``, details in ``docs/tabular-scoring.md``): the judge (``grader.py``)
answers DiscoveryBench's questions, and the findings get DiscoveryBench's ``recall_context`` and
HMS (``hms``, which may fall outside [0, 1]) and cogym_lab's ``context_f1_relation`` product.
``performance`` is ``recall_context`` under the ``cogym`` protocol (as the Co-Gym release
reports) and ``context_f1_relation`` under ``cogym_lab``. The protocol also picks the instance
set: 110 multi-table queries under ``cogym``, 117 under ``cogym_lab`` (``instances.py``).

The standalone kernel is isolated (``cogym_lab.kernels.sandbox``): it starts in a folder
holding only the instance's data files, with a fresh empty home, a private temp folder and an
environment that names no data directory, so no cell can follow a path it was given to the
answer key or the metadata files. With no data directory chosen and none in the default place,
the instances come from the sample inside the package, whose gold hypotheses are sealed there
(``sealed.py``) rather than hidden by path: the kernel can import the package.

Besides the DiscoveryBench instances, a session can analyse a person's own data: a free
``query`` with ``data`` (a variable already in the kernel, or a file path); such sessions are not
graded, their outcome is the findings, and their kernel is not isolated (nothing is hidden). From
a notebook (``notebook``, see ``cogym_lab.kernels.notebook_link``), cells run in the notebook's
own kernel, agent cells appear in the live notebook, and the person's cells are recorded as
theirs. ``autonomy="ask"`` makes every agent cell wait for a person's approval.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from cogym_lab.core import (
    Action,
    ActionError,
    ActionOutcome,
    CoEnv,
    Component,
    Deferred,
    RenderType,
    action,
)
from cogym_lab.core.env import ScoreReport
from cogym_lab.core.grammar import RawAction
from cogym_lab.core.plans import below
from cogym_lab.core.protocol import DEFAULT_PROTOCOL, get_protocol
from cogym_lab.datasets import DataItem, DataSample
from cogym_lab.datasets import data_dir as resolve_data_dir
from cogym_lab.envs.dataset_env import DatasetEnv
from cogym_lab.envs.tabular_analysis.data_files import DATA_FILES, SAMPLE
from cogym_lab.envs.tabular_analysis.grader import (
    HypothesisGrade,
    explain_grade,
    judge_hypothesis,
)
from cogym_lab.envs.tabular_analysis.instances import copy_files, load_instances
from cogym_lab.kernels import KernelExecutor, LocalKernelExecutor, NotebookLink, PersonCell
from cogym_lab.kernels.notebook_link import NOTEBOOK_CELL
from cogym_lab.lm import LM, configured_lm

AUTONOMY_LEVELS = ("free", "ask")
RESTART_NOTE = ("The kernel restarted: every variable is gone. Re-run the cells that load the "
                "data before using it again.")
WORK_FOLDER = "work"  # inside the env's scratch folder: the kernel's folder, data files only


def protocol_scores(grade: HypothesisGrade, protocol: str) -> dict[str, float]:
    """The task scores of ``grade`` under ``protocol``: ``performance`` is DiscoveryBench's
    ``recall_context`` for ``cogym`` and the context x F1 x relation product for
    ``cogym_lab``; both, and the HMS, are always reported beside it."""
    scores = {"recall_context": grade.recall_context, "hms": grade.hms,
              "context_f1_relation": grade.product.score}
    performance = (scores["recall_context"] if get_protocol(protocol).name == "cogym"
                   else scores["context_f1_relation"])
    return {"performance": performance, **scores}


@dataclass(frozen=True)
class CustomQuery:
    """A person's own question about their own data (no gold hypothesis: not graded)."""

    query: str
    data: str | None = None  # a variable in the kernel, or a file path

    @property
    def data_is_variable(self) -> bool:
        return self.data is not None and self.data.isidentifier()

    def describe_data(self) -> str:
        if self.data is None:
            return "Use the data already loaded in the kernel."
        if self.data_is_variable:
            return f"The data is the variable `{self.data}`, already defined in the kernel."
        return f"The data is in the file `{self.data}` (relative to the kernel's working folder)."

    def hidden_information(self) -> str:
        return ""


@dataclass
class TabularAnalysisEnv(DatasetEnv):
    """One selected DiscoveryBench-Real query (``instance`` = its number), or a person's own
    ``query`` about their ``data`` (then ``instance`` is ignored and nothing is graded).

    The instance's tables are copied into ``workdir``, where the kernel starts. By default that
    is ``work/`` in a fresh private temporary folder that also holds the kernel's home and temp
    folders, so the kernel's folder and its parent hold nothing but the data files; a
    ``workdir`` you name should be empty. A custom query works in ``workdir`` or the current
    folder. ``executor`` defaults to a standalone IPython kernel (isolated, see the module
    docstring); ``notebook`` (from the Jupyter server extension) brings the notebook's own
    kernel and live document instead. ``autonomy`` is ``"free"`` (the agent runs cells at will)
    or ``"ask"`` (each agent cell waits for a person's approval).
    """

    runs_in_notebook = True  # a session from a notebook analyses in its kernel

    workdir: str | None = None
    cell_timeout: float = 60.0
    executor: KernelExecutor | None = field(default=None, repr=False)
    judge_lm: LM | None = field(default=None, repr=False)
    query: str | None = None
    data: str | None = None
    autonomy: str = "free"
    notebook: NotebookLink | None = field(default=None, repr=False)
    #: The judge's grade of the findings the last grading saw (``None``: not graded).
    _grade: HypothesisGrade | None = field(default=None, init=False, repr=False)

    name = "tabular_analysis"
    typical_minutes = 20.0
    plan_step_guidance = (
        "Carry out an analysis step as one or a few cells in the shared notebook "
        "(EXECUTE_JUPYTER_CELL), then complete the step with what the outputs show.")
    data_files: ClassVar[tuple[DataItem, ...]] = DATA_FILES
    data_sample: ClassVar[DataSample | None] = SAMPLE
    judge_prompts: ClassVar[tuple[str, ...]] = ("judge.md", "judge_retry.md", "judge_system.md")

    def __post_init__(self) -> None:
        self._scratch: Path | None = None  # the private folder made by _reset, if any
        if self.autonomy not in AUTONOMY_LEVELS:
            raise ValueError(f"autonomy must be one of {', '.join(AUTONOMY_LEVELS)}, "
                             f"not {self.autonomy!r}.")
        if self.query is None:
            if self.data is not None:
                raise ValueError("'data' goes with a custom 'query' (your own question).")
            super().__post_init__()
        else:
            if not isinstance(self.query, str) or not self.query.strip():
                raise ValueError("A custom 'query' must be a non-empty question.")
            if self.data is not None and (not isinstance(self.data, str) or not self.data.strip()):
                raise ValueError("'data' must name a variable in the kernel or a file path.")
            CoEnv.__init__(self)  # no dataset to load: the person brings the data
            self.protocol = get_protocol(self.protocol).name
            self.task = CustomQuery(self.query.strip(), self.data.strip() if self.data else None)
        if self.notebook is not None and self.executor is None:
            self.executor = self.notebook.executor
        follow = getattr(self.notebook, "follow_record", None)
        if callable(follow):  # the link keeps the recorded agent cells in the notebook
            follow(lambda: getattr(self, "cells", []))

    @property
    def is_custom(self) -> bool:
        return isinstance(self.task, CustomQuery)

    def env_args(self) -> dict[str, Any]:
        args = ({"query": self.task.query, **({"data": self.task.data} if self.task.data else {})}
                if self.is_custom else super().env_args())
        return args | ({"autonomy": self.autonomy} if self.autonomy != "free" else {})

    @classmethod
    def performance_scale(cls, protocol: str = DEFAULT_PROTOCOL
                          ) -> Literal["dichotomous", "graded"]:
        """``recall_context`` (the ``cogym`` performance) is pass or fail for the paper, which
        compares it by McNemar's test ("dichotomous task-specific scoring function", Co-Gym
        Table 3); ``cogym_lab``'s product score is graded."""
        return "dichotomous" if get_protocol(protocol).name == "cogym" else "graded"

    @classmethod
    def load_dataset(cls, data_dir: str | None,
                     protocol: str = DEFAULT_PROTOCOL) -> list[Any]:
        # The paper's set (110) is the multi-table queries; cogym_lab adds unprocessed ones.
        return load_instances(data_dir, multi_table_only=protocol == "cogym")

    @property
    def task_description(self) -> str:
        if self.is_custom:
            where = self.task.describe_data()
        else:
            files = ", ".join(path.name for path in self.files) if self._is_reset else "the tables"
            where = f"The data files ({files}) are in the kernel's working directory."
        text = (f"{self.task.query}\n\n{where} Analyse the data with Python cells (pandas is "
                "available) and write the finding as a hypothesis in the shared editor: what "
                "relation holds between which variables, under which conditions.")
        if self.notebook is not None:
            text += (" Your cells run in the person's own notebook kernel: every variable is "
                     "shared both ways, and the cells the person runs are shown to you.")
        if self.autonomy == "ask":
            text += " Each cell you run waits for the person's approval first."
        return text

    def hidden_information(self) -> str:
        return self.task.hidden_information()

    def hidden_strings(self) -> list[str]:
        """The gold hypothesis and the distinctive fragments of the domain knowledge and the
        dataset and column descriptions (rule: ``instances.py``); none for a custom query."""
        return [] if self.is_custom else self.task.hidden_strings()

    def needs_confirmation(self, role: str, action: Action) -> bool:
        return self.autonomy == "ask" and action.name == "EXECUTE_JUPYTER_CELL"

    def observed_steps(self) -> AsyncIterator[tuple[str, RawAction]] | None:
        if self.notebook is None:
            return None
        return self._notebook_steps(self.notebook)

    async def _notebook_steps(self, link: NotebookLink) -> AsyncIterator[tuple[str, RawAction]]:
        """The person's cells and the kernel's restarts, as the person's internal steps."""
        async for happening in link.happenings():
            if isinstance(happening, PersonCell):
                yield link.person, {"name": "RECORD_CELL", "args": {
                    "code": happening.code, "result": happening.result.to_dict()}}
            else:
                yield link.person, {"name": "RECORD_KERNEL_RESTART", "args": {}}

    def _reset(self, seed: int | None) -> None:
        self.cells: list[dict[str, Any]] = []
        self.running: dict[str, str] = {}  # role -> code now running
        self.findings = ""
        if self.is_custom:  # the person's data stays where it is
            kernel_dir = self.executor.cwd if self.executor is not None else None
            self.workdir = str(self.workdir or kernel_dir or Path.cwd())
            self.files = [] if self.task.data is None or self.task.data_is_variable else [
                Path(self.task.data)]
            return
        if self.workdir is None:  # a scratch copy of the data, removed by aclose() or with the env
            scratch = tempfile.mkdtemp(prefix="cogym-tabular-")
            self._remove_scratch = weakref.finalize(self, shutil.rmtree, scratch, True)
            self._scratch = Path(scratch)
            self.workdir = str(self._scratch / WORK_FOLDER)
        folder = Path(self.workdir)
        folder.mkdir(parents=True, exist_ok=True)
        self.workdir = str(folder)
        self.files = copy_files(self.task, folder, self.data_dir)

    def public_components(self) -> list[Component]:
        return [
            Component(name="notebook", title="Notebook", render_type=RenderType.NOTEBOOK,
                      content={"cells": self.cells, "running": dict(self.running)}),
            Component(name="findings", title="Findings (shared editor)",
                      render_type=RenderType.EDITOR, content=self.findings),
            Component(name="files", title="Data", render_type=RenderType.TEXT,
                      content=self._data_summary()),
        ]

    def _data_summary(self) -> str:
        if self.is_custom and self.task.data_is_variable:
            return f"kernel variable: {self.task.data}"
        return "\n".join(str(path) if self.is_custom else path.name for path in self.files)

    def outcome(self) -> str | None:
        return self.findings.strip() or None

    async def aevaluate(self) -> dict[str, float]:
        self._grade = None
        if self.is_custom:  # no gold hypothesis: the findings are the outcome
            return {}
        judge = self.judge_lm or configured_lm("the hypothesis judge")
        if judge is None or not self.findings.strip():
            return {}
        grade = await judge_hypothesis(self.findings, self.task, judge)
        self._grade = grade
        return protocol_scores(grade, self.protocol)

    def explain_scores(self, scores: dict[str, float]) -> list[ScoreReport]:
        """What the judge matched between the findings and the expected answer, from the grade
        the last grading kept."""
        return explain_grade(self._grade, scores, self.protocol)

    async def aclose(self) -> None:
        if self.executor is not None:  # a notebook's kernel is only disconnected, never stopped
            await self.executor.shutdown()
        if self.notebook is not None:
            await self.notebook.close()
        if getattr(self, "_remove_scratch", None) is not None:
            self._remove_scratch()

    def _kernel(self) -> KernelExecutor:
        if self.executor is None:
            # A person's own data hides nothing: their kernel keeps their environment. The
            # bundled sample is not hidden by path: it lies inside the installed package, so
            # hiding it would drop the PYTHONPATH, virtualenv or user-site entries that hold the
            # package (and pandas beside it) while the kernel could still import cogym_lab; its
            # gold is sealed instead (``sealed.py``).
            hidden = [] if self.is_custom else [resolve_data_dir(self.data_dir)]
            self.executor = LocalKernelExecutor(
                Path(self.workdir or "."), timeout=self.cell_timeout, isolated=not self.is_custom,
                sandbox_root=self._scratch, hidden_paths=hidden)
        return self.executor

    # -- actions -------------------------------------------------------------------------------

    def put_plan_output(self, role: str, text: str) -> None:
        """A finished interactive plan's output goes below the text: nothing is erased."""
        self.findings = below(self.findings, text)

    @action("Run Python code in the shared Jupyter kernel; the cell and its outputs join the "
            "notebook everyone sees.", code="The code of one cell")
    def execute_jupyter_cell(self, role: str, code: str) -> ActionOutcome:
        if not code.strip():
            raise ActionError("EXECUTE_JUPYTER_CELL needs some code.")
        if role in self.running:
            raise ActionError("Your previous cell is still running; wait for its outputs.")
        self.running[role] = code
        kernel, timeout, live = self._kernel(), self.cell_timeout, self.notebook

        async def run() -> dict[str, Any]:
            shown = await live.show_cell(role, code) if live is not None else None
            if not kernel.alive:
                await kernel.start()
            result = await kernel.execute(code, timeout=timeout)
            if live is not None:
                await live.show_outputs(shown, result)
            recorded = result.to_dict()
            if isinstance(shown, str):  # which notebook cell shows it, for the log
                recorded[NOTEBOOK_CELL] = shown
            return {"name": "RECORD_CELL", "args": {"code": code, "result": recorded}}

        return ActionOutcome(deferred=Deferred(work=run, label="Running the cell"))

    def work_failed(self, role: str) -> None:
        """The cell never ran to its outputs (the kernel could not start, say): ``role`` may
        run a cell again."""
        self.running.pop(role, None)

    @action("Record a cell's outputs in the notebook.", internal=True, code="The cell's code",
            result="The outputs")
    def record_cell(self, role: str, code: str, result: dict) -> None:
        self.running.pop(role, None)
        cell = {"index": len(self.cells) + 1, "ran_by": role, "source": code,
                "execution_count": result.get("execution_count"),
                "status": result.get("status"), "outputs": result.get("outputs", []),
                "error": result.get("error"), "truncated": result.get("truncated")}
        if isinstance(result.get(NOTEBOOK_CELL), str):  # shown in the person's notebook
            cell["cell_id"] = result[NOTEBOOK_CELL]
        self.cells.append(cell)

    @action("Note that the kernel restarted and every variable is gone.", internal=True)
    def record_kernel_restart(self, role: str) -> None:
        self.cells.append({"index": len(self.cells) + 1, "ran_by": role,
                           "source": "(kernel restarted)", "execution_count": None,
                           "status": "restarted", "error": None, "truncated": False,
                           "outputs": [{"kind": "stream", "name": "stderr",
                                        "text": RESTART_NOTE}]})

    @action("Replace the findings in the shared editor.", replaces="findings",
            text="The findings")
    def editor_update(self, role: str, text: str) -> None:
        self.findings = text
