"""Grading a travel plan with TravelPlanner's 8 commonsense checks and 5 hard constraints.

Two modes share one implementation (:mod:`~cogym_lab.envs.travel_planning.grading_rules` holds
the switches):

* ``official`` (the default) gives the verdicts of TravelPlanner's official evaluation code,
  quirks included, over the official accommodation table;
* ``corrected`` fixes the official bugs, over the corrected accommodation table.

The checks carry their official names (:data:`COMMONSENSE`, :data:`HARD`); each verdict is
True, False or None (does not apply) with a reason that says what was found. Where the official
code raises, official mode fails that check and records the error in :attr:`Grade.errors`.

Entry points: :func:`grade_submission` for a plan in TravelPlanner's submission format (a list of
day objects), :func:`grade_plan` for that or the shared editor's text (parsed, then converted,
see :mod:`~cogym_lab.envs.travel_planning.submission`), and :func:`grade_text` with an LM to read
free text. The grader reads its mode's accommodation table: given a database holding the other
one, it loads the sibling database of the same data directory.

A plan with no day (an empty list, or a text whose days are all blank) is not delivered: every
commonsense check and every applicable hard constraint fails, and it scores 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cogym_lab.core.env import ScoreReport
from cogym_lab.envs.travel_planning.commonsense import COMMONSENSE_CHECKS
from cogym_lab.envs.travel_planning.constraint_names import COMMONSENSE, HARD, PAPER_TERMS
from cogym_lab.envs.travel_planning.grading_rules import GraderMode, GradingRules, get_rules
from cogym_lab.envs.travel_planning.hard_constraints import HARD_CONSTRAINTS, total_cost
from cogym_lab.envs.travel_planning.pass_rates import PlanVerdicts
from cogym_lab.envs.travel_planning.plan import DayPlan, ParsedPlan, parse_plan
from cogym_lab.envs.travel_planning.records import Flight, TravelInstance
from cogym_lab.envs.travel_planning.sandbox import Sandbox
from cogym_lab.envs.travel_planning.submission import read_submission, to_submission
from cogym_lab.envs.travel_planning.trip import Trip, Unreadable, Verdict

if TYPE_CHECKING:
    from cogym_lab.envs.travel_planning.database import TravelDatabase
    from cogym_lab.lm import LM

__all__ = ["COMMONSENSE", "HARD", "PAPER_TERMS", "Grade", "Verdict", "explain_grade",
           "grade_plan", "grade_submission", "grade_text", "undelivered_grade"]

_LOCAL_CONSTRAINTS = {"valid_cuisine": "cuisine", "valid_room_rule": "house rule",
                      "valid_transportation": "transportation", "valid_room_type": "room type"}


@dataclass
class Grade:
    """Every check's verdict for one plan, and what TravelPlanner and Co-Gym make of them."""

    mode: GraderMode
    commonsense: dict[str, Verdict]
    hard: dict[str, Verdict]
    delivered: bool = True
    parser: str = "structured"  # which parser produced the days: "structured", "lm", "json"
    total_cost: float | None = None  # None when not delivered or the official code raises
    errors: dict[str, str] = field(default_factory=dict)  # check -> where the official raises
    problems: list[str] = field(default_factory=list)  # what the plan parser could not read
    plan: list[dict[str, Any]] = field(default_factory=list)  # the days as graded

    def verdicts(self) -> PlanVerdicts:
        return PlanVerdicts(delivered=self.delivered,
                            commonsense={k: v.passed for k, v in self.commonsense.items()},
                            hard={k: v.passed for k, v in self.hard.items()},
                            errors=dict(self.errors))

    @property
    def commonsense_pass_rate(self) -> float:
        return self.verdicts().commonsense_pass_rate

    @property
    def hard_pass_rate(self) -> float:
        return self.verdicts().hard_pass_rate

    @property
    def performance(self) -> float:
        """Co-Gym's task performance: the mean of the two pass rates."""
        return self.verdicts().cogym_performance

    @property
    def hard_evaluated(self) -> bool:
        """Whether TravelPlanner's ``eval.py`` grades this plan's hard constraints."""
        return self.verdicts().hard_evaluated

    @property
    def final_pass(self) -> bool:
        return self.verdicts().final_pass

    @property
    def failed(self) -> set[str]:
        """The names of the checks that failed."""
        return {name for name, v in (*self.commonsense.items(), *self.hard.items())
                if v.passed is False}

    def scores(self) -> dict[str, float]:
        """A flat score dict: the rates, the pass-rate inputs as 0/1, and each applicable
        check's verdict as 0/1 under its official name."""
        plan = self.verdicts()
        scores = {"performance": plan.cogym_performance,
                  "commonsense_pass_rate": plan.commonsense_pass_rate,
                  "hard_pass_rate": plan.hard_pass_rate,
                  "commonsense_pass": float(plan.commonsense_pass),
                  "hard_evaluated": float(plan.hard_evaluated),
                  "hard_pass": float(plan.hard_pass),
                  "final_pass": float(plan.final_pass)}
        for name, verdict in (*self.commonsense.items(), *self.hard.items()):
            if verdict.passed is not None:
                scores[name] = float(verdict.passed)
        return scores

    def to_dict(self) -> dict[str, Any]:
        plan = self.verdicts()
        return {"mode": self.mode, "delivered": self.delivered, "parser": self.parser,
                "performance": plan.cogym_performance,
                "commonsense_pass_rate": plan.commonsense_pass_rate,
                "hard_pass_rate": plan.hard_pass_rate,
                "hard_evaluated": plan.hard_evaluated, "final_pass": plan.final_pass,
                "total_cost": self.total_cost,
                "commonsense": {k: v.to_dict() for k, v in self.commonsense.items()},
                "hard": {k: v.to_dict() for k, v in self.hard.items()},
                "errors": dict(self.errors), "problems": list(self.problems)}


def _run(name: str, check: Callable[[Trip], Verdict], trip: Trip,
         errors: dict[str, str]) -> Verdict:
    """One check; where the official code would raise, what the mode makes of it."""
    try:
        return check(trip)
    except Unreadable as error:
        message = str(error)
        if trip.rules.never_raises:
            return Verdict(False, message[0].upper() + message[1:] + ".")
        errors[name] = message
        return Verdict(False, f"TravelPlanner's evaluation raises an error here ({message}); "
                              f"counted as failed.")


def _undelivered(instance: TravelInstance, rules: GradingRules, parser: str,
                 problems: list[str]) -> Grade:
    reason = "No plan was delivered."
    hard = {}
    for name in HARD:
        local = _LOCAL_CONSTRAINTS.get(name)
        asked = local is None or bool((instance.local_constraint or {}).get(local))
        hard[name] = (Verdict(False, reason) if asked else
                      Verdict(None, f"No {local} constraint was asked for."))
    return Grade(mode=rules.mode, commonsense={name: Verdict(False, reason)
                                               for name in COMMONSENSE},
                 hard=hard, delivered=False, parser=parser, problems=problems)


def undelivered_grade(instance: TravelInstance, mode: str | GradingRules = "official") -> Grade:
    """The grade of no plan for ``instance``: every check failed where it applies."""
    return _undelivered(instance, get_rules(mode), "none", [])


def grade_submission(days: Sequence[Mapping[str, Any]], instance: TravelInstance,
                     db: TravelDatabase, *, mode: str | GradingRules = "official",
                     parser: str = "json", problems: Sequence[str] = (),
                     flights: Iterable[Flight] | None = None) -> Grade:
    """Grade a plan in TravelPlanner's submission format (a list of day objects whose fields
    are strings; :class:`~cogym_lab.envs.travel_planning.submission.SubmissionError` otherwise).
    ``flights``: the flight table to check against; by default the database's, the one the
    search tools serve (see :mod:`~cogym_lab.envs.travel_planning.sandbox`)."""
    rules = get_rules(mode)
    days = read_submission([dict(day) if isinstance(day, Mapping) else day for day in days])
    if not days:
        return _undelivered(instance, rules, parser, list(problems))
    sandbox = Sandbox(db.for_table(rules.accommodation_table), flights)
    trip = Trip(days=days, instance=instance, sandbox=sandbox, rules=rules)
    errors: dict[str, str] = {}
    commonsense = {name: _run(name, check, trip, errors)
                   for name, check in COMMONSENSE_CHECKS.items()}
    hard = {name: _run(name, check, trip, errors) for name, check in HARD_CONSTRAINTS.items()}
    try:
        cost: float | None = total_cost(trip).total
    except Unreadable:
        cost = None
    return Grade(mode=rules.mode, commonsense=commonsense, hard=hard, parser=parser,
                 total_cost=cost, errors=errors, problems=list(problems),
                 plan=days)


def grade_plan(plan: str | ParsedPlan | Sequence[DayPlan] | Sequence[Mapping[str, Any]] | None,
               instance: TravelInstance, db: TravelDatabase, *,
               mode: str | GradingRules = "official", parsed_with: str = "structured") -> Grade:
    """Grade a plan: the editor's text, a parse of it, its days, or a submission (a list of
    day objects). A text whose days are all blank is not delivered."""
    if plan and not isinstance(plan, str | ParsedPlan):
        submitted = [day for day in plan if isinstance(day, Mapping)]
        if len(submitted) == len(plan):
            return grade_submission(submitted, instance, db, mode=mode)
    if isinstance(plan, str) or plan is None:
        parsed = parse_plan(plan or "")
        days, problems = parsed.days, parsed.problems
    elif isinstance(plan, ParsedPlan):
        days, problems = plan.days, list(plan.problems)
    else:
        days, problems = [], []
        for day in plan:
            if not isinstance(day, DayPlan):
                raise TypeError(f"a plan's days are DayPlans or day objects, not "
                                f"{type(day).__name__}")
            days.append(day)
    if all(day.is_empty() for day in days):  # no day at all, or only days left blank ("-")
        return _undelivered(instance, get_rules(mode), parsed_with, problems)
    return grade_submission(to_submission(days), instance, db, mode=mode, parser=parsed_with,
                            problems=problems)


async def grade_text(text: str, instance: TravelInstance, db: TravelDatabase,
                     lm: LM | None = None, *, mode: str | GradingRules = "official") -> Grade:
    """Grade a plan's text: parsed by :func:`parse_plan`, or, when no day of it can be read and
    an LM is given, rewritten into the day-by-day form by the LM first. ``LMError`` propagates."""
    parsed = parse_plan(text)
    parser = "structured"
    if not parsed.days and lm is not None and (text or "").strip():
        from cogym_lab.envs.travel_planning.lm_parser import parse_with_lm

        parsed = await parse_with_lm(text, lm, days=instance.days)
        parser = "lm"
    return grade_plan(parsed, instance, db, mode=mode, parsed_with=parser)


# -- the grade in plain words ------------------------------------------------------------------

#: How many of the plan parser's problems a report quotes; the rest are counted.
_PROBLEMS_SHOWN = 3


def _verdict_lines(verdicts: Mapping[str, Verdict]) -> list[str]:
    """One line per check that applies, failed ones first: its name as the paper says it, then
    the grader's own reason (which already says what was found)."""
    applicable = [(name, v) for name, v in verdicts.items() if v.passed is not None]
    applicable.sort(key=lambda pair: pair[1].passed is True)  # stable: official order within
    return [f"{'Passed' if v.passed else 'Failed'}: {PAPER_TERMS.get(name, name)}. {v.reason}"
            for name, v in applicable]


def _count(verdicts: Mapping[str, Verdict]) -> tuple[int, int]:
    """(passed, applicable) checks of ``verdicts``."""
    applicable = [v for v in verdicts.values() if v.passed is not None]
    return sum(v.passed is True for v in applicable), len(applicable)


def explain_grade(grade: Grade, scores: Mapping[str, float]) -> list[ScoreReport]:
    """The headline scores of ``grade`` (those of them in ``scores``) in plain words, each with
    the verdicts behind it: which commonsense checks and hard constraints passed or failed, and
    why. The per-check 0/1 scores are not reported one by one: the rates' reasons list them."""
    common_passed, common_total = _count(grade.commonsense)
    hard_passed, hard_total = _count(grade.hard)
    overview: list[str] = []
    if not grade.delivered:
        overview.append("No plan was delivered, so every check counts as failed.")
    else:
        overview.append(f"The plan passes {common_passed} of {common_total} commonsense checks "
                        f"and meets {hard_passed} of {hard_total} hard constraints.")
        if grade.total_cost is not None:
            overview.append(f"The trip as planned costs ${grade.total_cost:,.0f} in total.")
    if grade.parser == "lm":
        overview.append("The plan was not in the day-by-day form, so a language model rewrote it "
                        "into that form before it was graded.")
    if grade.problems:
        shown = "; ".join(grade.problems[:_PROBLEMS_SHOWN])
        more = len(grade.problems) - _PROBLEMS_SHOWN
        overview.append(f"Parts of the plan could not be read: {shown}"
                        + (f" (and {more} more)." if more > 0 else "."))
    if grade.errors:
        overview.append("TravelPlanner's own evaluation fails on some checks of this plan; they "
                        "count as failed.")
    failed = sorted(PAPER_TERMS.get(name, name) for name in grade.failed)
    explained = {
        "performance": ("Overall: the mean of the commonsense pass rate and the hard-constraint "
                        "pass rate", overview),
        "commonsense_pass_rate": ("Share of TravelPlanner's commonsense checks the plan passes "
                                  "(a sensible route, real places, complete days)",
                                  _verdict_lines(grade.commonsense)),
        "hard_pass_rate": ("Share of the trip's own constraints the plan meets (budget, and any "
                           "room, cuisine or transport wishes)", _verdict_lines(grade.hard)),
        "final_pass": ("Whether the plan passes every check and meets every constraint",
                       [f"Not passed: {', '.join(failed)}." if failed else
                        "Every check and constraint passed." if grade.delivered else
                        "No plan was delivered."]
                       + ([] if grade.hard_evaluated or not grade.delivered else [
                           "TravelPlanner grades the constraints only once the plan is complete "
                           "and uses only places from its database."])),
    }
    return [ScoreReport(name=name, value=float(scores[name]), label=label, reasons=reasons)
            for name, (label, reasons) in explained.items() if name in scores]
