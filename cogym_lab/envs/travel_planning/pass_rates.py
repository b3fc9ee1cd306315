"""TravelPlanner's pass rates over many plans, and Co-Gym's task performance of one plan.

Per plan (:class:`PlanVerdicts`):

* ``hard_evaluated``: TravelPlanner's ``eval.py`` grades the hard constraints only when the plan
  was delivered and Complete Information (``is_not_absent``) and Within Sandbox
  (``is_valid_information_in_sandbox``) both pass; otherwise none of them counts as passed.
* ``commonsense_pass``: delivered and no commonsense check failed; ``hard_pass``: hard
  constraints evaluated and none failed; ``final_pass``: both.
* Co-Gym's task performance (``cogym_performance``): the mean of the commonsense pass rate and
  the hard-constraint pass rate, each over the checks that apply (None does not count; 0 when
  none applies). Not gated: a plan that fails Within Sandbox still earns its hard constraints.
  0 for a plan not delivered. When the official code raises in one part (``errors``), the Co-Gym
  release's evaluator catches it and counts that whole part as 0.

Over plans (:func:`pass_rates`), as ``eval.py`` reports them:

* micro: passed checks / checks. Commonsense: 8 per plan. Hard: those the instance sets (the
  budget always, plus its local constraints), counted as passed only where hard constraints
  were evaluated.
* macro: the share of plans with ``commonsense_pass`` (commonsense) or ``hard_pass`` (hard).
* final pass rate: the share of plans with ``final_pass``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from cogym_lab.envs.travel_planning.constraint_names import COMMONSENSE, HARD

__all__ = ["PassRates", "PlanVerdicts", "pass_rates"]

Verdicts = Mapping[str, bool | None]


def _rate(verdicts: Verdicts) -> float:
    applicable = [v for v in verdicts.values() if v is not None]
    return sum(1 for v in applicable if v) / len(applicable) if applicable else 0.0


@dataclass(frozen=True)
class PlanVerdicts:
    """One plan's verdicts by official name: True, False or None (does not apply). ``errors``
    names the checks at which the official code raises (those count as failed)."""

    delivered: bool
    commonsense: Verdicts
    hard: Verdicts
    errors: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PlanVerdicts:
        """From a line written by ``cogym-lab grade`` (or any mapping of the same shape)."""
        return cls(delivered=bool(data.get("delivered", True)),
                   commonsense=dict(data.get("commonsense") or {}),
                   hard=dict(data.get("hard") or {}), errors=dict(data.get("errors") or {}))

    @classmethod
    def from_scores(cls, scores: Mapping[str, float]) -> PlanVerdicts:
        """From a graded session's flat scores (``Grade.scores``: each applicable check's
        verdict as 0/1 under its official name; a check missing there did not apply)."""
        def verdicts(names: Iterable[str]) -> dict[str, bool | None]:
            return {name: bool(scores[name]) if name in scores else None for name in names}

        return cls(delivered=True, commonsense=verdicts(COMMONSENSE), hard=verdicts(HARD))

    @property
    def hard_evaluated(self) -> bool:
        return (self.delivered and self.commonsense.get("is_not_absent") is True
                and self.commonsense.get("is_valid_information_in_sandbox") is True)

    @property
    def commonsense_pass(self) -> bool:
        return self.delivered and not any(v is False for v in self.commonsense.values())

    @property
    def hard_pass(self) -> bool:
        return self.hard_evaluated and not any(v is False for v in self.hard.values())

    @property
    def final_pass(self) -> bool:
        return self.commonsense_pass and self.hard_pass

    @property
    def commonsense_pass_rate(self) -> float:
        """Co-Gym's: passed / applicable commonsense checks (0 if the official code raises)."""
        if not self.delivered or any(name in COMMONSENSE for name in self.errors):
            return 0.0
        return _rate(self.commonsense)

    @property
    def hard_pass_rate(self) -> float:
        """Co-Gym's: passed / applicable hard constraints (0 if the official code raises)."""
        if not self.delivered or any(name in HARD for name in self.errors):
            return 0.0
        return _rate(self.hard)

    @property
    def cogym_performance(self) -> float:
        if not self.delivered:
            return 0.0
        return (self.commonsense_pass_rate + self.hard_pass_rate) / 2


class HasVerdicts(Protocol):
    """Anything that can give its :class:`PlanVerdicts` (a grade)."""

    def verdicts(self) -> PlanVerdicts: ...


@dataclass(frozen=True)
class PassRates:
    """TravelPlanner's rates over ``plans`` plans, and Co-Gym's mean task performance."""

    plans: int
    delivery_rate: float
    commonsense_micro: float
    commonsense_macro: float
    hard_micro: float
    hard_macro: float
    final_pass_rate: float
    cogym_performance: float

    def to_dict(self) -> dict[str, float | int]:
        return {"plans": self.plans, "delivery_rate": self.delivery_rate,
                "commonsense_micro_pass_rate": self.commonsense_micro,
                "commonsense_macro_pass_rate": self.commonsense_macro,
                "hard_micro_pass_rate": self.hard_micro,
                "hard_macro_pass_rate": self.hard_macro,
                "final_pass_rate": self.final_pass_rate,
                "cogym_performance": self.cogym_performance}


def pass_rates(plans: Iterable[PlanVerdicts | HasVerdicts]) -> PassRates:
    """The rates of the module docstring over ``plans``; a ValueError for none."""
    verdicts = [p if isinstance(p, PlanVerdicts) else p.verdicts() for p in plans]
    if not verdicts:
        raise ValueError("No plan to compute pass rates over.")
    count = len(verdicts)
    commonsense_passed = sum(sum(1 for v in p.commonsense.values() if v is True)
                             for p in verdicts if p.delivered)
    hard_checks = sum(sum(1 for v in p.hard.values() if v is not None) for p in verdicts)
    hard_passed = sum(sum(1 for v in p.hard.values() if v is True)
                      for p in verdicts if p.hard_evaluated)
    return PassRates(
        plans=count,
        delivery_rate=sum(p.delivered for p in verdicts) / count,
        commonsense_micro=commonsense_passed / (len(COMMONSENSE) * count),
        commonsense_macro=sum(p.commonsense_pass for p in verdicts) / count,
        hard_micro=hard_passed / hard_checks if hard_checks else 0.0,
        hard_macro=sum(p.hard_pass for p in verdicts) / count,
        final_pass_rate=sum(p.final_pass for p in verdicts) / count,
        cogym_performance=sum(p.cogym_performance for p in verdicts) / count)
