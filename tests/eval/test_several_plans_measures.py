"""The readers of a session's plans beyond the first: the plan measures over every plan of a
session (each plan rebuilt on its own, its rounds closed by its own steps), and a plan's
heading in prompts naming it as plan actions take it."""

from __future__ import annotations

import json
from pathlib import Path

from cogym_lab.agents.render import render_component
from cogym_lab.api import _plan_in, _plans_in
from cogym_lab.core.plan_env import PLAN_COMPONENT, plan_component
from cogym_lab.envs import make_env
from cogym_lab.eval.metrics.plan_measures import plan_measures
from cogym_lab.records.trajectory import load_session
from tests.support.trajectories import TODO_ARGS, write_session

SECOND = plan_component(2)
A, B, C = ({"id": name} for name in "abc")
TWO_STEPS = [{"title": "Pack", "steps": [{"description": "List the gear", "assignee": "agent"},
                                         {"description": "Review it", "assignee": "agent"}]}]


def complete(step: str, items: list[dict[str, str]], plan: str = "") -> str:
    named = f", plan={json.dumps(plan)}" if plan else ""
    return f"COMPLETE_STEP(step={json.dumps(step)}, items={json.dumps(items)}{named})"


#: Two plans run side by side: the second's s1 completes while the first's s1 runs, and each
#: round is closed by the next step of its own plan, not by a step starting in the other.
INTERLEAVED = [
    ("agent", f"PROPOSE_PLANS(plans={json.dumps(TWO_STEPS)})"),
    ("user", "SELECT_PLAN(index=0)"),
    ("user", 'NEW_PLAN(request="Plan the food")'),
    ("agent", f'PROPOSE_PLANS(plans={json.dumps(TWO_STEPS)}, plan="{SECOND}")'),
    ("user", 'SELECT_PLAN(index=0, plan="2")'),  # by its number
    ("user", "RUN_ALL()"),
    ("user", f'RUN_ALL(plan="{SECOND}")'),
    ("agent", complete("s1", [A, B], SECOND)),  # starts the second's s2: it carries both
    ("agent", complete("s1", [C])),  # starts the first's s2
    ("agent", complete("s2", [], SECOND)),
    ("user", f'EDIT_STEP_OUTPUT(step="s1", items={json.dumps([A])}, plan="{SECOND}")'),
]


def test_the_measures_cover_every_plan_and_keep_each_plans_rounds_apart(tmp_path: Path) -> None:
    record = load_session(write_session(tmp_path / "two-plans", INTERLEAVED,
                                        env_args={**TODO_ARGS, "plans": True}))
    measures = plan_measures(record)
    assert measures is not None and measures.notes == []
    rounds = [(r.plan, r.step, r.produced, r.carried) for r in measures.rounds]
    assert rounds == [(SECOND, "s1", 2, 2), (PLAN_COMPONENT, "s1", 1, 1),
                      (SECOND, "s2", 0, None)]
    # Steps over both plans: four agent steps; the first's s2 still runs, and the curation of
    # the second's s1 made its s2 stale: two completed.
    assert measures.steps_by_assignee == {"agent": 4, "person": 0}
    assert measures.completed_by == {"agent": 2, "person": 0, "not_completed": 2}
    # NEW_PLAN is co-planning; the curation of the second plan's output counts as curation.
    assert measures.act_counts["co_planning"] == 3 and measures.act_counts["curation"] == 1


def test_a_log_that_names_a_plan_it_never_started_stops_with_a_note(tmp_path: Path) -> None:
    # A plan act naming a plan the session never started was refused when it came, so it is
    # not in the log's acts that took effect: the measures only ever see known plans.
    steps = [("agent", f"PROPOSE_PLANS(plans={json.dumps(TWO_STEPS)})"),
             ("user", f'SELECT_PLAN(index=0, plan="{SECOND}")'), ("user", "SELECT_PLAN(index=0)")]
    measures = plan_measures(load_session(write_session(
        tmp_path / "unknown", steps, env_args={**TODO_ARGS, "plans": True})))
    assert measures is not None and measures.notes == []
    assert measures.act_counts["co_planning"] == 1  # only the act that took effect


def test_each_plan_is_named_in_prompts_as_its_actions_take_it() -> None:
    env = make_env("todo", plans=True, **TODO_ARGS)
    env.reset(seed=0)
    env.new_plan("user", request="Plan the food <script>")  # type: ignore[attr-defined]
    shown = {c.name: render_component(c) for c in env.public_components()}
    first, second = shown[PLAN_COMPONENT], shown[SECOND]
    assert first.startswith(f'## Interactive plan (plan="{PLAN_COMPONENT}", shared with')
    assert "For:" not in first  # the first plan answers the task's request, given elsewhere
    assert second.startswith(f'## Interactive plan 2 (plan="{SECOND}", shared with the team)\n'
                             "For: Plan the food <script>\n")


def test_the_api_reads_every_plan_or_the_one_named() -> None:
    env = make_env("todo", plans=True, **TODO_ARGS)
    env.reset(seed=0)
    env.new_plan("user", request="Plan the food")  # type: ignore[attr-defined]
    state = {"views": {"user": {"components": [
        c.model_dump(mode="json") for c in env.public_components()]}}}
    plans = _plans_in(state, "user")
    assert list(plans) == [PLAN_COMPONENT, SECOND]
    assert plans[SECOND]["request"] == "Plan the food"
    assert _plan_in(state, "user") == plans[PLAN_COMPONENT]  # the first, as before
    assert _plan_in(state, "user", SECOND) == plans[SECOND]
    assert _plan_in(state, "agent") is None and _plans_in({}, "user") == {}
