"""Interactive plans (Cocoa): a shared, editable plan that a person and an agent make together
(co-planning) and carry out together (co-execution). ``docs/plans.md`` describes it.

A plan is an ordered list of steps, each assigned to the agent side or the person side, each
with a status and, once run, an output. This module is the plan's state and its rules, with no
I/O and no task in it: :class:`PlanBoard` applies one plan act at a time and raises
:class:`~cogym_lab.core.actions.ActionError`, changing nothing, when an act cannot be taken.
``core.plan_env`` puts a board into any task as its ``plan`` component and its plan actions.

Execution follows the paper (§4.2): steps run in order, never out of order; an agent step that
runs is ``running`` until its side completes it, a person step ``needs_input``; in continuous
mode each completed step starts the next one, until a person step, a step marked
``PAUSE_AFTER_STEP``, or the end; running a step again marks the later completed steps
``stale``, and continuous mode runs them again; when every step is done, the plan waits for its
output (the last step's output rewritten to answer the request), which goes to the task's
workspace.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cogym_lab.core.actions import ActionError
from cogym_lab.core.concurrent_edits import Overlap, merge
from cogym_lab.core.shared_text import SharedText

Side = Literal["agent", "person"]
SIDES: tuple[Side, ...] = ("agent", "person")
StepStatus = Literal["not_run", "running", "needs_input", "done", "failed", "stale"]
#: Plans an agent may propose at once (the paper's plan selector shows a few).
MAX_PROPOSALS = 3
MAX_STEPS = 30
#: Completions the agent may offer for one step (the paper's autocompletion choices).
MAX_COMPLETIONS = 3


class StepOutput(BaseModel):
    """What a step produced: items (papers, cells, entities: each a small dict) and text."""

    model_config = ConfigDict(frozen=True)

    items: tuple[dict[str, Any], ...] = ()
    text: str = ""
    edited: bool = False  # the person curated it after it was produced
    #: The searches a person ran from their own step (SEARCH_IN_STEP), in order: while the
    #: step waits, the output holds their results; completing the step keeps them.
    searches: tuple[str, ...] = ()
    pending: bool = False  # search results of a step still waiting for its person


class PlanStep(BaseModel):
    """One step of a plan."""

    model_config = ConfigDict(frozen=True)

    id: str  # stable while the plan lives: "s1", "s2", ...
    description: str
    assignee: Side
    status: StepStatus = "not_run"
    output: StepOutput | None = None
    runs: int = 0  # times it was completed; more than one means reruns
    completed_by: str | None = None  # the role that completed it last
    undo: str | None = None  # the description a SUGGEST_STEP replaced, until kept or undone


class Plan(BaseModel):
    """An ordered list of steps, with a short title for the plan selector."""

    model_config = ConfigDict(frozen=True)

    title: str = ""
    steps: tuple[PlanStep, ...] = ()


class ReplanOffer(BaseModel):
    """An offer to replan the steps after ``after`` (§4.1.4): one to three alternative rests
    of the plan to choose from; nothing changes until the person accepts one."""

    model_config = ConfigDict(frozen=True)

    after: str  # the step whose edit changed the plan's course; it stays as it is
    reason: str = ""  # why the steps after it no longer fit, in a sentence
    choices: tuple[tuple[PlanStep, ...], ...] = ()  # each: the new steps after ``after``
    #: The steps the offer replaces, (id, description) each, as they were when it was made.
    replaces: tuple[tuple[str, str], ...] = ()


class StepCompletions(BaseModel):
    """Short completions of a step's text the person may pick one of."""

    model_config = ConfigDict(frozen=True)

    step: str
    choices: tuple[str, ...] = ()


class PlanState(BaseModel):
    """The plan component's content: the proposals, the chosen plan and how it runs."""

    model_config = ConfigDict(frozen=True)

    request: str  # what the plan answers: the task's request
    guidance: str = ""  # how a step maps onto the task's actions (CoEnv.plan_step_guidance)
    proposals: tuple[Plan, ...] = ()
    plan: Plan | None = None
    continuous: bool = False  # run all / run remaining: each completed step starts the next
    pause_after: str | None = None  # a step after which continuous running stops
    #: What completed steps produced, in plan order: the context later steps work from.
    context: tuple[dict[str, Any], ...] = ()
    awaiting_output: bool = False  # every step is done; the plan output is not written yet
    output: str | None = None  # the plan output, as written to the workspace
    next_id: int = Field(default=1, ge=1)
    replan: ReplanOffer | None = None  # an offer to replan the rest, until accepted or dismissed
    completions: StepCompletions | None = None  # choices for a step's text, until one is picked


def _steps_from(spec: Any, first_id: int) -> tuple[tuple[PlanStep, ...], int]:
    """Steps from what a member sent (``[{"description", "assignee"}]`` or ``["text"]``)."""
    if not isinstance(spec, list) or not spec:
        raise ActionError("A plan is a non-empty list of steps, each "
                          '{"description": "...", "assignee": "agent" or "person"}.')
    if len(spec) > MAX_STEPS:
        raise ActionError(f"A plan has at most {MAX_STEPS} steps, not {len(spec)}.")
    steps, next_id = [], first_id
    for raw in spec:
        description, assignee = (raw, "agent") if isinstance(raw, str) else (
            (raw.get("description"), raw.get("assignee", "agent")) if isinstance(raw, dict)
            else (None, None))
        steps.append(PlanStep(id=f"s{next_id}", description=_description(description),
                              assignee=_side(assignee)))
        next_id += 1
    return tuple(steps), next_id


def _description(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ActionError("A step needs a description: what the step does, in words.")
    return text.strip()


def _side(assignee: Any) -> Side:
    if assignee not in SIDES:
        raise ActionError(f"A step is assigned to 'agent' or 'person', not {assignee!r}.")
    return "agent" if assignee == "agent" else "person"


def _items(items: Any) -> tuple[dict[str, Any], ...]:
    if items is None:
        return ()
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ActionError('A step\'s items are a list of objects, e.g. [{"id": "...", '
                          '"title": "..."}].')
    return tuple(dict(item) for item in items)


def below(existing: str, output: str) -> str:
    """``output`` put below ``existing`` (a task's editor text), which keeps every word of it:
    how the tasks write a finished plan's output into their workspace."""
    return f"{existing.rstrip()}\n\n{output}" if existing.strip() else output


class PlanBoard:
    """The plan of one session, changed only through its acts (one method each).

    Each act takes the acting role and its side, checks everything first, and either raises
    :class:`ActionError` with the reason or changes the state: an act that fails changes
    nothing.
    """

    def __init__(self, request: str, guidance: str = "") -> None:
        self.state = PlanState(request=request, guidance=guidance)
        #: Each step text that was edited from an older version ("s2/description",
        #: "s2/output"): its CRDT document, which merges such edits (core.shared_text).
        self._texts: dict[str, SharedText] = {}
        self._text_versions = 0  # numbers the documents' versions, the same on every replay
        self._last_author: dict[str, str | None] = {}  # who wrote each step text last
        #: Where the last merge of a step text kept two versions (whose, and which lines).
        self.last_overlap: tuple[tuple[str, ...], tuple[Overlap, ...]] | None = None

    # -- reading -----------------------------------------------------------------------------

    @property
    def steps(self) -> tuple[PlanStep, ...]:
        return self.state.plan.steps if self.state.plan else ()

    def step(self, step_id: str) -> PlanStep:
        for step in self.steps:
            if step.id == step_id:
                return step
        if self.state.plan is None:
            raise ActionError("There is no plan yet: propose plans, then select one.")
        known = ", ".join(step.id for step in self.steps) or "none"
        raise ActionError(f"No step {step_id!r} in the plan; its steps are {known}.")

    def index(self, step_id: str) -> int:
        return [step.id for step in self.steps].index(self.step(step_id).id)

    def content(self) -> dict[str, Any]:
        """The plan as the ``plan`` component shows it (plain JSON)."""
        return self.state.model_dump(mode="json")

    # -- co-planning -------------------------------------------------------------------------

    def propose(self, plans: Any) -> None:
        """Offer one to three alternative plans; a later proposal replaces an earlier one."""
        if not isinstance(plans, list) or not 1 <= len(plans) <= MAX_PROPOSALS:
            raise ActionError(f"Propose 1 to {MAX_PROPOSALS} plans, each "
                              '{"title": "...", "steps": [...]}.')
        proposals, next_id = [], self.state.next_id
        for raw in plans:
            if not isinstance(raw, dict):
                raise ActionError('Each proposed plan is {"title": "...", "steps": [...]}.')
            steps, next_id = _steps_from(raw.get("steps"), next_id)
            title = raw.get("title")
            proposals.append(Plan(title=title.strip() if isinstance(title, str) else "",
                                  steps=steps))
        self._set(proposals=tuple(proposals), next_id=next_id)

    def select(self, index: int) -> None:
        """Make proposal ``index`` (from 0) the plan; the proposals are cleared."""
        proposals = self.state.proposals
        if not proposals:
            raise ActionError("No plans were proposed to select from.")
        if not 0 <= index < len(proposals):
            raise ActionError(f"Select a plan from 0 to {len(proposals) - 1}, not {index}.")
        # Numbered afresh: the ids of the plan's life match the positions people see at first.
        chosen = proposals[index]
        steps = tuple(step.model_copy(update={"id": f"s{n}"})
                      for n, step in enumerate(chosen.steps, 1))
        self._set(plan=chosen.model_copy(update={"steps": steps}), proposals=(),
                  continuous=False, pause_after=None, context=(), awaiting_output=False,
                  output=None, next_id=len(steps) + 1, replan=None, completions=None)
        self._texts.clear()  # a new plan: its step ids name other steps
        self._last_author.clear()

    def add_step(self, description: Any, assignee: Any, after: str | None) -> PlanStep:
        """A new step below ``after`` (at the top for ``""``, at the end for ``None``). With no
        plan yet, the step starts a plan of its own (a person writes the plan themselves), and
        any proposals not picked are set aside, as selecting a plan does."""
        if self.state.plan is None:
            return self._start_plan(description, assignee)
        if len(self.steps) >= MAX_STEPS:
            raise ActionError(f"A plan has at most {MAX_STEPS} steps.")
        step = PlanStep(id=f"s{self.state.next_id}", description=_description(description),
                        assignee=_side(assignee))
        steps = list(self.steps)
        position = len(steps) if after is None else 0 if after == "" else self.index(after) + 1
        steps.insert(position, step)
        self._set_steps(steps, next_id=self.state.next_id + 1)
        self._stale_from(position + 1)  # later steps no longer follow from what came before
        return step

    def _start_plan(self, description: Any, assignee: Any) -> PlanStep:
        """A plan whose first step is this one, written by hand rather than proposed."""
        step = PlanStep(id="s1", description=_description(description), assignee=_side(assignee))
        self._set(plan=Plan(title="", steps=(step,)), proposals=(), continuous=False,
                  pause_after=None, context=(), awaiting_output=False, output=None, next_id=2,
                  replan=None, completions=None)
        self._texts.clear()
        self._last_author.clear()
        return step

    def edit_step(self, step_id: str, description: Any, base: str | None = None,
                  author: str | None = None) -> None:
        """Rewrite a step's description; an edit made from an older ``base`` is merged with
        the edits made since, so neither is lost. A completed step becomes stale."""
        step = self.step(step_id)
        text = self._merged(f"{step_id}/description", step.description,
                            _description(description), base, author)
        self._replace(step_id, description=text, undo=None)
        self._stale_if_run(step_id)

    def suggest_step(self, step_id: str, description: Any) -> None:
        """An LM's suggestion replaces the description, and the old one is kept for undo."""
        step = self.step(step_id)
        self._replace(step_id, description=_description(description),
                      undo=step.undo if step.undo is not None else step.description)
        self._stale_if_run(step_id)

    def undo_suggestion(self, step_id: str) -> None:
        step = self.step(step_id)
        if step.undo is None:
            raise ActionError(f"Step {step_id} has no suggestion to undo.")
        self._replace(step_id, description=step.undo, undo=None)
        self._stale_if_run(step_id)

    def offer_replan(self, after: str, reason: Any, choices: Any) -> None:
        """Offer to replace the steps after ``after`` with one of ``choices`` (each a list of
        steps, as a proposal's); a later offer replaces an earlier one."""
        position = self.index(after)
        if not isinstance(choices, list) or not 1 <= len(choices) <= MAX_PROPOSALS:
            raise ActionError(f"Offer 1 to {MAX_PROPOSALS} choices, each a list of steps.")
        room = MAX_STEPS - position - 1
        rests, next_id = [], self.state.next_id
        for raw in choices:
            steps, next_id = _steps_from(raw, next_id)
            if len(steps) > room:
                raise ActionError(f"After step {after} the plan has room for {room} steps.")
            rests.append(steps)
        self._later_not_in_progress(position)
        self._set(replan=ReplanOffer(after=after, reason=reason.strip() if isinstance(
            reason, str) else "", choices=tuple(rests), replaces=self._rest_after(position)),
            next_id=next_id)

    def accept_replan(self, choice: int) -> None:
        """Replace the steps after the offer's step with choice ``choice`` (from 0); the step
        itself and every step before it stay whole."""
        offer = self.state.replan
        if offer is None:
            raise ActionError("There is no replanning offer to accept.")
        if not 0 <= choice < len(offer.choices):
            raise ActionError(f"Pick a choice from 0 to {len(offer.choices) - 1}, not {choice}.")
        position = self.index(offer.after)
        # A step the offer would replace that was edited, added, moved or deleted since (a
        # teammate's edit crossing the offer) would be dropped unseen: refused instead, so
        # nothing is lost; the person dismisses the offer and the agent judges the plan anew.
        if self._rest_after(position) != offer.replaces:
            raise ActionError(f"The steps after {offer.after} changed since this replanning "
                              "offer was made, so accepting it would drop those changes: "
                              "dismiss it (DISMISS_REPLAN) and keep the plan as it is now.")
        self._later_not_in_progress(position)
        kept = list(self.steps[:position + 1])
        dropped = {s.id for s in self.steps[position + 1:]}
        # The new steps have not run, so the plan waits for them before its output.
        self._set_steps(kept + list(offer.choices[choice]), replan=None, awaiting_output=False)
        self._set(context=tuple(c for c in self.state.context if c["step"] not in dropped),
                  pause_after=None if self.state.pause_after in dropped
                  else self.state.pause_after,
                  completions=None if self.state.completions and
                  self.state.completions.step in dropped else self.state.completions)

    def dismiss_replan(self) -> None:
        if self.state.replan is None:
            raise ActionError("There is no replanning offer to dismiss.")
        self._set(replan=None)

    def offer_completions(self, step_id: str, choices: Any) -> None:
        """Offer two or three short texts for a step; picking one makes it the step's text."""
        self.step(step_id)
        if not isinstance(choices, list) or not 2 <= len(choices) <= MAX_COMPLETIONS:
            raise ActionError(f"Offer 2 to {MAX_COMPLETIONS} completions, each a short text.")
        texts = tuple(_description(choice) for choice in choices)
        self._set(completions=StepCompletions(step=step_id, choices=texts))

    def pick_completion(self, step_id: str, choice: int) -> None:
        """Make completion ``choice`` (from 0) the step's text; the old text is kept for undo,
        as a suggestion's is."""
        offered = self.state.completions
        if offered is None or offered.step != step_id:
            raise ActionError(f"No completions are offered for step {step_id}.")
        if not 0 <= choice < len(offered.choices):
            raise ActionError(f"Pick a completion from 0 to {len(offered.choices) - 1}.")
        self.suggest_step(step_id, offered.choices[choice])
        self._set(completions=None)

    def dismiss_completions(self) -> None:
        self._set(completions=None)

    def delete_step(self, step_id: str) -> None:
        self._not_running(step_id, "deleted")
        position = self.index(step_id)
        self._set_steps([s for s in self.steps if s.id != step_id])
        self._set(context=tuple(c for c in self.state.context if c["step"] != step_id),
                  pause_after=None if self.state.pause_after == step_id
                  else self.state.pause_after)
        self._forget_offers(step_id)
        self._stale_from(position)

    def move_step(self, step_id: str, position: int) -> None:
        """Move a step to ``position`` (from 0); what it moved past no longer follows from it."""
        self._not_running(step_id, "moved")
        steps = list(self.steps)
        if not 0 <= position < len(steps):
            raise ActionError(f"Move a step to a position from 0 to {len(steps) - 1}.")
        old = self.index(step_id)
        steps.insert(position, steps.pop(old))
        self._set_steps(steps)
        self._stale_from(min(old, position))

    def assign_step(self, step_id: str, assignee: Any) -> None:
        """Give a step to the agent or the person side. A step waiting for its side is handed
        over as it stands: a running agent step given to the person needs their input."""
        step = self.step(step_id)
        side = _side(assignee)
        status = step.status
        if status in ("running", "needs_input"):
            status = "running" if side == "agent" else "needs_input"
        self._replace(step_id, assignee=side, status=status)

    # -- co-execution ------------------------------------------------------------------------

    def run_step(self, step_id: str) -> PlanStep:
        """Run one step (stepwise). Every earlier step must be done: never out of order. A
        completed step runs again, and the later completed steps become stale."""
        self._startable(step_id)
        self._set(continuous=False)
        return self._start(step_id)

    def run_all(self) -> PlanStep:
        """Run the plan from its first step, continuously."""
        if not self.steps:
            raise ActionError("There is no plan to run: propose plans, then select one.")
        self._no_step_in_progress()
        self._set(continuous=True)
        return self._start(self.steps[0].id)

    def run_remaining(self) -> PlanStep:
        """Run continuously from the first step that is not done."""
        self._no_step_in_progress()
        remaining = next((s for s in self.steps if s.status != "done"), None)
        if remaining is None:
            raise ActionError("Every step is done: run a step again, or run all.")
        self._set(continuous=True)
        return self._start(remaining.id)

    def pause_after(self, step_id: str) -> None:
        """Stop continuous running once ``step_id`` is done."""
        self.step(step_id)
        self._set(pause_after=step_id)

    def complete(self, step_id: str, side: Side, role: str, text: Any, items: Any) -> None:
        """``role`` (of ``side``) completes a step that waits for its side: a running agent
        step, a person step that needs input, or any failed step. Continuous mode then starts
        the next step."""
        step = self.step(step_id)
        waiting = (step.status == "running" and step.assignee == side) or (
            step.status == "needs_input" and step.assignee == side) or step.status == "failed"
        if not waiting:
            raise ActionError(f"Step {step_id} is {step.status.replace('_', ' ')} and "
                              f"assigned to the {step.assignee}: it does not wait for the "
                              f"{side} to complete it.")
        found = step.output if step.output is not None and step.output.pending else None
        output = StepOutput(
            items=_items(items) if items is not None or found is None else found.items,
            text=text if isinstance(text, str) else "",
            searches=found.searches if found is not None else ())
        self._replace(step_id, status="done", output=output, runs=step.runs + 1,
                      completed_by=role)
        self._record(step_id, output)
        self._advance(step_id)

    def check_search(self, step_id: str, side: Side) -> None:
        """Refuse a search from ``step_id`` unless it is a person step waiting for the person
        (or a failed step, which is the person's to complete) and ``side`` is the person's."""
        step = self.step(step_id)
        waiting = (step.assignee == "person" and step.status == "needs_input") \
            or step.status == "failed"
        if side != "person" or not waiting:
            raise ActionError(f"A search goes into a step that waits for the person: step "
                              f"{step_id} is {step.status.replace('_', ' ')} and assigned to "
                              f"the {step.assignee}" + ("" if side == "person" else
                                                        ", and only the person side searches "
                                                        "from its steps") + ".")

    def record_search(self, step_id: str, query: str, items: Any) -> None:
        """Put a search's results (checked by :meth:`check_search`) in the waiting step's
        output, after the results of its earlier searches in this run (an item already there,
        by id, is not repeated). The step keeps waiting; completing it keeps them."""
        step = self.step(step_id)
        found = step.output if step.output is not None and step.output.pending else \
            StepOutput(pending=True)
        known = {item.get("id") for item in found.items if item.get("id") is not None}
        new = [item for item in _items(items) if item.get("id") is None
               or item.get("id") not in known]
        self._replace(step_id, output=found.model_copy(update={
            "items": found.items + tuple(new), "searches": (*found.searches, query)}))

    def fail(self, step_id: str, reason: Any) -> None:
        """The agent could not complete its running step: the person is asked to instead."""
        step = self.step(step_id)
        if step.status != "running":
            raise ActionError(f"Step {step_id} is not running.")
        note = reason if isinstance(reason, str) and reason.strip() else "no output"
        self._replace(step_id, status="failed", output=StepOutput(text=f"Failed: {note}"))
        self._set(continuous=False)

    def edit_output(self, step_id: str, text: Any, items: Any, base: str | None = None,
                    author: str | None = None) -> None:
        """The person curates a completed step's output (adds or removes items, edits text;
        a text edited from an older ``base`` is merged with the edits made since). The steps
        after it that were done worked from the old output: they become stale."""
        step = self.step(step_id)
        if step.status != "done" or step.output is None:
            raise ActionError(f"Step {step_id} has no output to edit yet.")
        new_text = step.output.text if not isinstance(text, str) else self._merged(
            f"{step_id}/output", step.output.text, text, base, author)
        output = StepOutput(
            items=_items(items) if items is not None else step.output.items,
            text=new_text, edited=True)
        self._replace(step_id, output=output)
        self._record(step_id, output)
        self._stale_from(self.index(step_id) + 1)

    def check_output(self, text: Any) -> str:
        """``text`` as the plan output, if the plan may take one now (every step is done)."""
        if not self.state.awaiting_output and self.state.output is None:
            raise ActionError("The plan output comes once every step is done.")
        if not isinstance(text, str) or not text.strip():
            raise ActionError("The plan output is a non-empty text.")
        return text

    def write_output(self, text: Any) -> None:
        """Keep the plan output (checked by :meth:`check_output`)."""
        self._set(output=self.check_output(text), awaiting_output=False)

    # -- the rules ---------------------------------------------------------------------------

    def _merged(self, key: str, current: str, sent: str, base: str | None,
                author: str | None) -> str:
        """``sent``, made from ``base`` (``None``: from ``current``), merged on the text's
        document with what changed since; :attr:`last_overlap` says where versions were kept."""
        self.last_overlap = None
        earlier, self._last_author[key] = self._last_author.get(key), author
        if base is None or base == current:
            return sent
        shared = self._texts.get(key)
        if shared is None:
            shared = self._texts[key] = SharedText(base, seq=self._next_version())
        shared.follow(current, seq=self._next_version(), author=earlier)
        version = shared.version_of(base)
        if version is None:  # a base the document never held: merge the three texts
            merged = merge(base, current, sent)
            shared.follow(merged.text, seq=self._next_version(), author=author)
            if merged.overlaps:
                self.last_overlap = (("a teammate",), merged.overlaps)
            return merged.text
        seq = self._next_version()
        edit = shared.replacement(sent, seq=seq, author=author, base=version)
        shared.commit(edit, seq=seq, author=author)
        if edit.overlaps:
            self.last_overlap = (edit.authors, edit.overlaps)
        return edit.text

    def _start(self, step_id: str) -> PlanStep:
        position = self.index(step_id)
        self._stale_from(position + 1)  # a rerun: what followed from it must run again
        step = self.step(step_id)
        self._replace(step_id, status="running" if step.assignee == "agent" else "needs_input")
        self._set(awaiting_output=False)
        return self.step(step_id)

    def _advance(self, done_id: str) -> None:
        """After a step completes: continuous mode starts the next one that is not done; the
        plan waits for its output once every step is done."""
        if all(step.status == "done" for step in self.steps):
            self._set(continuous=False, awaiting_output=True)
            return
        if not self.state.continuous:
            return
        if self.state.pause_after == done_id:
            self._set(continuous=False, pause_after=None)
            return
        after = self.index(done_id) + 1
        following = next((s for s in self.steps[after:] if s.status != "done"), None)
        if following is None or any(s.status != "done" for s in self.steps[:after]):
            self._set(continuous=False)  # an earlier step was made stale meanwhile
            return
        self._start(following.id)

    def _startable(self, step_id: str) -> None:
        position = self.index(step_id)
        self._no_step_in_progress(except_id=step_id)
        waiting = [s.id for s in self.steps[:position] if s.status != "done"]
        if waiting:
            raise ActionError(f"Steps run in order: {', '.join(waiting)} must be done before "
                              f"{step_id} runs.")

    def _no_step_in_progress(self, except_id: str | None = None) -> None:
        busy = [s.id for s in self.steps
                if s.status in ("running", "needs_input") and s.id != except_id]
        if busy:
            raise ActionError(f"Step {busy[0]} is in progress; complete it first (or pause).")

    def _not_running(self, step_id: str, what: str) -> None:
        if self.step(step_id).status == "running":
            raise ActionError(f"Step {step_id} is running and cannot be {what} now.")

    def _later_not_in_progress(self, position: int) -> None:
        busy = [s.id for s in self.steps[position + 1:] if s.status in ("running", "needs_input")]
        if busy:
            raise ActionError(f"Step {busy[0]} is in progress; the steps after it cannot be "
                              "replanned now.")

    def _rest_after(self, position: int) -> tuple[tuple[str, str], ...]:
        """The ids and texts of the steps after ``position``: what a replanning replaces."""
        return tuple((s.id, s.description) for s in self.steps[position + 1:])

    def _forget_offers(self, step_id: str) -> None:
        """Offers about a step that is gone go with it."""
        if self.state.replan is not None and self.state.replan.after == step_id:
            self._set(replan=None)
        if self.state.completions is not None and self.state.completions.step == step_id:
            self._set(completions=None)

    def _next_version(self) -> int:
        self._text_versions += 1
        return self._text_versions

    def _stale_from(self, position: int) -> None:
        steps = [s.model_copy(update={"status": "stale"}) if i >= position and s.status == "done"
                 else s for i, s in enumerate(self.steps)]
        if steps != list(self.steps):
            self._set_steps(steps)
            self._set(awaiting_output=False)

    def _stale_if_run(self, step_id: str) -> None:
        position = self.index(step_id)
        if self.steps[position].status == "done":
            self._stale_from(position)

    def _record(self, step_id: str, output: StepOutput) -> None:
        """Put ``output`` in the context pool, in plan order, replacing the step's older one."""
        entries = {c["step"]: c for c in self.state.context}
        entries[step_id] = {"step": step_id, "description": self.step(step_id).description,
                            "items": [dict(i) for i in output.items], "text": output.text}
        order = [s.id for s in self.steps]
        self._set(context=tuple(entries[i] for i in order if i in entries))

    def _replace(self, step_id: str, **changes: Any) -> None:
        self._set_steps([s.model_copy(update=changes) if s.id == step_id else s
                         for s in self.steps])

    def _set_steps(self, steps: list[PlanStep], **changes: Any) -> None:
        assert self.state.plan is not None
        self._set(plan=self.state.plan.model_copy(update={"steps": tuple(steps)}), **changes)

    def _set(self, **changes: Any) -> None:
        self.state = self.state.model_copy(update=changes)


__all__ = ["MAX_COMPLETIONS", "MAX_PROPOSALS", "MAX_STEPS", "SIDES", "Plan", "PlanBoard",
           "PlanState", "PlanStep", "ReplanOffer", "Side", "StepCompletions", "StepOutput",
           "StepStatus", "below"]
