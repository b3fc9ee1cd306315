"""Check a task environment against what sessions, replay and the UI rely on.

In the spirit of Gymnasium's ``check_env``: build the task, poke at it, and say in plain words
what is wrong and how to fix it::

    from cogym_lab.core.check_env import check_env

    check_env(PackingTask, trip="beach")          # raises EnvCheckError naming each failure
    problems = check_env(PackingTask, raise_on_error=False)  # or returns the findings

The first argument is a :class:`CoEnv` subclass, or any factory that returns a CoEnv; the
keyword arguments after it are passed to it. ``functools.partial(make_env, NAME)`` checks a
registered task built, and rebuilt, exactly as sessions and replay build it. An env that is
already built is refused with a ``TypeError``: the checks build fresh copies the same way (two
resets to compare, an env rebuilt from ``env_args()``), and a built env cannot say how it was
built; that is what ``env_args()`` is checked for. ``raise_on_error`` is the only keyword the
checker keeps for itself.

The checks, in order. A failure to build the env, to initialise it or to reset it stops the
checks after it, which need an env that works that far:

* **Subclass**: the class subclasses CoEnv (or the factory returns one).
* **Initialisation**: ``CoEnv.__init__`` ran (a forgotten ``super().__init__()``).
* **Action specs**: there are actions; each ``@action`` spec is what its method's signature says
  (the acting role first, params of types the grammar knows, descriptions); names are unique.
* **Reset**: ``reset(seed=...)`` runs.
* **Reset determinism**: two envs built alike and reset with one seed look the same to every
  role, and so does one env reset twice.
* **env_args round trip**: ``env_args()`` is JSON, and an env rebuilt from it the way replay
  rebuilds one (``make_env`` with the recorded protocol) looks the same as the original
  (checked only once reset is deterministic: else it would differ anyway).
* **JSON views**: every view is JSON, and reads back as it was: no set (its order changes from
  run to run), no NaN or infinity (written as null).
* **Content shapes**: each component's content has the shape its render type's panel view
  shows (``cogym_lab.core.render_shapes``): a checklist a list of items with a ``text``, an
  editor a string, a table rows, ... (``text`` and unknown render types show anything).
* **Private components**: a role's private component, once it holds anything, shows in no other
  role's view (an empty start looks alike for every role); none has a public component's name.
* **Hidden strings**: no ``hidden_strings()`` text shows in a public component.
* **Score reports**: when the task defines ``explain_scores``, it returns a list of
  :class:`~cogym_lab.core.env.ScoreReport` for the scores ``evaluate()`` gives on the fresh env,
  each naming one of those scores.
* **Bad input to step**: ``step`` never raises on bad input (unknown actions, garbage, missing
  or mistyped params, bad roles, NUL, lone surrogates, U+2028, a megabyte of text); each gets an
  ``info["error"]`` and leaves every view as it was.
* **Clock**: a clocked env (``tick_seconds`` not ``None``) ticks every ``MIN_TICK_SECONDS`` or
  slower and overrides ``advance``, whose ``TickResult`` info is plain JSON.

Views are checked for the roles ``env.roles`` names, or :data:`DEFAULT_ROLES` when the env
admits any role. Every env the checker builds is closed (``aclose``) before it returns.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import traceback
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogym_lab.core.actions import ActionSpec
from cogym_lab.core.blocking import run_to_end
from cogym_lab.core.env import (
    MIN_TICK_SECONDS,
    CoEnv,
    ScoreReport,
    TickResult,
    _spec_from_method,
    is_non_empty,
    not_initialised,
)
from cogym_lab.core.observation import Component, Observation
from cogym_lab.core.render_shapes import CONTENT_SHAPES, content_problem
from cogym_lab.core.state_diff import first_difference, show
from cogym_lab.core.text import string_leaves
from cogym_lab.errors import CogymError

__all__ = ["CHECK_SEED", "DEFAULT_ROLES", "EnvCheckError", "check_env"]

#: The seed of every reset the checker makes.
CHECK_SEED = 1234
#: The roles whose views are checked when the env admits any role.
DEFAULT_ROLES = ("agent", "user")

EnvFactory = Callable[..., CoEnv]

_UNKNOWN_ROLE = "not-a-role-of-this-task"
_NO_SUCH_ACTION = "CHECK_ENV_NO_SUCH_ACTION"
_MEGABYTE = 1_000_000
#: A value of each param type that the type check accepts.
_VALID: dict[str, Any] = {"string": "x", "integer": 1, "number": 1.0, "boolean": True,
                          "array": [], "object": {}, "any": "x"}
#: A value of each param type that no conversion can rescue (strings take anything but null).
_MISTYPED: dict[str, Any] = {"integer": "not a number", "number": "not a number",
                             "boolean": "maybe", "array": "not a list", "object": 5}


class EnvCheckError(CogymError, AssertionError):
    """A task environment failed one or more checks. ``findings`` holds one line per failure,
    saying what is wrong and how to fix it. An ``AssertionError`` because a failed check is one:
    a test that calls :func:`check_env` fails with the findings as its message."""

    def __init__(self, subject: str, findings: Sequence[str]) -> None:
        self.findings = list(findings)
        lines = "\n".join(f"- {finding}" for finding in self.findings)
        super().__init__(f"{subject} failed {len(self.findings)} check(s):\n{lines}")


@dataclass
class _Subject:
    """The env under check: how it is built, and every copy built so far (to close them)."""

    factory: EnvFactory
    args: dict[str, Any]
    built: list[CoEnv] = field(default_factory=list)

    @property
    def label(self) -> str:
        if isinstance(self.factory, functools.partial):  # make_env bound to a task's name
            bound = ", ".join(map(repr, self.factory.args))
            return f"{getattr(self.factory.func, '__name__', 'factory')}({bound})"
        return getattr(self.factory, "__name__", repr(self.factory))

    def build(self, **args: Any) -> CoEnv:
        env = self.factory(**args)
        if isinstance(env, CoEnv):
            self.built.append(env)
        return env

    def fresh(self) -> CoEnv:
        """Another env built with the same arguments and reset with the checker's seed."""
        env = self.build(**self.args)
        env.reset(seed=CHECK_SEED)
        return env

    def rebuilt(self, original: CoEnv, stored_args: Mapping[str, Any]) -> CoEnv:
        """An env built from ``stored_args`` as replay builds one from ``session.json``: the
        protocol comes from the session, not from the arguments (see ``make_env``)."""
        args = {key: value for key, value in stored_args.items() if key != "protocol"}
        if _accepts(self.factory, "protocol"):
            args["protocol"] = original.protocol
        env = self.build(**args)
        env.protocol = original.protocol
        env.reset(seed=CHECK_SEED)
        return env


def check_env(env_class: EnvFactory, /, *, raise_on_error: bool = True,
              **env_args: Any) -> list[str]:
    """Build ``env_class(**env_args)`` and check it against the CoEnv contract (module doc).

    Raises :class:`EnvCheckError` listing every failed check; with ``raise_on_error=False``,
    returns that list instead (empty when every check passed). Raises ``TypeError`` when given
    an env that is already built.
    """
    if isinstance(env_class, CoEnv):
        name = type(env_class).__name__
        raise TypeError(f"check_env takes the env's class and its arguments, not a built env: "
                        f"check_env({name}, **arguments). It builds fresh copies to compare, "
                        f"and a built env cannot say how it was built.")
    subject = _Subject(env_class, dict(env_args))
    try:
        findings = _run_checks(subject)
    finally:
        closing = _close_all(subject.built)
    findings += closing
    if findings and raise_on_error:
        raise EnvCheckError(subject.label, findings)
    return findings


def _run_checks(subject: _Subject) -> list[str]:
    """Every finding about ``subject``, the checks that need a working env only if it works."""
    if inspect.isclass(subject.factory) and not issubclass(subject.factory, CoEnv):
        return [_not_a_coenv(subject.factory)]  # not built: its constructor may do anything
    try:
        env = subject.build(**subject.args)
    except Exception as error:  # noqa: BLE001 - whatever stops the build is the finding
        return [f"Construction: {subject.label}(**{show(subject.args)}) raised "
                f"{_describe(error)}. Fix: make the constructor accept these arguments, or pass "
                f"check_env the arguments it needs."]
    if not isinstance(env, CoEnv):
        return [_not_a_coenv(type(env))]
    if "_is_reset" not in vars(env):
        return [f"Initialisation: {not_initialised(type(env))}"]
    findings = _guarded("Action specs", check_action_specs, env)
    try:
        env.reset(seed=CHECK_SEED)
    except Exception as error:  # noqa: BLE001 - whatever stops the reset is the finding
        return [*findings, f"Reset: reset(seed={CHECK_SEED}) raised {_describe(error)}. Fix: "
                           f"_reset must put the workspace in its initial state without failing."]
    nondeterminism = _guarded("Reset determinism", check_reset_is_deterministic, env, subject)
    findings += nondeterminism
    if not nondeterminism:  # otherwise a rebuilt env differs whatever env_args() returns
        findings += _guarded("env_args round trip", check_env_args_round_trip, env, subject)
    findings += _guarded("JSON views", check_views_are_json, env)
    findings += _guarded("Content shapes", check_content_shapes, env)
    findings += _guarded("Private components", check_private_components_stay_private, env)
    findings += _guarded("Hidden strings", check_hidden_strings_stay_hidden, env)
    findings += _guarded("Score reports", check_score_reports, env)
    findings += _guarded("Bad input to step", check_step_refuses_bad_input, env)
    findings += _guarded("Clock", check_clock, env)
    return findings


def check_clock(env: CoEnv) -> list[str]:
    """A clocked env ticks no faster than the event loop allows, and has a world that moves on:
    it overrides ``advance``, which returns a ``TickResult`` whose info the log can hold."""
    period = env.tick_seconds
    if period is None:
        return []
    name = type(env).__name__
    if isinstance(period, bool) or not isinstance(period, int | float) \
            or not period >= MIN_TICK_SECONDS:
        return [f"Clock: {name}.tick_seconds is {period!r}. Fix: a clocked env ticks every "
                f"{MIN_TICK_SECONDS} s or slower (None: it has no clock)."]
    if type(env).advance is CoEnv.advance:
        return [f"Clock: {name} has a clock (tick_seconds={period!r}) but no advance(), so its "
                f"world never moves on. Fix: override advance() to play one tick."]
    result = env.advance()
    if not isinstance(result, TickResult):
        return [f"Clock: {name}.advance() returned {show(result)}. Fix: return a TickResult."]
    try:
        json.dumps(result.info, allow_nan=False)
    except (TypeError, ValueError) as error:
        return [f"Clock: {name}.advance()'s info is not plain JSON ({error}). Fix: keep it to "
                f"dicts, lists, strings, finite numbers, booleans and None: the log holds it."]
    return []


# -- action specs ---------------------------------------------------------------------------


def check_action_specs(env: CoEnv) -> list[str]:
    """Actions exist, their names are unique, and each spec is what its method says."""
    env_class = type(env)
    findings = []
    if not env.action_specs():
        findings.append(f"Action specs: {env_class.__name__} has no action members can take. "
                        f"Fix: mark the methods members call with @action(\"what it does\").")
    findings += _duplicate_action_names(env_class)
    for name, (spec, attribute) in env_class._handlers.items():
        findings += _handler_findings(env_class, name, spec, attribute)
    return findings


def _duplicate_action_names(env_class: type[CoEnv]) -> list[str]:
    """Two methods declaring one action name: the registry keeps one and silently drops the
    other. A subclass overriding the same method is not a clash."""
    owners: dict[str, str] = {}
    findings = []
    for klass in reversed(env_class.__mro__):
        for attribute, member in vars(klass).items():
            marked = getattr(member, "__cogym_action__", None)
            if marked is None:
                continue
            earlier = owners.get(marked[0])
            if earlier is not None and earlier != attribute:
                findings.append(f"Action specs: both {earlier} and {attribute} declare the action "
                                f"{marked[0]}, so only one of them can be called. Fix: give one "
                                f"of them another name (@action(..., name=\"OTHER_NAME\")).")
            owners[marked[0]] = attribute
    return findings


def _handler_findings(env_class: type[CoEnv], name: str, spec: ActionSpec,
                      attribute: str) -> list[str]:
    """What is wrong with the method behind action ``name``."""
    method = getattr(env_class, attribute, None)
    where = f"{env_class.__name__}.{attribute}"
    if method is None or not hasattr(method, "__cogym_action__"):
        return [f"Action specs: {where} overrides the action {name} without @action, so members "
                f"are offered the spec of the method it overrides. Fix: mark the override with "
                f"@action(...) as well."]
    findings = []
    if _spec_from_method(method) != spec:
        findings.append(f"Action specs: the spec of {name} is not the one {where}'s signature "
                        f"gives. Fix: let @action derive specs; do not edit _handlers.")
    findings += _signature_findings(method, where)
    if not spec.description.strip():
        findings.append(f"Action specs: {name} has no description. Fix: "
                        f"@action(\"what {name} does\", ...).")
    hints = typing.get_type_hints(method)
    for param in spec.params:
        findings += _param_findings(name, param.name, param.type, param.description,
                                    hints.get(param.name))
    return findings


def _signature_findings(method: Callable[..., Any], where: str) -> list[str]:
    """The handler is called as ``method(self, role, **params)``: does its signature allow it?"""
    params = list(inspect.signature(method).parameters.values())
    if len(params) < 2 or params[1].name != "role":
        return [f"Action specs: {where} must take the acting role right after self, or its "
                f"first param is taken for the role. Fix: def {method.__name__}(self, role: str, "
                f"...)."]
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    odd = [p.name for p in params[2:] if p.kind not in keyword]
    if odd:
        return [f"Action specs: {where} has params that cannot be passed by name "
                f"({', '.join(odd)}), but actions pass params by name. Fix: make each one a "
                f"plain named param with a type."]
    return []


def _param_findings(action_name: str, name: str, type_: str, description: str,
                    hint: Any) -> list[str]:
    findings = []
    if type_ == "any" and hint is not Any:
        what = ("has no type annotation" if hint is None
                else f"is annotated {hint}, a type the action grammar does not know")
        findings.append(f"Action specs: param {name!r} of {action_name} {what}, so any value "
                        f"passes unchecked. Fix: annotate it str, int, float, bool, list or dict "
                        f"(or typing.Any to accept anything on purpose).")
    if not description.strip():
        findings.append(f"Action specs: param {name!r} of {action_name} has no description, so "
                        f"members see only its name. Fix: @action(..., {name}=\"what it is\").")
    return findings


# -- reset and env_args ---------------------------------------------------------------------


def check_reset_is_deterministic(env: CoEnv, subject: _Subject) -> list[str]:
    """Same arguments and seed, same start: across two envs, and for one env reset twice."""
    roles = _roles(env)
    first = _state(env, roles)
    findings = []
    other = first_difference(first, _state(subject.fresh(), roles))
    if other is not None:
        findings.append(f"Reset determinism: two envs built with the same arguments and reset "
                        f"with seed={CHECK_SEED} differ {other.describe('first', 'second')}. "
                        f"Fix: draw every random choice in _reset from random.Random(seed), "
                        f"never from the random module or the clock.")
    env.reset(seed=CHECK_SEED)
    again = first_difference(first, _state(env, roles))
    if again is not None:
        findings.append(f"Reset determinism: resetting one env twice with seed={CHECK_SEED} "
                        f"gives different states {again.describe('first reset', 'second reset')}"
                        f". Fix: _reset must rebuild every piece of state from scratch, keeping "
                        f"nothing from the previous episode.")
    return findings


def check_env_args_round_trip(env: CoEnv, subject: _Subject) -> list[str]:
    """``env_args()`` survives JSON (session.json holds it) and rebuilds the same env."""
    args = env.env_args()
    try:
        stored = json.loads(json.dumps(args, allow_nan=False))
    except (TypeError, ValueError) as error:
        return [f"env_args round trip: env_args() returned {show(args)}, which JSON cannot hold "
                f"({error}), yet session.json keeps it for replay. Fix: return only JSON values "
                f"(strings, numbers, booleans, None, and lists and dicts of them)."]
    if not isinstance(stored, dict):
        return [f"env_args round trip: env_args() returned {show(args)}, not a dict of keyword "
                f"arguments. Fix: return {{'argument': value, ...}}."]
    try:
        rebuilt = subject.rebuilt(env, stored)
    except Exception as error:  # noqa: BLE001 - whatever stops the rebuild is the finding
        return [f"env_args round trip: rebuilding from env_args() {show(stored)} raised "
                f"{_describe(error)}. Fix: env_args() must return arguments the constructor "
                f"takes."]
    roles = _roles(env)
    difference = first_difference(_state(env, roles), _state(rebuilt, roles))
    if difference is None:
        return []
    return [f"env_args round trip: an env rebuilt from env_args() {show(stored)}, as replay "
            f"rebuilds one, differs from the original {difference.describe('original', 'rebuilt')}"
            f". Fix: env_args() must return every constructor argument that shapes the task."]


# -- views ----------------------------------------------------------------------------------


def check_views_are_json(env: CoEnv) -> list[str]:
    """Every component of every view can be written as JSON, and reads back as it was."""
    findings: dict[str, None] = {}  # a public component shows in every view: say it once
    for role in _roles(env):
        for component in env.view(role).components:
            problem = _json_problem(component)
            if problem is not None:
                findings[f"JSON views: component {component.name!r} ({_scope(component)}) "
                         f"{problem}. Fix: give components only strings, numbers, booleans, "
                         f"None, and lists and dicts of them (a sorted list for a set, None for a "
                         f"missing number)."] = None
    return list(findings)


def check_content_shapes(env: CoEnv) -> list[str]:
    """Every component's content is of the shape its render type's view shows (what the panel
    cannot show, a person never sees: a checklist of another shape shows as an empty list)."""
    findings: dict[str, None] = {}  # a public component shows in every view: say it once
    shapes = {**CONTENT_SHAPES, **type(env).content_shapes}
    for role in _roles(env):
        for component in env.view(role).components:
            problem = content_problem(component.render_type, component.content, shapes)
            if problem is not None:
                findings[f"Content shapes: component {component.name!r} ({_scope(component)}, "
                         f"render type {component.render_type!r}) {problem}: "
                         f"{show(component.content)}. Fix: give a {component.render_type!r} "
                         f"component {shapes[component.render_type].words}; or pick the "
                         f"render type 'text', or a name of your own, which show any content "
                         f"(as JSON)."] = None
    return list(findings)


def _json_problem(component: Component) -> str | None:
    unfaithful = _unfaithful_value(component.content, "content")
    if unfaithful is not None:
        return f"holds {unfaithful}"
    try:
        json.dumps(component.model_dump(mode="json"), allow_nan=False)
    except (TypeError, ValueError) as error:  # pydantic's serialisation error is a ValueError
        return f"cannot be written as JSON: {_first_line(error)}"
    return None


def _unfaithful_value(value: Any, path: str) -> str | None:
    """The first value in ``value`` that JSON writes as something else, and where it is."""
    if isinstance(value, set | frozenset):  # written as a list, in an order that varies by run
        return f"a set at {path}, whose order changes from one run to the next"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} at {path}, which JSON writes as null"
    items: Iterator[tuple[str, Any]]
    if isinstance(value, Mapping):
        items = ((f"{path}[{key!r}]", item) for key, item in value.items())
    elif isinstance(value, list | tuple):
        items = ((f"{path}[{index}]", item) for index, item in enumerate(value))
    else:
        return None
    return next((found for sub, item in items if (found := _unfaithful_value(item, sub))), None)


def check_private_components_stay_private(env: CoEnv) -> list[str]:
    """A component from ``private_components(role)`` reaches no other role's view."""
    roles = _roles(env)
    public = {component.name for component in env.public_components()}
    findings = []
    for role in roles:
        for component in env.private_components(role):
            if component.name in public:
                findings.append(f"Private components: {role}'s private component "
                                f"{component.name!r} has the name of a public one, so every "
                                f"role sees a component by that name. Fix: give private "
                                f"components names no public component uses.")
            elif is_non_empty(component.content):  # an empty start looks alike for every role
                findings += [_leak(role, other, component) for other in roles
                             if other != role and _shows(env.view(other), component)]
    return findings


def _shows(view: Observation, component: Component) -> bool:
    return any(seen.name == component.name and seen.content == component.content
               for seen in view.components)


def _leak(role: str, other: str, component: Component) -> str:
    return (f"Private components: {role}'s private component {component.name!r} "
            f"({show(component.content)}) also shows in {other}'s view. Fix: build "
            f"private_components(role) from that role's own state only; a component every role "
            f"should see belongs in public_components().")


def check_hidden_strings_stay_hidden(env: CoEnv) -> list[str]:
    """No hidden string (a gold answer, a hidden preference) is in what every role sees."""
    findings = []
    public = env.public_components()
    for hidden in env.hidden_strings():
        for component in public:
            shown = string_leaves([component.title, component.content])
            if any(hidden in text for text in shown):
                findings.append(f"Hidden strings: {show(hidden)} shows in the public component "
                                f"{component.name!r}, which agents see. Fix: keep hidden "
                                f"information out of public components; the human side gets it "
                                f"from hidden_information().")
    return findings


# -- score reports ----------------------------------------------------------------------------


def check_score_reports(env: CoEnv) -> list[str]:
    """A task that explains its scores returns :class:`ScoreReport` objects, each about one of
    the scores it was given. Checked on the fresh env's ``evaluate()``: a session explains the
    scores of whatever outcome it ends with, an empty one included."""
    if type(env).explain_scores is CoEnv.explain_scores:
        return []  # the default: no reports, nothing to check
    scores = env.evaluate()
    reports = env.explain_scores(dict(scores))
    fix = ("Fix: return a list of ScoreReport(name=..., value=..., label=..., reasons=[...]) "
           "(from cogym_lab.core.env), one for each score worth explaining.")
    if not isinstance(reports, list):
        return [f"Score reports: explain_scores() returned {show(reports)}, not a list. {fix}"]
    findings = []
    for index, report in enumerate(reports):
        if not isinstance(report, ScoreReport):
            findings.append(f"Score reports: explain_scores()[{index}] is "
                            f"{type(report).__name__} {show(report)}, not a ScoreReport. {fix}")
        elif report.name not in scores:
            findings.append(f"Score reports: explain_scores() explains {report.name!r}, which "
                            f"is not among the scores it was given ({', '.join(scores) or 'none'}"
                            f"). Fix: explain only the scores passed in; a report on a score "
                            f"the session does not have confuses the person reading it.")
    return findings


# -- step -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _BadStep:
    """One bad input to ``step``: what it is, for the message, and the call's arguments."""

    what: str
    role: Any
    action: Any


#: Why a bad input failed, beyond an exception, and how to fix each.
_NO_ERROR = "returned no info['error']"
_CHANGED = "changed the state"
_STEP_FIXES = {
    _NO_ERROR: "refuse it with an error that says what is expected.",
    _CHANGED: "check everything before changing anything (raise ActionError first).",
}
_REFUSE = ("refuse bad input with a result whose info['error'] says what is expected "
           "(CoEnv.step does; handlers raise only ActionError).")


def check_step_refuses_bad_input(env: CoEnv) -> list[str]:
    """``step`` answers every bad input with an error and leaves every view as it was. Bad
    inputs that fail the same way make one finding."""
    roles = _roles(env)
    failures: dict[str, list[tuple[_BadStep, str]]] = {}  # how it failed -> (input, detail)
    before = _state(env, roles)
    for bad in _bad_steps(env, roles):
        try:
            result = env.step(bad.role, bad.action)
        except Exception as error:  # noqa: BLE001 - any exception here is the finding
            failures.setdefault(f"raised {_describe(error)}", []).append((bad, ""))
            continue
        if not getattr(result, "error", None):
            failures.setdefault(_NO_ERROR, []).append((bad, ""))
        after = _state(env, roles)
        changed = first_difference(before, after)
        if changed is not None:
            detail = f" {changed.describe('before', 'after')}"
            failures.setdefault(_CHANGED, []).append((bad, detail))
            before = after
    return [_step_finding(how, failed) for how, failed in failures.items()]


def _step_finding(how: str, failed: list[tuple[_BadStep, str]]) -> str:
    """One finding for every bad input that failed ``how``: the first in full, then the rest."""
    (first, detail), rest = failed[0], [bad.what for bad, _ in failed[1:]]
    call = f"step({_brief(first.role)}, {_brief(first.action)}) ({first.what})"
    more = f"; so did {len(rest)} more: {', '.join(rest)}" if rest else ""
    return f"Bad input to step: {call} {how}{detail}{more}. Fix: {_STEP_FIXES.get(how, _REFUSE)}"


def _bad_steps(env: CoEnv, roles: Sequence[str]) -> list[_BadStep]:
    """Bad inputs of every kind: garbage, hostile text, bad roles, bad calls of each action."""
    role, unknown = roles[0], f"{_NO_SUCH_ACTION}()"
    steps = [
        _BadStep("an unknown action", role, unknown),
        _BadStep("an empty string", role, ""),
        _BadStep("prose with no action in it", role, "let us think about this first"),
        _BadStep("unbalanced brackets", role, "(((("),
        _BadStep("a JSON list", role, "[1, 2, 3]"),
        _BadStep("a number", role, 42),
        _BadStep("None", role, None),
        _BadStep("a mapping with no name", role, {"args": {}}),
        _BadStep("a NUL character", role, "\x00"),
        _BadStep("a lone surrogate", role, "\ud800"),
        _BadStep("a U+2028 line separator", role, "\u2028"),
        _BadStep("raw NUL, lone surrogate and U+2028 in a call", role,
                 f'{_NO_SUCH_ACTION}(text="\x00\ud800\u2028")'),
        _BadStep("escaped NUL, lone surrogate and U+2028 in a call", role,
                 f'{_NO_SUCH_ACTION}(text="\\u0000\\ud800\\u2028")'),
        _BadStep("a 1 MB string", role, "x" * _MEGABYTE),
        _BadStep("a 1 MB value in a call", role, f'{_NO_SUCH_ACTION}(text="{"x" * _MEGABYTE}")'),
        _BadStep("a role holding a lone surrogate", "\ud800", unknown),
    ]
    specs = env.action_specs(include_internal=True)
    if specs:  # a well-formed call, so that only the role is wrong
        call = {"name": specs[0].name, "args": _valid_args(specs[0])}
        steps += [_BadStep("a role that is an int", 7, call),
                  _BadStep("a role that is None", None, call),
                  _BadStep("a role that is a list", [role], call)]
        if env.roles:
            steps.append(_BadStep("a role the task does not have", _UNKNOWN_ROLE, call))
    if not env.roles:  # any role may act: an unknown one is refused for its action only
        steps.append(_BadStep("an unknown role with an unknown action", _UNKNOWN_ROLE, unknown))
    for spec in specs:
        steps += _bad_calls(spec, role)
    return steps


def _bad_calls(spec: ActionSpec, role: str) -> list[_BadStep]:
    """Calls of ``spec`` with an unknown, a missing or a mistyped param."""
    valid = _valid_args(spec)
    calls = [_BadStep(f"{spec.name} with an unknown param", role,
                      {"name": spec.name, "args": {**valid, "check_env_no_such_param": 1}}),
             _BadStep(f"{spec.name} with args that are not a mapping", role,
                      {"name": spec.name, "args": 5})]
    if any(param.required for param in spec.params):
        calls.append(_BadStep(f"{spec.name} with no params", role, f"{spec.name}()"))
    for param in spec.params:
        if param.type in _MISTYPED:
            wrong: Any = _MISTYPED[param.type]
        elif param.type == "string" and param.required:
            wrong = None
        else:  # an optional string, or any type: every value is accepted
            continue
        calls.append(_BadStep(f"{spec.name} with {param.name} mistyped", role,
                              {"name": spec.name, "args": {**valid, param.name: wrong}}))
    return calls


def _valid_args(spec: ActionSpec) -> dict[str, Any]:
    return {param.name: _VALID[param.type] for param in spec.params}


# -- helpers --------------------------------------------------------------------------------


def _roles(env: CoEnv) -> tuple[str, ...]:
    return tuple(env.roles) if env.roles else DEFAULT_ROLES


def _state(env: CoEnv, roles: Sequence[str]) -> dict[str, Any]:
    """What members start from, as plain data: the task description, the roles allowed to act
    (they decide which actions are refused) and every role's view."""
    return {"task_description": env.task_description,
            "roles": list(env.roles) if env.roles is not None else None,
            "views": {role: _plain(env.view(role)) for role in roles}}


def _plain(view: Observation) -> Any:
    """``view`` as JSON data; what JSON cannot hold becomes its type's name (the JSON check
    reports it), so that two views compare without tripping over it."""
    return json.loads(json.dumps(view.model_dump(), default=_type_name))


def _type_name(value: Any) -> str:
    return f"<{type(value).__name__}>"


def _scope(component: Component) -> str:
    return "private" if component.private else "public"


def _accepts(factory: EnvFactory, parameter: str) -> bool:
    try:
        return parameter in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a callable with no signature: pass it nothing extra
        return False


def _not_a_coenv(cls: type) -> str:
    return (f"Subclass: {cls.__name__} is not a CoEnv subclass, so no session can run it. Fix: "
            f"class {cls.__name__}(CoEnv) (from cogym_lab.core import CoEnv).")


def _guarded(name: str, check: Callable[..., list[str]], *args: Any) -> list[str]:
    """``check(*args)``; an exception inside it becomes a finding, so the other checks run."""
    try:
        return check(*args)
    except Exception as error:  # noqa: BLE001 - an env failing mid-check is a finding too
        return [f"{name}: checking this raised {_describe(error)}. Fix: that call must not fail "
                f"on an env that was just built and reset."]


def _describe(error: BaseException) -> str:
    """``TypeError: message (at file.py:12 in method)``: where the env failed, in one line."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name})" \
        if frames else ""
    return f"{type(error).__name__}: {_first_line(error)}{where}"


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.split("\n", 1)[0][:300]


def _brief(value: Any) -> str:
    """``value`` for a message: its repr (which escapes NUL and surrogates), cut short."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _close_all(envs: Sequence[CoEnv]) -> list[str]:
    """Close every env the checker built (a kernel, a scratch folder); say which failed."""

    async def close() -> list[str]:
        problems: dict[str, None] = {}
        for env in envs:
            try:
                await env.aclose()
            except Exception as error:  # noqa: BLE001 - the others must be closed all the same
                problems[f"Closing: aclose() raised {_describe(error)}. Fix: aclose must "
                         f"release what the env holds without failing."] = None
        return list(problems)

    return run_to_end(close())
