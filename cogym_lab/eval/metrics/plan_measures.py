"""The Cocoa measures of interactive-plan sessions (Feng et al., "Cocoa: Co-Planning and
Co-Execution with AI Agents", §5.4 and §6), from a results directory alone.

A session is planned when its ``env_args`` say ``"plans": true``. Its plan acts are logged as
ordinary action events, so the plan's whole history is rebuilt by applying those events, in
order, to a fresh :class:`~cogym_lab.core.plans.PlanBoard` (no task, no task data: only the plan
rules). The final plan is ``session.json``'s ``final_state`` (the component whose render type
is ``plan``), or the rebuilt one when a file has no final state.

A session may hold several plans (``NEW_PLAN``; each act names its plan in ``plan``). Each is
rebuilt on a board of its own, its rounds are closed by its own steps only (a round names its
plan), and the measures below are over all the session's plans together.

The measures (``docs/evaluation.md`` gives them with examples):

* **Output-to-input item ratio, per round.** A round is one run of a step: the step completing
  (``COMPLETE_STEP``). Its *produced* items are the step's output items as completed. The round
  is *followed* by the first step that starts running after it (by ``RUN_STEP``, ``RUN_ALL``,
  ``RUN_REMAINING``, or continuous running starting it at once). When that step comes later in
  the plan, the round's *carried* items are those of its produced items (compared as JSON
  values, duplicates counted) that are still in the step's context-pool entry at that moment:
  what the next step started from. The ratio is carried / produced. A round has no ratio when
  it produced no items, or when no later step started after it (the session ended, or the
  step or an earlier one was run again first): such a round fed no next round. A deleted
  step's items were carried by nobody: carried 0.
* **Activity of the person side** (people and simulated users, together): each of its acts
  that took effect (task actions, messages, confirmations, pauses, finishing) is co-planning,
  co-execution, curation (``EDIT_STEP_OUTPUT``) or other, by its action's name. Shares by
  count are over all those acts. Shares by time give each act the time from it to the person
  side's next act (for the last one, to the session's last event), capped at
  :data:`ACT_SPAN_CAP` seconds, since a long gap is the person away or waiting, not acting.
* **Steps** of the final plan by assignee, and by who completed them: a step that is ``done``
  counts for the side of the role that completed it last; any other status is not completed.
* **Reruns**: steps completed more than once (``runs`` > 1), and the extra runs in all.

The study's rating comparison (Wilcoxon signed-rank tests between two systems) is
:mod:`cogym_lab.eval.stats.rating_tests`.
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from cogym_lab.core.actions import ActionError
from cogym_lab.core.grammar import parse_canonical
from cogym_lab.core.messages import Event, EventType
from cogym_lab.core.plan_env import MAX_PLANS, PLAN_COMPONENT, plan_component
from cogym_lab.core.plans import PlanBoard, Side
from cogym_lab.records.trajectory import SessionRecord

log = logging.getLogger(__name__)

CO_PLANNING = frozenset({"PROPOSE_PLANS", "SELECT_PLAN", "ADD_STEP", "EDIT_STEP", "DELETE_STEP",
                         "MOVE_STEP", "ASSIGN_STEP", "SUGGEST_STEP", "UNDO_SUGGESTION",
                         "OFFER_REPLAN", "ACCEPT_REPLAN", "DISMISS_REPLAN", "OFFER_COMPLETIONS",
                         "PICK_COMPLETION", "DISMISS_COMPLETIONS", "NEW_PLAN"})
CO_EXECUTION = frozenset({"RUN_STEP", "RUN_ALL", "RUN_REMAINING", "PAUSE_AFTER_STEP",
                          "COMPLETE_STEP", "FAIL_STEP"})
CURATION = frozenset({"EDIT_STEP_OUTPUT"})
PLAN_ACTS = CO_PLANNING | CO_EXECUTION | CURATION | {"WRITE_PLAN_OUTPUT"}
ACTIVITIES = ("co_planning", "co_execution", "curation", "other")
#: Seconds at most that one act of the person side counts for in the time shares.
ACT_SPAN_CAP = 60.0
#: Event types that are a member's own act (a tick, a start or an end is the coordinator's,
#: a wait changes nothing, a refusal took no effect).
_ACTS = frozenset({EventType.ACTION, EventType.MESSAGE, EventType.CONFIRM_REQUEST,
                   EventType.CONFIRM_ACCEPT, EventType.CONFIRM_REJECT, EventType.PAUSE,
                   EventType.RESUME, EventType.FINISH})
_IN_PROGRESS = ("running", "needs_input")


def is_planned(record: SessionRecord) -> bool:
    """Whether the session had an interactive plan."""
    return record.env_args.get("plans") is True


@dataclass(frozen=True)
class Round:
    """One run of a step: what it produced and how much of it the next step started from."""

    step: str
    seq: int  # the COMPLETE_STEP event
    produced: int
    carried: int | None = None  # None: no later step started from it
    plan: str = PLAN_COMPONENT  # the plan the step is in (step ids repeat across plans)

    @property
    def ratio(self) -> float | None:
        """carried / produced; ``None`` when there is nothing to divide (see the module)."""
        if self.carried is None or self.produced == 0:
            return None
        return self.carried / self.produced


@dataclass
class PlanMeasures:
    """The plan measures of one planned session."""

    rounds: list[Round] = field(default_factory=list)
    act_counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ACTIVITIES, 0))
    act_seconds: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(ACTIVITIES, 0.0))
    steps_by_assignee: dict[str, int] = field(
        default_factory=lambda: {"agent": 0, "person": 0})
    completed_by: dict[str, int] = field(
        default_factory=lambda: {"agent": 0, "person": 0, "not_completed": 0})
    rerun_steps: int = 0
    extra_runs: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def ratios(self) -> list[float]:
        return [r.ratio for r in self.rounds if r.ratio is not None]

    def count_share(self, activity: str) -> float:
        total = sum(self.act_counts.values())
        return self.act_counts[activity] / total if total else math.nan

    def time_share(self, activity: str) -> float:
        total = sum(self.act_seconds.values())
        return self.act_seconds[activity] / total if total else math.nan

    def row(self) -> dict[str, Any]:
        """The session's measures as one flat table row."""
        ratios = self.ratios
        row: dict[str, Any] = {
            "rounds": len(self.rounds), "ratio_rounds": len(ratios),
            "item_ratio": sum(ratios) / len(ratios) if ratios else math.nan,
            "person_acts": sum(self.act_counts.values()),
            "person_act_seconds": sum(self.act_seconds.values())}
        for activity in ACTIVITIES[:3]:
            row[f"{activity}_share"] = self.count_share(activity)
            row[f"{activity}_time_share"] = self.time_share(activity)
        row |= {f"steps_{side}": n for side, n in self.steps_by_assignee.items()}
        row |= {f"completed_{who}": n for who, n in self.completed_by.items()}
        return row | {"rerun_steps": self.rerun_steps, "extra_runs": self.extra_runs}


def activity_of(action_name: str) -> str:
    """Which of :data:`ACTIVITIES` an act of the person side is, by its action's name."""
    if action_name in CO_PLANNING:
        return "co_planning"
    if action_name in CO_EXECUTION:
        return "co_execution"
    if action_name in CURATION:
        return "curation"
    return "other"


def plan_measures(record: SessionRecord) -> PlanMeasures | None:
    """The plan measures of ``record``, or ``None`` when it had no interactive plan."""
    if not is_planned(record):
        return None
    measures = PlanMeasures()
    boards = {PLAN_COMPONENT: PlanBoard("")}
    measures.rounds = _rounds(record, boards, measures.notes)
    _activity(record, measures)
    _steps(record, boards, measures)
    return measures


def plan_of(args: dict[str, Any]) -> str:
    """The component name of the plan an act names in ``plan`` (its name or its number;
    empty: the first), as ``core.plan_env`` reads it; an unknown name is kept as it is."""
    name = str(args.get("plan") or "").strip()
    if not name:
        return PLAN_COMPONENT
    return plan_component(int(name)) if name.isdigit() and 0 < int(name) <= MAX_PLANS else name


# -- rounds ------------------------------------------------------------------------------------


def _side_of(record: SessionRecord) -> Callable[[str], Side]:
    return lambda role: "person" if record.is_human(role) else "agent"


def _apply(board: PlanBoard, name: str, args: dict[str, Any], role: str, side: Side) -> None:
    """One logged plan act on ``board``, as ``core.plan_env`` applies it."""
    step = str(args.get("step", ""))
    acts: dict[str, Callable[[], Any]] = {
        "PROPOSE_PLANS": lambda: board.propose(args.get("plans")),
        "SELECT_PLAN": lambda: board.select(args.get("index", -1)),
        "ADD_STEP": lambda: board.add_step(args.get("description"),
                                           args.get("assignee", "agent"),
                                           args.get("after") or None),
        "EDIT_STEP": lambda: board.edit_step(step, args.get("description"),
                                             args.get("base") or None),
        "SUGGEST_STEP": lambda: board.suggest_step(step, args.get("description")),
        "UNDO_SUGGESTION": lambda: board.undo_suggestion(step),
        "OFFER_REPLAN": lambda: board.offer_replan(step, args.get("reason", ""),
                                                   args.get("choices")),
        "ACCEPT_REPLAN": lambda: board.accept_replan(args.get("choice", 0)),
        "DISMISS_REPLAN": board.dismiss_replan,
        "OFFER_COMPLETIONS": lambda: board.offer_completions(step, args.get("choices")),
        "PICK_COMPLETION": lambda: board.pick_completion(step, args.get("choice", -1)),
        "DISMISS_COMPLETIONS": board.dismiss_completions,
        "DELETE_STEP": lambda: board.delete_step(step),
        "MOVE_STEP": lambda: board.move_step(step, args.get("position", -1)),
        "ASSIGN_STEP": lambda: board.assign_step(step, args.get("assignee")),
        "RUN_STEP": lambda: board.run_step(step),
        "RUN_ALL": board.run_all,
        "RUN_REMAINING": board.run_remaining,
        "PAUSE_AFTER_STEP": lambda: board.pause_after(step),
        "COMPLETE_STEP": lambda: board.complete(step, side, role, args.get("text", ""),
                                                args.get("items")),
        "FAIL_STEP": lambda: board.fail(step, args.get("reason", "")),
        "EDIT_STEP_OUTPUT": lambda: board.edit_output(step, args.get("text"),
                                                      args.get("items")),
        "WRITE_PLAN_OUTPUT": lambda: board.write_output(args.get("text")),
    }
    acts[name]()


def plan_acts(record: SessionRecord) -> Iterator[tuple[Event, str, dict[str, Any]]]:
    """The plan acts that took effect, in order: (event, action name, its arguments)."""
    for event in record.events:
        if event.type is not EventType.ACTION or event.status != "ok" or not event.action:
            continue
        try:
            parsed = parse_canonical(event.action)
        except ActionError:
            continue
        if parsed.name in PLAN_ACTS:
            yield event, parsed.name, parsed.args


def _key(item: dict[str, Any]) -> str:
    return json.dumps(item, sort_keys=True)


def _rounds(record: SessionRecord, boards: dict[str, PlanBoard],
            notes: list[str]) -> list[Round]:
    """Replay the plan acts on their plans' ``boards`` (``NEW_PLAN`` adds one) and measure
    each round (see the module). Each plan's rounds follow its own steps: a step starting in
    another plan does not close them."""
    side = _side_of(record)
    rounds: list[Round] = []
    # per plan: index in rounds -> step, produced
    open_rounds: dict[str, dict[int, tuple[str, Counter[str]]]] = {}
    for event, name, args in plan_acts(record):
        if name == "NEW_PLAN":
            boards[plan_component(len(boards) + 1)] = PlanBoard("")
            continue
        key = plan_of(args)
        board = boards.get(key)
        if board is None:  # the log names a plan it never started: stop here
            notes.append(f"{record.session_id}: event {event.seq} names no plan of the "
                         f"session ({key[:60]!r})")
            break
        before = {s.id: s.status for s in board.steps}
        try:
            _apply(board, name, args, event.actor or "", side(event.actor or ""))
        except ActionError as error:  # the log and the plan rules disagree: stop here
            notes.append(f"{record.session_id}: the plan could not be rebuilt past event "
                         f"{event.seq} ({error})")
            break
        waiting = open_rounds.setdefault(key, {})
        if name == "COMPLETE_STEP":
            step = board.step(str(args["step"]))
            produced = Counter(_key(i.as_dict()) for i in step.output.items) if step.output \
                else Counter()
            waiting[len(rounds)] = (step.id, produced)
            rounds.append(Round(step=step.id, seq=event.seq, produced=sum(produced.values()),
                                plan=key))
        started = [s.id for s in board.steps
                   if s.status in _IN_PROGRESS and before.get(s.id) not in _IN_PROGRESS]
        if started:
            for index, (step_id, produced) in waiting.items():
                rounds[index] = _close(rounds[index], board, step_id, produced, started[0])
            waiting.clear()
    return rounds


def _close(round_: Round, board: PlanBoard, step_id: str, produced: Counter[str],
           started: str) -> Round:
    """``round_`` once step ``started`` starts: carried when that step is a later one."""
    order = [s.id for s in board.steps]
    if step_id not in order:  # deleted before anything ran on: nothing of it was carried
        return replace(round_, carried=0)
    if order.index(started) <= order.index(step_id):  # run again: no next step took it
        return round_
    entry = next((c for c in board.state.context if c["step"] == step_id), None)
    pool = Counter(_key(i) for i in (entry or {}).get("items", []))
    return replace(round_, carried=sum((produced & pool).values()))


# -- activity ----------------------------------------------------------------------------------


def _activity(record: SessionRecord, measures: PlanMeasures) -> None:
    """Count and time the person side's acts by activity (see the module)."""
    acts = [e for e in record.events
            if e.type in _ACTS and e.status == "ok" and record.is_human(e.actor)]
    acts.sort(key=lambda e: (e.time, e.seq))
    last = max((e.time for e in record.events), default=0.0)
    for i, event in enumerate(acts):
        name = _action_name(event)
        activity = activity_of(name) if name else "other"
        until = acts[i + 1].time if i + 1 < len(acts) else last
        measures.act_counts[activity] += 1
        measures.act_seconds[activity] += min(max(until - event.time, 0.0), ACT_SPAN_CAP)


def _action_name(event: Event) -> str | None:
    if event.type is not EventType.ACTION or not event.action:
        return None
    try:
        return parse_canonical(event.action).name
    except ActionError:
        return None


# -- steps -------------------------------------------------------------------------------------


def final_plans(record: SessionRecord) -> dict[str, dict[str, Any]]:
    """Every plan component's content in ``final_state`` by name, in the view's order (any
    view: plans are shared)."""
    views = (record.session.get("final_state") or {}).get("views") or {}
    for view in views.values():
        found = {str(c.get("name")): c["content"] for c in (view or {}).get("components") or []
                 if isinstance(c, dict) and c.get("render_type") == "plan"
                 and isinstance(c.get("content"), dict)}
        if found:
            return found
    return {}


def final_plan(record: SessionRecord) -> dict[str, Any] | None:
    """The first plan component's content in ``final_state`` (see :func:`final_plans`)."""
    return next(iter(final_plans(record).values()), None)


def _steps(record: SessionRecord, boards: dict[str, PlanBoard],
           measures: PlanMeasures) -> None:
    """Steps by assignee, by who completed them, and reruns, over every plan of the session,
    from the final plans."""
    saved = final_plans(record)
    if saved:
        steps = [step for plan in saved.values()
                 for step in ((plan.get("plan") or {}).get("steps")) or []]
    else:  # a file without a final state: the plans as the log rebuilt them
        steps = [s.model_dump(mode="json") for board in boards.values() for s in board.steps]
    side = _side_of(record)
    for step in steps:
        assignee = "agent" if step.get("assignee") == "agent" else "person"
        measures.steps_by_assignee[assignee] += 1
        done = step.get("status") == "done" and step.get("completed_by")
        measures.completed_by[side(str(step["completed_by"])) if done else "not_completed"] += 1
        runs = int(step.get("runs") or 0)
        if runs > 1:
            measures.rerun_steps += 1
            measures.extra_runs += runs - 1
