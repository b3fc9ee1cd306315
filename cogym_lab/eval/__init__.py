"""Evaluation suite: metrics computed from results directories alone, LM judges, a batch runner,
reports and plots, a subpackage per job:

* :mod:`~cogym_lab.eval.batch`: running a batch of sessions, and the noise study.
* :mod:`~cogym_lab.eval.metrics`: measures of sessions, from their logs and the judges' labels.
* :mod:`~cogym_lab.eval.stats`: statistics over those measures (trials, IQM, rating tests).
* :mod:`~cogym_lab.eval.judging`: the LM judges, their prompts and answers, failure analysis.
* :mod:`~cogym_lab.eval.users`: the simulated-user audit.
* :mod:`~cogym_lab.eval.reporting`: the report, its plots and HTML, a session as text.

:mod:`~cogym_lab.eval.session_metrics` gathers every metric of one session,
:mod:`~cogym_lab.eval.training_export` writes sessions out as training data and
:mod:`~cogym_lab.eval.inspect_log` as Inspect AI logs. Reading a results folder is
:mod:`cogym_lab.records`, below this package.

Names resolve lazily, so ``import cogym_lab.eval`` stays cheap (no pandas or matplotlib).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "load_session": "cogym_lab.records.trajectory",
    "load_sessions": "cogym_lab.records.trajectory",
    "find_sessions": "cogym_lab.records.trajectory",
    "SessionRecord": "cogym_lab.records.trajectory",
    "report": "cogym_lab.eval.reporting.reports",
    "areport": "cogym_lab.eval.reporting.reports",
    "EvalReport": "cogym_lab.eval.reporting.reports",
    "show": "cogym_lab.eval.reporting.session_text",
    "Judge": "cogym_lab.eval.judging.judges",
    "make_judge": "cogym_lab.eval.judging.judges",
    "initiative_entropy": "cogym_lab.eval.metrics.initiative",
    "run": "cogym_lab.eval.batch.runner",
    "RunSummary": "cogym_lab.eval.batch.runner",
    "study_noise": "cogym_lab.eval.batch.noise",
    "trial_seed": "cogym_lab.eval.batch.seeds",
}

# Spelled out (not ``sorted(_EXPORTS)``) so tools that read ``__all__`` statically see it.
__all__ = [
    "EvalReport",
    "Judge",
    "RunSummary",
    "SessionRecord",
    "areport",
    "find_sessions",
    "initiative_entropy",
    "load_session",
    "load_sessions",
    "make_judge",
    "report",
    "run",
    "show",
    "study_noise",
    "trial_seed",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'cogym_lab.eval' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
