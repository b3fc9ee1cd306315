"""Evaluation suite: metrics computed from results directories alone, LM judges, a batch runner,
reports and plots.

Names resolve lazily, so ``import cogym_lab.eval`` stays cheap (no pandas or matplotlib).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "load_session": "cogym_lab.eval.trajectory",
    "load_sessions": "cogym_lab.eval.trajectory",
    "find_sessions": "cogym_lab.eval.trajectory",
    "SessionRecord": "cogym_lab.eval.trajectory",
    "report": "cogym_lab.eval.reports",
    "areport": "cogym_lab.eval.reports",
    "EvalReport": "cogym_lab.eval.reports",
    "show": "cogym_lab.eval.session_text",
    "Judge": "cogym_lab.eval.judges",
    "make_judge": "cogym_lab.eval.judges",
    "initiative_entropy": "cogym_lab.eval.initiative",
    "run": "cogym_lab.eval.runner",
    "RunSummary": "cogym_lab.eval.runner",
    "study_noise": "cogym_lab.eval.noise",
    "trial_seed": "cogym_lab.eval.seeds",
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
