"""CoEnv: a task environment that several roles act on at once.

Like Gymnasium's ``Env``, a CoEnv is pure Python with no I/O to the bus. Unlike it, ``step`` takes
the acting ``role`` and reports whether the change was ``private`` to that role, which is what the
notification protocol needs. Task actions are methods marked with :func:`action`::

    class Board(CoEnv):
        name = "board"

        @action("Write a note on the shared board.", text="What to write")
        def write(self, role: str, text: str) -> None:
            self.notes.append(text)

A handler raises :class:`ActionError` *before* changing anything when the action cannot be taken,
so an invalid action always leaves the state unchanged.
"""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import inspect
import typing
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from cogym_lab.core.actions import (
    Action,
    ActionError,
    ActionSpec,
    ItemPick,
    ParamSpec,
    ParamType,
)
from cogym_lab.core.grammar import RawAction, expected_forms, format_action, parse_action
from cogym_lab.core.hidden_facts import HiddenFacts
from cogym_lab.core.messages import TeamMember
from cogym_lab.core.observation import Component, Observation
from cogym_lab.core.progress import ProgressListener
from cogym_lab.core.protocol import DEFAULT_PROTOCOL
from cogym_lab.core.render_shapes import ContentShape

#: One session as :meth:`CoEnv.summarise_scores` sees it: env arguments, delivered, scores.
SessionScores = tuple[dict[str, Any], bool, dict[str, float]]


class ScoreReport(BaseModel):
    """One score of a graded session, in plain words for the people who worked on it: what the
    score measures and why it came out as it did.

    A task builds these from what its grader found (:meth:`CoEnv.explain_scores`); sessions keep
    them in ``session.json`` beside ``scores`` and the panel shows them when the session ends.
    Plain words means no action syntax and no grader internals: "The plan stays within the
    $1,900 budget.", not "valid_cost=1.0".
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="The score's key in the session's scores, e.g. 'performance'.")
    value: float = Field(description="The score, as the grader gave it.")
    label: str = Field(description="What the score measures, in a few plain words.")
    reasons: list[str] = Field(default_factory=list,
                               description="Why it came out so: short sentences, one finding "
                                           "each, most telling first.")

_JSON_TYPES: dict[object, ParamType] = {str: "string", int: "integer", float: "number",
                                         bool: "boolean", list: "array", dict: "object"}

#: The attribute :func:`action` sets on a handler: an :class:`_ActionMark`.
_MARK = "__cogym_action__"


class _ActionMark(typing.NamedTuple):
    """What :func:`action` was told about one handler."""

    name: str
    description: str
    private: bool
    internal: bool
    param_descriptions: dict[str, str]
    replaces: str | None
    picks: ItemPick | None
    searches: str | None


@dataclass(frozen=True)
class Deferred:
    """Slow work an action starts (an LM call) whose result is another action.

    The env stays pure: a handler returns ``ActionOutcome(deferred=Deferred(...))`` instead of
    waiting. The EnvNode awaits ``work()`` outside the coordinator and then applies the action it
    returns (``EDITOR_UPDATE(text=...)``, say) as the same member. That follow-up is what the
    event log records, so replay needs no LM. A caller using ``CoEnv.step`` directly does the
    same: ``env.step(role, await result.deferred.work())``.
    """

    work: Callable[[], Awaitable[Any]]  # returns the follow-up action (string or {name, args})
    label: str = ""


@dataclass(frozen=True)
class StepResult:
    """What ``CoEnv.step`` returns: the actor's new view and what the change means."""

    observation: Observation
    reward: float = 0.0
    done: bool = False
    private: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    deferred: Deferred | None = None  # slow work this action started; see Deferred

    @property
    def error(self) -> str | None:
        """The error message when the action was refused; the state is then unchanged."""
        return self.info.get("error")


#: The shortest tick a clocked env may ask for: a faster clock would leave the event loop that
#: hosts it (a Jupyter server's, shared by every session) no time for anything else.
MIN_TICK_SECONDS = 0.01


@dataclass(frozen=True)
class TickResult:
    """What one tick of a clocked env's world did (:meth:`CoEnv.advance`).

    ``info`` goes into the tick's ``clock`` event in the log, so it must be small and plain JSON:
    it is what the metrics read (orders served or missed, who did what this tick).
    """

    reward: float = 0.0
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ActionOutcome:
    """Optional return value of an action handler."""

    reward: float = 0.0
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    deferred: Deferred | None = None


def action(description: str, /, *, private: bool = False, internal: bool = False,
           name: str | None = None, replaces: str | None = None, picks: ItemPick | None = None,
           searches: str | None = None, **param_descriptions: str,
           ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a method ``(self, role, **params)`` as a task action.

    The action's name is the method name in upper case; param types come from the annotations and
    params with defaults are optional. ``private=True`` means the action changes only the actor's
    private components, so only the actor is notified. ``internal=True`` marks an action that
    only the result of :class:`Deferred` work may apply (recording a cell's outputs, say): it is
    not offered to members, and a member who sends it is refused. ``replaces="editor"`` says the
    action's ``text`` param replaces that component's whole text: the coordinator then merges an
    edit made on a stale copy with the edits made meanwhile (see ``core.shared_texts``).
    ``picks=ItemPick(component="search", label="Add to library")`` offers the action as a
    button on each item of that component, which sends the item's id as the first param.
    ``searches="search"`` says the action fills that component with its results: the panel
    shows a search box for it next to the component (one field per param, Enter searches).
    """

    def mark(method: Callable[..., Any]) -> Callable[..., Any]:
        setattr(method, _MARK, _ActionMark(name or method.__name__.upper(), description, private,
                                           internal, param_descriptions, replaces, picks,
                                           searches))
        return method

    return mark


def _spec_from_method(method: Callable[..., Any]) -> ActionSpec:
    mark = getattr(method, _MARK)
    assert isinstance(mark, _ActionMark)  # only action() sets it
    name, description, private, internal, param_descriptions, replaces, picks, searches = mark
    hints = typing.get_type_hints(method)
    params = []
    for parameter in list(inspect.signature(method).parameters.values())[2:]:  # self, role
        hint = typing.get_origin(hints.get(parameter.name)) or hints.get(parameter.name)
        optional = parameter.default is not inspect.Parameter.empty
        params.append(ParamSpec(
            name=parameter.name,
            type=_JSON_TYPES.get(hint, "any"),
            description=param_descriptions.get(parameter.name, ""),
            required=not optional,
            default=parameter.default if optional else None,
        ))
    if replaces is not None and next((p for p in params if p.name == "text"), None) is None:
        raise TypeError(f"{name}: an action that replaces {replaces!r} needs a 'text' param")
    if picks is not None and not params:
        raise TypeError(f"{name}: an action that picks items of {picks.component!r} needs a "
                        "param for the item's id")
    if searches is not None and not params:
        raise TypeError(f"{name}: an action that searches into {searches!r} needs a param for "
                        "what to look for")
    return ActionSpec(name=name, description=description, params=tuple(params), private=private,
                      internal=internal, replaces=replaces, picks=picks, searches=searches)


def is_non_empty(outcome: Any) -> bool:
    """Whether ``outcome`` holds anything: ``None``, ``""``, ``[]`` and ``{}`` do not."""
    return outcome is not None and outcome != "" and outcome != [] and outcome != {}


class CoEnv(abc.ABC):
    """Base class of every task environment.

    Subclasses set :attr:`name`, implement :meth:`_reset`, :meth:`public_components` and
    :attr:`task_description`, mark their actions with :func:`action`, and may override
    :meth:`private_components`, :meth:`outcome` and :meth:`evaluate`.

    :attr:`protocol` names the scoring protocol (``cogym_lab.core.protocol``) that ``evaluate``
    and :meth:`delivered` follow; a task whose scores or instance set differ between protocols
    takes it as a constructor argument.
    """

    name: ClassVar[str] = "env"
    protocol: str = DEFAULT_PROTOCOL
    #: The team a session of this task gets when none is named (a ready team's name).
    default_team: ClassVar[str] = "collaborative"
    #: Whether the task runs in a person's notebook: its kernel and live document, which the
    #: host links and passes as the ``notebook`` constructor argument.
    runs_in_notebook: ClassVar[bool] = False
    #: How a step of an interactive plan maps onto this task's actions, in a sentence or two
    #: for the plan-aware agent ("search papers, add the good ones to the library, then
    #: draft"). Empty: the agent works a step out from the actions alone.
    plan_step_guidance: ClassVar[str] = ""
    #: About how many minutes a person spends on one session of the task, for study plans.
    typical_minutes: ClassVar[float] = 15.0

    @classmethod
    def session_minutes(cls, env_args: dict[str, Any]) -> float:
        """About how long one session with ``env_args`` takes a person (a clocked task says
        from its clock; others give :attr:`typical_minutes`)."""
        return cls.typical_minutes
    #: ``package.module:command``: a click command that grades a file of this task's outcomes
    #: (``cogym-lab grade TASK ...``), or ``None`` when the task has no batch grader.
    grade_command: ClassVar[str | None] = None
    #: The files of ``prompts/`` in the task's package that its LM judge reads: part of the
    #: grader's version that ``session.json`` and ``run.json`` record (docs/evaluation-runs.md,
    #: "Provenance"). Empty: the grader asks no LM, or its prompts are in its code.
    judge_prompts: ClassVar[tuple[str, ...]] = ()
    #: ``package.module:command`` for each click command the task adds to ``cogym-lab data``
    #: (e.g. one that builds its data from public dumps), named after the command.
    data_commands: ClassVar[tuple[str, ...]] = ()
    #: The content of this task's own render types (a view of its own in the panel), by render
    #: type; ``check_env`` checks components of those types against them, as it does the
    #: built-in ones (:data:`~cogym_lab.core.render_shapes.CONTENT_SHAPES`).
    content_shapes: ClassVar[Mapping[str, ContentShape]] = {}
    _handlers: ClassVar[dict[str, tuple[ActionSpec, str]]] = {}
    #: Every action's spec by name, internal ones included: what actions are parsed against.
    _specs: ClassVar[dict[str, ActionSpec]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        handlers: dict[str, tuple[ActionSpec, str]] = {}
        for base in reversed(cls.__mro__[1:]):  # every base's actions: a mixin's too
            handlers.update(vars(base).get("_handlers", {}))
        for attribute, member in vars(cls).items():
            if hasattr(member, _MARK) and hasattr(CoEnv, attribute):
                # A handler called ``prepare`` hides CoEnv.prepare, and sessions call that.
                raise TypeError(f"{cls.__name__}.{attribute} is an action but hides "
                                f"CoEnv.{attribute}; give the method another name and the "
                                f"action its name with @action(..., name=...).")
            if hasattr(member, _MARK):
                spec = _spec_from_method(member)
                handlers[spec.name] = (spec, attribute)
        cls._handlers = handlers
        cls._specs = {name: spec for name, (spec, _) in handlers.items()}

    def __init__(self, *, roles: Sequence[str] | None = None) -> None:
        #: Roles allowed to act; ``None`` admits any role the session brings.
        self.roles: tuple[str, ...] | None = tuple(roles) if roles is not None else None
        #: The session's team (who is an agent, who a person), once :meth:`bind_team` told it.
        self.team: tuple[TeamMember, ...] = ()
        self._is_reset = False

    # -- the clock (real-time tasks only) ----------------------------------------------------

    @property
    def tick_seconds(self) -> float | None:
        """Seconds between two ticks of a clocked env's world, or ``None`` (the default) for a
        task whose world changes only when someone acts.

        A clocked env's EnvNode calls :meth:`advance` on this period whether or not anyone
        acts; it may not be shorter than :data:`MIN_TICK_SECONDS`. Its actions should only
        *queue* what a member wants; the world changes at the next tick, where simultaneous
        wishes are resolved in a fixed order.
        """
        return None

    def advance(self) -> TickResult:
        """Move a clocked env's world on by one tick (see :attr:`tick_seconds`). A clocked env
        overrides it (:func:`~cogym_lab.core.check_env.check_env` says so when one does not);
        by default nothing moves by itself, as in a task without a clock."""
        return TickResult()

    def starts_play(self, action: Action) -> bool:
        """Whether ``action``, one of this task's own actions, is playing the task: a clocked
        task's clock that waits for a person starts at the person's first action that plays
        (or the explicit start, a ``WAIT_TEAMMATE_CONTINUE``; chat never does). By default
        every task action plays; a task with actions that only prepare the play (the plan
        actions of :class:`~cogym_lab.core.plan_env.Planning`) says which do not."""
        return True

    # -- what subclasses provide -------------------------------------------------------------

    @property
    @abc.abstractmethod
    def task_description(self) -> str:
        """The instruction every member starts from."""

    @abc.abstractmethod
    def _reset(self, seed: int | None) -> None:
        """Put the workspace in its initial state."""

    @abc.abstractmethod
    def public_components(self) -> list[Component]:
        """Components every member sees."""

    def private_components(self, role: str) -> list[Component]:
        """Components only ``role`` sees (its search window, say)."""
        return []

    def outcome(self) -> Any:
        """The deliverable as it stands. Empty or ``None`` means nothing was delivered."""
        return None

    def delivered(self) -> bool:
        """Whether the outcome as it stands counts as delivered: the task's part of the rule
        (the session adds the protocol's rule about how the session ended). By default, a
        non-empty outcome."""
        return is_non_empty(self.outcome())

    def evaluate(self) -> dict[str, float]:
        """Task scores for the current outcome, each in [0, 1]. Empty if the task has no grader."""
        return {}

    async def aevaluate(self) -> dict[str, float]:
        """``evaluate`` for graders that need I/O (an LM judge). Sessions call this one. By
        default it runs ``evaluate`` in a worker thread: a grader may be slow, and the event
        loop serves other sessions meanwhile."""
        return await asyncio.to_thread(self.evaluate)

    def explain_scores(self, scores: dict[str, float]) -> list[ScoreReport]:
        """The ``scores`` that ``aevaluate`` (or ``evaluate``) just gave, explained for the
        person: one :class:`ScoreReport` for each score worth reading, with the grader's reasons.

        Sessions call it right after grading, on the same env, so a task may explain from what
        its grader kept during that call (an LM judge's stated reason) instead of grading again.
        Scores left without a report are shown by value only. None by default."""
        return []

    def env_args(self) -> dict[str, Any]:
        """Keyword arguments that rebuild this env from its registry name (for replay)."""
        return {}

    def needs_confirmation(self, role: str, action: Action) -> bool:
        """Whether an agent's ``action`` must be approved by a teammate before it runs (a task
        set to ask first). The coordinator then turns it into a confirmation request."""
        return False

    def put_plan_output(self, role: str, text: str) -> None:  # noqa: B027 - optional hook
        """Write a finished interactive plan's output into the workspace (the editor, the
        findings), for a task made with plans (``docs/plans.md``); raise :class:`ActionError`
        to refuse it. By default the output stays in the plan."""

    def plan_items(self, items: Any) -> Any:
        """A plan step's output items as a member gave them (``COMPLETE_STEP``,
        ``EDIT_STEP_OUTPUT``), filled in from the task's records: a task whose items name
        records by id (papers) adds the fields the member left out, so the panel's cards show
        them. Called live and on replay alike: it must give the same items each time, and
        change nothing but the items. Unchanged by default."""
        return items

    def work_failed(self, role: str) -> None:  # noqa: B027 - optional hook
        """The :class:`Deferred` work that ``role``'s action started failed: release what the
        action held for it (a cell marked as running), so ``role`` can try again. Called when
        the failure is applied, live and again on replay, so it must change the state the same
        way each time and raise nothing. Nothing to release by default."""

    def observed_steps(self) -> AsyncIterator[tuple[str, RawAction]] | None:
        """Steps the env sees members take outside the session (a person running a cell in
        their own kernel), as ``(role, action)``; the EnvNode records each through
        ``Coordinator.apply_observed``. ``None`` when the task observes nothing."""
        return None

    def prepare(self, progress: ProgressListener) -> None:  # noqa: B027 - optional hook
        """Slow set-up before the first step: loading a dataset, building or opening an index.

        Sessions call it once, in a worker thread (never on the event loop, which serves every
        other session and request meanwhile), before the env is reset and any member acts.
        Report how far it got with ``progress``, through a
        :class:`~cogym_lab.core.progress.ProgressMeter` made with it as the listener; a
        panel shows that as a progress bar with the time left. Nothing to do by default."""

    def hidden_information(self) -> str:
        """What only the human side knows (preferences, constraints). Never shown to agents;
        a simulated user is given it."""
        return ""

    def hidden_facts(self) -> HiddenFacts:
        """The hidden information's checkable facts (amounts, counts, things the person insists
        on), for the simulated-user audit to hold the user's messages to; none by default."""
        return HiddenFacts()

    def hidden_strings(self) -> list[str]:
        """Exact texts that must never reach an agent except through the human side (a gold
        answer, a hidden preference). The session searches everything agents were sent for
        them and reports a hit as a leak. Keep them distinctive: a short common phrase would
        be found in honest views too."""
        return []

    @classmethod
    def performance_scale(cls, protocol: str = DEFAULT_PROTOCOL
                          ) -> Literal["dichotomous", "graded"]:
        """What ``performance`` is under ``protocol``, for the paired test a report runs against
        the autonomous baseline: ``"graded"`` (a paired t-test) unless the task says its score is
        pass or fail (``"dichotomous"``: McNemar's test, as the Co-Gym paper ran for Tabular
        Analysis). Declared, not guessed from the values a run happened to get."""
        return "graded"

    @classmethod
    def summarise_scores(cls, sessions: Sequence[SessionScores]) -> dict[str, float]:
        """The task's own rates over many sessions (TravelPlanner's pass rates, say), by name,
        for the evaluation report; none by default. Each session is given as its env
        arguments, whether it delivered, and its scores (empty when it was not graded)."""
        return {}

    @classmethod
    def instances(cls, protocol: str = DEFAULT_PROTOCOL) -> list[dict[str, Any]]:
        """The task's numbered instances under ``protocol``, as keyword arguments of the env.
        Data-backed tasks override this; the default is one instance with default arguments."""
        return [{}]

    @classmethod
    def instance_titles(cls, protocol: str = DEFAULT_PROTOCOL) -> list[str]:
        """What each numbered instance is called, in instance order, for a task whose few
        instances have names (a map of a paper): ``cogym-lab tasks`` lists them. Empty (the
        default) for a task whose instances are only numbered, such as a data set's items."""
        return []

    # -- the API -----------------------------------------------------------------------------

    def bind_team(self, team: Sequence[TeamMember]) -> None:
        """Tell the env the session's team before it starts (the coordinator does): a task
        whose rules depend on who is an agent and who a person reads :attr:`team`."""
        self.team = tuple(team)

    def action_specs(self, *, include_internal: bool = False) -> list[ActionSpec]:
        """The task actions members may take, in definition order (with ``include_internal``,
        also the ones only deferred work applies)."""
        return [spec for spec, _ in self._handlers.values()
                if include_internal or not spec.internal]

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release what the env holds (a kernel, say). Sessions call it when they end."""

    def reset(self, *, seed: int | None = None) -> None:
        """Start the task afresh."""
        if "_is_reset" not in vars(self):  # say so here, not as an AttributeError in step()
            raise TypeError(not_initialised(type(self)))
        self._reset(seed)
        self._is_reset = True

    def view(self, role: str) -> Observation:
        """What ``role`` sees now: public components first, then its private ones."""
        return self.views([role])[role]

    def views(self, roles: Sequence[str]) -> dict[str, Observation]:
        """The views of several roles at once, building the shared part only once."""
        public = tuple(self.public_components())
        return {role: Observation(components=public + tuple(
                    c if c.private else c.model_copy(update={"private": True})
                    for c in self.private_components(role)))
                for role in roles}

    def step(self, role: str, raw_action: RawAction) -> StepResult:
        """Parse ``raw_action`` and apply it for ``role``: the public entry for any caller.

        Never raises for bad input: an unknown action, a missing or mistyped param, a bad role
        (of any type) or a refused action returns a result whose ``info["error"]`` names the
        expected form, and the state is unchanged. A success's ``info["action"]`` is the action
        in canonical form.
        """
        refusal = self._refusal(role)
        if refusal is not None:
            return refusal
        try:
            parsed, spec = parse_action(raw_action, self._specs)
        except ActionError as error:
            return StepResult(observation=self.view(role), private=True, info={"error": str(error)})
        result = self.apply(role, parsed)
        if result.error:
            return result
        return replace(result, info={"action": format_action(parsed, spec), **result.info})

    def apply(self, role: str, action: Action) -> StepResult:
        """Apply ``action``, already parsed against this env's specs (by ``parse_action``: its
        args bound, typed and cleaned), for ``role``. The coordinator parses each action once,
        where it enters, and applies it through this; anything else uses :meth:`step`.

        Refused like ``step``: a role the env does not know, an action it does not have, or a
        handler's :class:`ActionError` gives an error result and leaves the state unchanged.
        """
        refusal = self._refusal(role)
        if refusal is not None:
            return refusal
        handler = self._handlers.get(action.name)
        try:
            if handler is None:
                raise ActionError(f"Unknown action {action.name!r}. "
                                  f"{expected_forms(self._specs)}")
            spec, attribute = handler
            outcome = getattr(self, attribute)(role, **action.args)
        except ActionError as error:
            return StepResult(observation=self.view(role), private=True, info={"error": str(error)})
        outcome = outcome or ActionOutcome()
        return StepResult(
            observation=self.view(role),
            reward=outcome.reward,
            done=outcome.done,
            private=spec.private,
            info=dict(outcome.info),
            deferred=outcome.deferred,
        )

    def canonical(self, raw_action: RawAction) -> Action:
        """Parse and check ``raw_action`` without applying it. Raises :class:`ActionError`."""
        parsed, _ = parse_action(raw_action, self._specs)
        return parsed

    def _refusal(self, role: Any) -> StepResult | None:
        """The result for a step the env cannot even look at, or ``None`` when it can."""
        if "_is_reset" not in vars(self):
            raise TypeError(not_initialised(type(self)))
        if not self._is_reset:  # view() may need state that only reset() creates
            return StepResult(observation=Observation(), private=True, info={
                "error": "The environment has not been reset; call reset() first."})
        if not isinstance(role, str):  # handlers and views key state by role: no view for it
            return StepResult(observation=Observation(), private=True, info={
                "error": f"A role is a string, not {type(role).__name__}."})
        if self.roles is not None and role not in self.roles:
            return StepResult(observation=self.view(role), private=True, info={
                "error": f"Unknown role {role!r}; this task's roles are {', '.join(self.roles)}."})
        return None


def not_initialised(env_class: type) -> str:
    """What to say when ``CoEnv.__init__`` never ran for an instance of ``env_class``."""
    hook = "__post_init__" if dataclasses.is_dataclass(env_class) else "__init__"
    return (f"{env_class.__name__}.{hook} did not call super().__init__(): CoEnv's own set-up "
            f"never ran (call super().__init__(roles=...) in {env_class.__name__}.{hook}).")
