"""Study design files: the ready ones, loading one by name or path, and checking it.

:func:`load_design` reads a TOML design (a ready one by name, or any file by path), validates it
against :mod:`cogym_lab.studies.design` and then against this installation: the tasks and teams
it names exist, the team has the person's seat, the instances exist where the task can say how
many it has, the modes and measures are known and fit the design. Every problem becomes one line
that names where it is (``conditions[1].session.team: unknown team ...``, or ``line 3, column
7: ...`` for a file that is not TOML), all of them in one :class:`StudyDesignError`.

:func:`participant_plan` says in plain words what a checked design asks of one participant.
"""

from __future__ import annotations

import difflib
import inspect
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from cogym_lab.errors import CogymError
from cogym_lab.studies import design as models
from cogym_lab.studies.assignment import sequence_for
from cogym_lab.studies.design import SessionPlan, StudyDesign
from cogym_lab.studies.steps import Step, plan_steps

#: The measures a design may ask for, with what each reports (the analysis computes them).
KNOWN_MEASURES: dict[str, str] = {
    "borda": "Borda count of the rankings (first of n gets n points, the last 1)",
    "win_rate": "share of sessions whose outcome the person preferred to the baseline's, "
                "with its interval",
    "pairwise_preference": "counts of own / baseline / tie in the preference question",
    "satisfaction": "the Likert item named 'satisfaction', per condition",
    "likert": "every Likert item, per condition (median, mean)",
    "wilcoxon": "Wilcoxon signed-rank test between two conditions, per tested outcome",
    "mann_whitney": "Mann-Whitney U test between conditions (unpaired)",
    "paired_t": "paired t-test between two conditions (time shares)",
    "utility_composite": "the composites of the analysis plan (mean of their Likert items)",
    "time_shares": "share of session time in each kind of interaction",
    "item_ratio": "output-to-input item ratio of each round (plan step or chat turn)",
    "task_load": "the task-load form's six subscales and their mean",
}

#: The modes a session may name: what the paper compares.
KNOWN_MODES: dict[str, str] = {
    "notifications": "Co-Gym's protocol: anyone acts at any time, changes are notified",
    "turns": "turn-taking: person and agent alternate",
    "plans": "Cocoa's interactive plans (a team with plans = true)",
    "chat": "chat only, no plan (a team without plans)",
    "moves": "a real-time task where the person has moves and interact only",
    "macros": "a real-time task where the person also has macro actions",
}
#: Modes of which a session takes at most one.
_EXCLUSIVE = [("notifications", "turns"), ("plans", "chat"), ("moves", "macros")]
#: Arguments any task takes from a session (``make_env``'s own).
_ALWAYS_TAKEN = {"plans", "protocol", "data_dir"}

#: A design is read in minutes by the people who run it; a larger file is a mistake.
MAX_DESIGN_BYTES = 256 * 1024
#: Consent and instructions are read by participants in a few minutes.
MAX_TEXT_CHARS = 20_000

_ITEM_KINDS = {"likert", "text", "ranking", "choice", "task_load"}


class StudyDesignError(CogymError, ValueError):
    """A design that cannot be used: ``problems`` holds one line per problem."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        super().__init__(f"Study design {source} has {count}:\n"
                         + "\n".join(f"  {line}" for line in problems))


def _designs_folder() -> Path:
    return Path(str(files("cogym_lab.studies").joinpath("designs")))


def ready_designs() -> list[str]:
    """The names of the designs that ship with the package."""
    return sorted(p.stem for p in _designs_folder().glob("*.toml"))


def design_file(name_or_path: str | Path) -> Path:
    """The file of a ready design by name, or the path given."""
    if str(name_or_path) in ready_designs():
        return _designs_folder() / f"{name_or_path}.toml"
    path = Path(name_or_path)
    if not path.is_file():
        raise StudyDesignError(str(name_or_path), [
            f"no such file, and not a ready design (ready: {', '.join(ready_designs())})"])
    return path


def load_design(name_or_path: str | Path, *, check: bool = True) -> StudyDesign:
    """A ready design by name, or a design file by path, validated; with ``check`` (the
    default) also checked against this installation's tasks and teams."""
    path = design_file(name_or_path)
    size = path.stat().st_size
    if size > MAX_DESIGN_BYTES:
        raise StudyDesignError(str(path), [
            f"the file is {size:,} bytes; a design file may be at most {MAX_DESIGN_BYTES:,} "
            f"(consent and instructions are meant to be read in minutes)"])
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise StudyDesignError(str(path), [
            f"not UTF-8 text (byte {error.start}): a design is a TOML text file"]) from None
    return parse_design(text, source=str(path), check=check)


def parse_design(text: str, *, source: str = "<text>", check: bool = True) -> StudyDesign:
    """The design a TOML text holds (see :func:`load_design`)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise StudyDesignError(source, [_toml_problem(error)]) from None
    try:
        design = StudyDesign.model_validate(data)
    except ValidationError as error:
        raise StudyDesignError(source, [_validation_problem(e) for e in error.errors()]) \
            from None
    if check:
        problems = check_design(design)
        if problems:
            raise StudyDesignError(source, problems)
    return design


def _toml_problem(error: tomllib.TOMLDecodeError) -> str:
    message = str(error)
    found = re.search(r"\s*\(at line (\d+), column (\d+)\)$", message)
    if found:
        return (f"line {found.group(1)}, column {found.group(2)}: not TOML: "
                f"{message[:found.start()]}")
    return f"not TOML: {message}"


def toml_path(loc: tuple[int | str, ...]) -> str:
    """``("conditions", 1, "session", "team")`` as ``conditions[1].session.team``; the tag
    pydantic adds for an item's kind is left out."""
    parts: list[str] = []
    previous: int | str | None = None
    for part in loc:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        elif isinstance(previous, int) and part in _ITEM_KINDS and parts[-2:-1] == [".items"]:
            pass  # the discriminator's branch, not a key of the file
        else:
            key = part if re.fullmatch(r"[A-Za-z0-9_\-]+", part) else f'"{part}"'
            parts.append(f".{key}")
        previous = part
    return "".join(parts).lstrip(".") or "design"


def _all_field_names() -> set[str]:
    names: set[str] = set()
    for value in vars(models).values():
        if isinstance(value, type) and issubclass(value, BaseModel) and value is not BaseModel:
            names |= set(value.model_fields)
    return names


def _validation_problem(error: Any) -> str:
    loc = tuple(error["loc"])
    kind = error["type"]
    if kind == "union_tag_invalid":
        loc = (*loc, "kind")
    path = toml_path(loc)
    if kind == "extra_forbidden":
        key = str(loc[-1])
        close = difflib.get_close_matches(key, sorted(_all_field_names()), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"{path}: unknown field{hint}"
    if kind == "missing":
        return f"{path}: missing (a required field)"
    message = str(error["msg"]).removeprefix("Value error, ")
    if loc and kind not in ("value_error", "assertion_error"):
        given = repr(error.get("input"))
        message += f", got {given[:60] + '...' if len(given) > 60 else given}"
    return f"{path}: {message}"


# ---------------------------------------------------------------- checks against the registries

def _sessions(design: StudyDesign) -> Iterator[tuple[str, SessionPlan, bool]]:
    """Every session the design runs: its TOML path, its plan, whether a person sits in it."""
    for n, condition in enumerate(design.conditions):
        yield f"conditions[{n}].session", condition.session, not condition.baseline
    for kind, rounds in (("practice", design.practice), ("calibration", design.calibration)):
        for n, round_ in enumerate(rounds):
            yield f"{kind}[{n}].session", round_.session, True


def _unknown(kind: str, name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown {kind} {name!r} ({hint}known: {', '.join(known)})"


def _check_session(path: str, plan: SessionPlan, person: bool) -> list[str]:
    from cogym_lab.core import CoEnv
    from cogym_lab.envs.registry import available_envs, task_class
    from cogym_lab.teams import load_team, ready_teams

    problems: list[str] = []
    tasks = available_envs()
    factory = task_class(plan.task) if plan.task in tasks else None
    if factory is None:
        problems.append(f"{path}.task: {_unknown('task', plan.task, tasks)}")
    teams = sorted(ready_teams())
    team = None
    if plan.team not in teams and not Path(plan.team).is_file():  # a ready name or a team file
        problems.append(f"{path}.team: {_unknown('team', plan.team, teams)}")
    else:
        try:
            team = load_team(plan.team)
        except (OSError, ValueError) as error:
            problems.append(f"{path}.team: the team file cannot be read: {error}")
    if team is not None:
        if factory is not None and not team.plays(plan.task):
            problems.append(f"{path}.team: team {plan.team!r} plays only "
                            f"{', '.join(team.tasks or [])}, not {plan.task!r}")
        if person and plan.person not in team.members:
            problems.append(f"{path}.person: team {plan.team!r} has no seat {plan.person!r} "
                            f"(its seats: {', '.join(team.members)})")
    for n, mode in enumerate(plan.mode):
        if mode not in KNOWN_MODES:
            problems.append(f"{path}.mode[{n}]: {_unknown('mode', mode, list(KNOWN_MODES))}")
    for pair in _EXCLUSIVE:
        if set(pair) <= set(plan.mode):
            problems.append(f"{path}.mode: {pair[0]!r} and {pair[1]!r} exclude each other")
    if team is not None and "plans" in plan.mode and not team.plans:
        problems.append(f"{path}.mode: 'plans' needs a team with plans = true "
                        f"({plan.team!r} has none)")
    if team is not None and "chat" in plan.mode and team.plans:
        problems.append(f"{path}.mode: 'chat' needs a team without plans "
                        f"({plan.team!r} works through a plan)")
    if factory is not None:
        clocked = getattr(factory, "advance", CoEnv.advance) is not CoEnv.advance
        for mode in ("moves", "macros"):
            if mode in plan.mode and not clocked:
                problems.append(f"{path}.mode: {mode!r} is for real-time tasks; "
                                f"{plan.task!r} has no clock")
        problems += _check_instances(path, plan, factory)
        problems += _check_env_args(path, plan, factory)
    return problems


def _check_instances(path: str, plan: SessionPlan, factory: Any) -> list[str]:
    numbered = getattr(factory, "instances", None)
    if not callable(numbered):
        return []
    try:
        count = len(numbered())
    except Exception:  # noqa: BLE001  # data not there: the number is not knowable here
        return []
    return [f"{path}.instances[{n}]: task {plan.task!r} has instances 0 to {count - 1} here; "
            f"there is no instance {instance}"
            for n, instance in enumerate(plan.instances) if not 0 <= instance < count]


def _check_env_args(path: str, plan: SessionPlan, factory: Any) -> list[str]:
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return []
    taken = set(parameters) | _ALWAYS_TAKEN
    return [f"{path}.env_args.{key}: task {plan.task!r} takes no argument {key!r} "
            f"(it takes {', '.join(sorted(taken))})"
            for key in plan.env_args if key not in taken]


def _items(design: StudyDesign) -> list[tuple[str, models.Item]]:
    return [(q.name, item) for q in design.questionnaires for item in q.items]


def check_design(design: StudyDesign) -> list[str]:
    """What is wrong with a valid design on this installation (nothing: an empty list)."""
    problems: list[str] = []
    for field in ("consent", "instructions"):
        text = getattr(design, field)
        if len(text) > MAX_TEXT_CHARS:
            problems.append(f"{field}: {len(text):,} characters; at most {MAX_TEXT_CHARS:,} "
                            f"(participants read it before they start)")
    for path, plan, person in _sessions(design):
        problems += _check_session(path, plan, person)
    items = _items(design)
    kinds: set[str] = {item.kind for _, item in items}
    likert = {item.name for _, item in items if item.kind == "likert"}
    if design.assignment.subjects == "between":
        for n, questionnaire in enumerate(design.questionnaires):
            for k, item in enumerate(questionnaire.items):
                if item.kind == "ranking":
                    problems.append(f"questionnaires[{n}].items[{k}]: a ranking needs a "
                                    f"within-subjects design (each participant here meets "
                                    f"one condition)")
    for n, measure in enumerate(design.measures):
        if measure not in KNOWN_MEASURES:
            problems.append(f"measures[{n}]: {_unknown('measure', measure, list(KNOWN_MEASURES))}")
            continue
        need = _measure_needs(design, measure, kinds, likert)
        if need:
            problems.append(f"measures[{n}]: {measure!r} needs {need}")
    for name, members in design.analysis.composites.items():
        for k, item_name in enumerate(members):
            if item_name not in likert:
                problems.append(f"analysis.composites.{name}[{k}]: no Likert item "
                                f"{item_name!r} in the questionnaires")
    outcomes = likert | set(design.analysis.composites)
    for n, name in enumerate(design.analysis.tested):
        if name not in outcomes:
            problems.append(f"analysis.tested[{n}]: {name!r} is neither a Likert item nor a "
                            f"composite")
    return problems


def _measure_needs(design: StudyDesign, measure: str, kinds: set[str],
                   likert: set[str]) -> str:
    """What ``measure`` needs that the design lacks ("" when nothing)."""
    compared = any(c.compare_with for c in design.conditions)
    within = design.assignment.subjects == "within"
    needs = {
        "borda": ("a ranking item", "ranking" in kinds),
        "win_rate": ("a condition that compares with a baseline and a choice item",
                     compared and "choice" in kinds),
        "pairwise_preference": ("a choice item", "choice" in kinds),
        "satisfaction": ("a Likert item named 'satisfaction'", "satisfaction" in likert),
        "likert": ("a Likert item", bool(likert)),
        "wilcoxon": ("a within-subjects design and a Likert item", within and bool(likert)),
        "paired_t": ("a within-subjects design", within),
        "mann_whitney": ("two conditions participants meet",
                         len(design.participant_conditions()) >= 2),
        "utility_composite": ("a composite in [analysis.composites]",
                              bool(design.analysis.composites)),
        "task_load": ("a task_load item", "task_load" in kinds),
    }
    if measure not in needs:
        return ""
    what, met = needs[measure]
    return "" if met else what


# ------------------------------------------------------------ what a design asks of a person

#: Minutes of a session whose task gives no estimate.
_UNKNOWN_TASK_MINUTES = 15.0
#: Minutes to answer one item, by kind.
ITEM_MINUTES: dict[str, float] = {"likert": 0.25, "choice": 0.5, "ranking": 1.0, "text": 2.0,
                                  "task_load": 2.0}
_STEP_MINUTES = {"consent": 3.0, "instructions": 3.0, "comparison": 3.0, "done": 0.0}


def session_minutes(plan: SessionPlan) -> float:
    """How long one session of ``plan`` takes, about: its time limit, else what its task says
    (a clocked game's length, or the task's typical time)."""
    from cogym_lab.envs.registry import task_class

    if plan.time_limit_seconds is not None:
        return plan.time_limit_seconds / 60
    factory = task_class(plan.task)
    estimate = getattr(factory, "session_minutes", None)
    return float(estimate(plan.env_args)) if callable(estimate) else _UNKNOWN_TASK_MINUTES


def step_minutes(design: StudyDesign, step: Step) -> float:
    if step.session is not None and step.kind != "comparison":
        return session_minutes(step.session)
    if step.kind == "questionnaire":
        questionnaire = next(q for q in design.questionnaires if q.name == step.questionnaire)
        return sum(ITEM_MINUTES[item.kind] for item in questionnaire.items)
    return _STEP_MINUTES.get(step.kind, 1.0)


@dataclass(frozen=True)
class ParticipantPlan:
    """What a design asks of one participant."""

    sessions: int
    practice: int
    calibration: int
    comparisons: int
    questionnaires: int
    minutes: float
    summary: str


def _plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"


def participant_plan(design: StudyDesign, participant: int = 0) -> ParticipantPlan:
    """The path of participant number ``participant`` in numbers, and in plain words."""
    steps = plan_steps(design, sequence_for(design, participant), participant)
    count = {kind: sum(1 for s in steps if s.kind == kind)
             for kind in ("session", "practice", "calibration", "comparison", "questionnaire")}
    minutes = sum(step_minutes(design, s) for s in steps)
    met = design.participant_conditions()
    plan = design.assignment
    words = ["gives consent"]
    if design.instructions:
        words.append("reads the instructions")
    for kind, noun in (("practice", "practice round"), ("calibration", "calibration round")):
        if count[kind]:
            words.append(f"plays {_plural(count[kind], noun)}")
    if plan.subjects == "between":
        how = [f"one condition of {len(met)}"]
    else:
        order = {"random": "in a random order", "latin": "counterbalanced by a Latin square",
                 "blocked": "in the same order for everyone"}[plan.order]
        how = [f"{len(met)} conditions"]
        if plan.repeat > 1:
            how.append(f"{plan.repeat} in a row each")
        how.append(order)
    if plan.anonymise:
        how.append("shown under neutral labels")
    words.append(f"works in {_plural(count['session'], 'session')} ({', '.join(how)})")
    if count["comparison"]:
        times = "once" if count["comparison"] == 1 else f"{count['comparison']} times"
        words.append(f"compares the outcome with the baseline's {times}")
    if count["questionnaire"]:
        words.append(f"answers {_plural(count['questionnaire'], 'questionnaire')}")
    summary = (f"Each participant {'; '.join(words)}. About {round(minutes)} minutes in all.")
    return ParticipantPlan(sessions=count["session"], practice=count["practice"],
                           calibration=count["calibration"], comparisons=count["comparison"],
                           questionnaires=count["questionnaire"], minutes=minutes,
                           summary=summary)


__all__ = ["ITEM_MINUTES", "KNOWN_MEASURES", "KNOWN_MODES", "MAX_DESIGN_BYTES",
           "MAX_TEXT_CHARS", "ParticipantPlan", "StudyDesignError",
           "check_design", "design_file", "load_design", "parse_design", "participant_plan",
           "ready_designs", "session_minutes", "step_minutes", "toml_path"]
