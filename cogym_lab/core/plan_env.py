"""Interactive plans in any task: ``with_plans(TaskEnv)`` is the task with a shared
``interactive_plan`` component and the plan actions (``docs/plans.md``).

The plan's rules live in :mod:`cogym_lab.core.plans`; this module only puts a
:class:`~cogym_lab.core.plans.PlanBoard` into a task and says which side of the team a role is
on (its agents, or its people and simulated users), which the rules need: a person step waits
for the person side, the person picks a plan and curates outputs. ``make_env(task, plans=True)``
builds the planned task, and its ``env_args`` say so, so replay rebuilds it.
"""

from __future__ import annotations

import inspect
import string
from importlib.resources import files
from typing import Any

from cogym_lab.core.actions import Action, ActionError, ActionSpec
from cogym_lab.core.env import ActionOutcome, CoEnv, Deferred, action
from cogym_lab.core.observation import Component, RenderType
from cogym_lab.core.plans import PlanBoard, Side
from cogym_lab.core.step_outputs import OUTPUT_FORMATS
from cogym_lab.core.step_outputs import output_format as step_format

#: The first plan's component name (not "plan": the travel task's editor has that one). A
#: session may hold several plans (Cocoa's document holds several, each run on its own): the
#: n-th is ``interactive_plan_n``; every plan action takes ``plan``, one of these names (or
#: its number), empty for the first.
PLAN_COMPONENT = "interactive_plan"
#: Plans one session may hold.
MAX_PLANS = 4
#: How every plan action's ``plan`` param is described to members.
WHICH_PLAN = "Which plan: its component name (e.g. interactive_plan_2); empty for the first"


def plan_component(number: int) -> str:
    """The component name of plan ``number`` (from 1)."""
    return PLAN_COMPONENT if number == 1 else f"{PLAN_COMPONENT}_{number}"


def is_plan_component(name: str) -> bool:
    """Whether ``name`` names one of a session's plans."""
    return name == PLAN_COMPONENT or (
        name.startswith(f"{PLAN_COMPONENT}_") and name[len(PLAN_COMPONENT) + 1:].isdigit())


class Planning(CoEnv):
    """The plan part of a planned task; combined with a task class by :func:`with_plans`."""

    name = "planning"
    #: The session's plans by component name, in the order they were started.
    plan_boards: dict[str, PlanBoard]

    def __init__(self, *args: Any, plans: bool = True, **kwargs: Any) -> None:
        # ``plans`` is what env_args() says: taken here, so the task's own constructor never
        # sees it (replay and check_env rebuild the env from env_args()).
        super().__init__(*args, **kwargs)
        #: The LM that suggests steps (a tool slot: the session gives it the team's tools LM).
        #: Anything with ``async complete(messages, purpose=...)`` whose result has ``.text``.
        self.suggestion_lm: Any = None

    def _reset(self, seed: int | None) -> None:
        super()._reset(seed)  # type: ignore[safe-super]  # the task's own, after this in the MRO
        self.plan_boards = {PLAN_COMPONENT: PlanBoard(self.task_description,
                                                      self.plan_step_guidance)}

    @property
    def plan_board(self) -> PlanBoard:
        """The first plan (a session with one plan has only this one)."""
        return self.plan_boards[PLAN_COMPONENT]

    def board(self, plan: str = "") -> PlanBoard:
        """The plan named ``plan``: its component name or its number; empty for the first."""
        name = plan.strip()
        key = PLAN_COMPONENT if not name else plan_component(int(name)) \
            if name.isdigit() and 0 < int(name) <= MAX_PLANS else name
        if key not in self.plan_boards:
            raise ActionError(f"No plan {name[:60]!r}; the session's plans are "
                              f"{', '.join(self.plan_boards)}.")
        return self.plan_boards[key]

    def public_components(self) -> list[Component]:
        shown = super().public_components()  # type: ignore[safe-super]
        if any(is_plan_component(component.name) for component in shown):
            raise TypeError(f"{type(self).__name__}: the task has its own {PLAN_COMPONENT!r} "
                            "component, so it cannot take an interactive plan.")
        return [*shown, *(Component(name=name, render_type=RenderType.PLAN,
                                    content=board.content(),
                                    title="Interactive plan" + ("" if n == 1 else f" {n}"))
                          for n, (name, board) in enumerate(self.plan_boards.items(), 1))]

    def env_args(self) -> dict[str, Any]:
        return {**super().env_args(), "plans": True}

    def starts_play(self, action: Action) -> bool:
        """Co-planning is not playing: a plan action never starts a clock that waits for a
        person, so a person can pick and edit a plan before a real-time game starts."""
        return action.name not in Planning._specs and super().starts_play(action)

    # -- who is who --------------------------------------------------------------------------

    def side(self, role: str) -> Side:
        """The side ``role`` plays: ``agent`` for the team's agents, ``person`` for its people
        and simulated users. A role the env was not told about counts as an agent."""
        kind = {member.role: member.kind for member in self.team}.get(role, "agent")
        return "agent" if kind == "agent" else "person"

    def _person_only(self, role: str, what: str) -> None:
        people = [m for m in self.team if m.kind != "agent"]
        if people and self.side(role) != "person":
            raise ActionError(f"Only the person side {what}.")

    def _overlap_told(self, board: PlanBoard, what: str) -> ActionOutcome | None:
        """The step result of an edit of a step text that overlapped a teammate's: the event's
        ``info["overlap"]`` says whose edit and which lines kept both versions."""
        overlap = board.last_overlap
        if overlap is None:
            return None
        authors, overlaps = overlap
        return ActionOutcome(info={"overlap": {
            "component": "plan", "text": what, "with": list(authors),
            "lines": [list(o.lines) for o in overlaps]}})

    # -- co-planning -------------------------------------------------------------------------

    @action(f"Start another plan beside the session's plans (at most {MAX_PLANS}), to plan "
            "and run a part of the work on its own; its actions then name it in `plan`.",
            request="What the new plan is for (empty: the task's request)")
    def new_plan(self, role: str, request: str = "") -> None:
        if len(self.plan_boards) >= MAX_PLANS:
            raise ActionError(f"A session holds at most {MAX_PLANS} plans.")
        text = request.strip() if isinstance(request, str) else ""
        name = plan_component(len(self.plan_boards) + 1)
        self.plan_boards[name] = PlanBoard(text or self.task_description,
                                           self.plan_step_guidance)

    @action("Offer one to three alternative plans for the person to pick from. Each plan is "
            '{"title": "...", "steps": [{"description": "...", "assignee": "agent" or '
            '"person"}]}.', plans="The plans, as a JSON list", plan=WHICH_PLAN)
    def propose_plans(self, role: str, plans: list[Any], plan: str = "") -> None:
        self.board(plan).propose(plans)

    @action("Pick one of the proposed plans (0 for the first).", index="Which plan, from 0",
            plan=WHICH_PLAN)
    def select_plan(self, role: str, index: int, plan: str = "") -> None:
        self._person_only(role, "picks the plan")
        self.board(plan).select(index)

    @action("Add a step to the plan.", description="What the step does",
            assignee="Who does it: agent or person", after="The step it goes after (empty: at "
            "the end)", plan=WHICH_PLAN, output_format=f"What it should produce: one of "
            f"{', '.join(OUTPUT_FORMATS)} (empty: whatever fits)")
    def add_step(self, role: str, description: str, assignee: str = "agent",
                 after: str = "", plan: str = "", output_format: str = "") -> None:
        board = self.board(plan)
        shape = step_format(output_format)  # checked before the step is added: all or nothing
        added = board.add_step(description, assignee, after or None)
        if shape is not None:
            board.set_format(added.id, shape)

    @action("Say what a step should produce: a list of papers, authors, topics, entities or "
            "cells, a table, or a paragraph of text. The agent is told with the step; a done "
            "step becomes stale.", step="The step's id",
            format=f"One of {', '.join(OUTPUT_FORMATS)}; empty clears it", plan=WHICH_PLAN)
    def set_step_format(self, role: str, step: str, format: str, plan: str = "") -> None:
        self.board(plan).set_format(step, format)

    @action("Rewrite a step's description.", step="The step's id, e.g. s2",
            description="The new description", base="The description you edited, if you "
            "started from an older one (your edit is then merged with the ones made since)",
            plan=WHICH_PLAN)
    def edit_step(self, role: str, step: str, description: str,
                  base: str = "", plan: str = "") -> ActionOutcome | None:
        board = self.board(plan)
        board.edit_step(step, description, base or None, author=role)
        return self._overlap_told(board, f"plan step {step}")

    @action("Replace a step's description with a suggested one; UNDO_SUGGESTION brings the "
            "old one back.", step="The step's id", description="The suggested description",
            plan=WHICH_PLAN)
    def suggest_step(self, role: str, step: str, description: str, plan: str = "") -> None:
        self.board(plan).suggest_step(step, description)

    @action("Ask the suggestion LM for a better step in place of this one; it replaces the "
            "description when it comes, and UNDO_SUGGESTION brings the old one back.",
            step="The step's id", plan=WHICH_PLAN)
    def ask_suggestion(self, role: str, step: str, plan: str = "") -> ActionOutcome:
        prompt = self._suggestion_prompt(self.board(plan), step)

        async def suggest() -> dict[str, Any]:
            # Checked in the work, not the action: the action replays the same without an LM.
            lm = self.suggestion_lm
            if lm is None:
                raise RuntimeError("no model is set for suggestions: set the team's tools LM "
                                   "(or an agent's) to have steps suggested")
            completion = await lm.complete([{"role": "user", "content": prompt}],
                                           purpose="plan:suggest")
            text = completion.text.rsplit("Step:", 1)[-1].strip()
            return {"name": "SUGGEST_STEP",
                    "args": {"step": step, "description": text, "plan": plan}}

        return ActionOutcome(deferred=Deferred(work=suggest, label="Suggesting a step"))

    def _suggestion_prompt(self, board: PlanBoard, step_id: str) -> str:
        step = board.step(step_id)  # refuses an unknown step before any LM call
        steps = board.steps
        listed = "\n".join(f"{n}. ({s.assignee}) {s.description}" for n, s in enumerate(steps, 1))
        template = string.Template(files("cogym_lab.core").joinpath(
            "prompts/plan_suggestion.md").read_text(encoding="utf-8"))
        return template.safe_substitute(
            request=board.state.request, steps=listed, description=step.description,
            number=[s.id for s in steps].index(step_id) + 1)

    @action("Bring back the description a suggestion replaced.", step="The step's id",
            plan=WHICH_PLAN)
    def undo_suggestion(self, role: str, step: str, plan: str = "") -> None:
        self.board(plan).undo_suggestion(step)

    @action("Offer to replan the steps after a step whose edit changed the plan's course: "
            "one to three alternative rests of the plan, each a list of steps "
            '{"description": "...", "assignee": "agent" or "person"}; nothing changes until '
            "the person accepts one.", step="The edited step's id (it stays as it is)",
            reason="Why the later steps no longer fit, in a sentence",
            choices="The alternative rests of the plan, as a JSON list of step lists",
            plan=WHICH_PLAN)
    def offer_replan(self, role: str, step: str, choices: list[Any], reason: str = "",
                     plan: str = "") -> None:
        self.board(plan).offer_replan(step, reason, choices)

    @action("Accept the replanning offer: the steps after the edited step are replaced with "
            "the chosen rest of the plan.", choice="Which choice, from 0", plan=WHICH_PLAN)
    def accept_replan(self, role: str, choice: int = 0, plan: str = "") -> None:
        self._person_only(role, "accepts a replanning")
        self.board(plan).accept_replan(choice)

    @action("Turn down the replanning offer; the plan stays as it is.", plan=WHICH_PLAN)
    def dismiss_replan(self, role: str, plan: str = "") -> None:
        self._person_only(role, "dismisses a replanning")
        self.board(plan).dismiss_replan()

    @action("Offer two or three short completions of a step's text for the person to pick "
            "from.", step="The step's id", choices="The completions, as a JSON list of texts",
            plan=WHICH_PLAN)
    def offer_completions(self, role: str, step: str, choices: list[Any], plan: str = "") -> None:
        self.board(plan).offer_completions(step, choices)

    @action("Make one of the offered completions the step's text (UNDO_SUGGESTION brings the "
            "old text back).", step="The step's id", choice="Which completion, from 0",
            plan=WHICH_PLAN)
    def pick_completion(self, role: str, step: str, choice: int, plan: str = "") -> None:
        self._person_only(role, "picks a completion")
        self.board(plan).pick_completion(step, choice)

    @action("Set the offered completions aside.", plan=WHICH_PLAN)
    def dismiss_completions(self, role: str, plan: str = "") -> None:
        self.board(plan).dismiss_completions()

    @action("Delete a step from the plan.", step="The step's id", plan=WHICH_PLAN)
    def delete_step(self, role: str, step: str, plan: str = "") -> None:
        self.board(plan).delete_step(step)

    @action("Move a step to another position (0 for the top).", step="The step's id",
            position="Its new position, from 0", plan=WHICH_PLAN)
    def move_step(self, role: str, step: str, position: int, plan: str = "") -> None:
        self.board(plan).move_step(step, position)

    @action("Assign a step to the agent or to the person.", step="The step's id",
            assignee="agent or person", plan=WHICH_PLAN)
    def assign_step(self, role: str, step: str, assignee: str, plan: str = "") -> None:
        self.board(plan).assign_step(step, assignee)

    # -- co-execution ------------------------------------------------------------------------

    @action("Run one step (every step before it must be done).", step="The step's id",
            plan=WHICH_PLAN)
    def run_step(self, role: str, step: str, plan: str = "") -> None:
        self.board(plan).run_step(step)

    @action("Run the whole plan from its first step, each step after the one before.",
            plan=WHICH_PLAN)
    def run_all(self, role: str, plan: str = "") -> None:
        self.board(plan).run_all()

    @action("Run the plan on from the first step that is not done.", plan=WHICH_PLAN)
    def run_remaining(self, role: str, plan: str = "") -> None:
        self.board(plan).run_remaining()

    @action("Stop running on after this step is done.", step="The step's id", plan=WHICH_PLAN)
    def pause_after_step(self, role: str, step: str, plan: str = "") -> None:
        self.board(plan).pause_after(step)

    @action("Complete a step that waits for your side, with what it produced.",
            step="The step's id", text="What the step found or wrote",
            items='What it produced as items, e.g. [{"id": "...", "title": "..."}]',
            plan=WHICH_PLAN)
    def complete_step(self, role: str, step: str, text: str = "", items: Any = None,
                      plan: str = "") -> None:
        self.board(plan).complete(step, self.side(role), role, text, self.plan_items(items))

    @action("Run the task's search from your own plan step while it waits for you: its results "
            "go into the step's output (completing the step without items keeps them).",
            step="The step's id", query="What to look for (or the search's params as an "
            "object)", search="Which search action, e.g. SEARCH_PAPER (empty: the task's first)",
            plan=WHICH_PLAN)
    def search_in_step(self, role: str, step: str, query: Any,
                       search: str = "", plan: str = "") -> ActionOutcome | None:
        self.board(plan).check_search(step, self.side(role))
        spec = self._search_spec(search)
        first = spec.params[0].name
        args = spec.bind(query if isinstance(query, dict) else {first: query})
        outcome = getattr(self, self._handlers[spec.name][1])(role, **args)
        if outcome is not None and outcome.deferred is not None:
            raise ActionError(f"{spec.name} answers later, so it cannot run inside a step.")
        assert spec.searches is not None  # _search_spec picks searches only
        shown = {c.name: c.content for c in self.private_components(role)}
        results = shown.get(spec.searches)
        # A list of results (papers...), or a titled table whose rows are the results.
        table = isinstance(results, dict) and isinstance(results.get("rows"), list)
        rows = results["rows"] if isinstance(results, dict) and table else results
        items = [dict(r) for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []
        label = str(args[first]) if not isinstance(query, dict) else \
            ", ".join(f"{k}={v}" for k, v in args.items())
        self.board(plan).record_search(step, f"{spec.name}: {label}", items,
                                       kind="record" if table else None)
        return outcome

    def _search_spec(self, name: str) -> ActionSpec:
        """The task's search action called ``name`` (any case), or its first one."""
        searches = [s for s in self.action_specs() if s.searches is not None and s.params]
        if not searches:
            raise ActionError(f"The {self.name} task has no search to run from a step.")
        if not name.strip():
            return searches[0]
        chosen = next((s for s in searches if s.name == name.strip().upper()), None)
        if chosen is None:
            raise ActionError(f"{name.strip()[:60]!r} is not one of the task's searches: "
                              f"{', '.join(s.name for s in searches)}.")
        return chosen

    @action("Say that a running agent step could not be done; the person is asked to do it.",
            step="The step's id", reason="Why, in a sentence", plan=WHICH_PLAN)
    def fail_step(self, role: str, step: str, reason: str = "", plan: str = "") -> None:
        if self.side(role) != "agent":
            raise ActionError("Only the agent side fails its steps; complete the step instead.")
        self.board(plan).fail(step, reason)

    @action("Curate a completed step's output: its text, its items, or both.",
            step="The step's id", text="The output's new text (leave out to keep it)",
            items="The output's new items (leave out to keep them)",
            base="The output text you edited, if you started from an older one (your edit is "
                 "then merged with the ones made since)", plan=WHICH_PLAN)
    def edit_step_output(self, role: str, step: str, text: Any = None,
                         items: Any = None, base: str = "",
                             plan: str = "") -> ActionOutcome | None:
        self._person_only(role, "curates step outputs")
        board = self.board(plan)
        board.edit_output(step, text, self.plan_items(items), base or None, author=role)
        return self._overlap_told(board, f"the output of plan step {step}")

    @action("Write the plan's output (the last step's output, rewritten to answer the "
            "request) into the workspace, once every step is done.", text="The output",
            plan=WHICH_PLAN)
    def write_plan_output(self, role: str, text: str, plan: str = "") -> None:
        board = self.board(plan)
        checked = board.check_output(text)  # before the workspace changes: all or nothing
        self.put_plan_output(role, checked)
        board.write_output(checked)


def with_plans(env_class: type[CoEnv]) -> type[CoEnv]:
    """``env_class`` with interactive plans: the ``plan`` component and the plan actions."""
    if not isinstance(env_class, type) or not issubclass(env_class, CoEnv):
        raise TypeError(f"Plans go into a CoEnv class, not {env_class!r}.")
    if issubclass(env_class, Planning):
        return env_class
    clash = set(env_class._specs) & set(Planning._specs)
    if clash:
        raise TypeError(f"{env_class.__name__} already has actions named {sorted(clash)}.")
    task_signature = inspect.signature(env_class)
    plans = inspect.Parameter("plans", inspect.Parameter.KEYWORD_ONLY, default=True,
                              annotation=bool)
    shown = [p for p in task_signature.parameters.values() if p.kind != p.VAR_KEYWORD]
    shown += [plans, *(p for p in task_signature.parameters.values() if p.kind == p.VAR_KEYWORD)]
    return type(f"{env_class.__name__}WithPlans", (Planning, env_class), {
        "name": env_class.name,  # the task's name, not the mix-in's: results say which task
        "__module__": env_class.__module__,
        "__qualname__": f"{env_class.__qualname__}WithPlans",
        # The task's own arguments, and ``plans``: what make_env and check_env look at.
        "__signature__": task_signature.replace(parameters=shown),
    })


__all__ = ["PLAN_COMPONENT", "Planning", "with_plans"]
