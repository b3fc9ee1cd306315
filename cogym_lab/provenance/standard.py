"""Standard or custom: whether a session's or a run's team, prompts and tasks are the shipped ones.

As in τ²-bench, a result is *standard* when nothing that decides it was changed: numbers from
standard runs of the same version and protocol compare; a custom one says what differs.

* **team**: the team file is a ready team (``cogym-lab teams``: this package's, or one an
  installed package ships) and equal to it, leaving out each member's and the tools' ``lm``
  tables (which model a run uses is recorded beside, under ``lms``) and the seats people take.
  A file of your own, or a ready team's name with other members, options or ``[session]``
  settings, is custom.
* **prompts**: every prompt file of the package is the one shipped
  (:mod:`cogym_lab.provenance.shipped_prompts`).
* **instances**: a session's task is one of the protocol's instances (not a task of your own,
  nor other arguments); a run ran the protocol's whole instance set, not a part of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cogym_lab.envs.registry import task_class
from cogym_lab.teams.config import TeamConfig, load_team, ready_teams

__all__ = ["instance_differences", "run_instance_differences", "team_differences"]

#: Session arguments that say where or how an instance runs, not which one it is.
_NOT_THE_INSTANCE = frozenset({"protocol", "data_dir", "plans", "notebook", "roles"})


def _comparable(team: TeamConfig, people: Iterable[str]) -> dict[str, Any]:
    """The parts of ``team`` that decide a result, as plain data."""
    data = team.model_dump(mode="json", exclude={"description"})
    seats = set(people)
    members = {}
    for role, member in data["members"].items():
        if role in seats:
            continue
        member.pop("lm", None)
        members[role] = member
    data["members"] = members
    if data.get("tools") is not None:
        data["tools"].pop("lm", None)
        if not data["tools"]:
            data["tools"] = None
    return data


def _changed(shipped: Any, used: Any, where: str = "") -> list[str]:
    """Where ``used`` differs from ``shipped``: dotted paths, first level that differs."""
    if isinstance(shipped, dict) and isinstance(used, dict):
        paths = []
        for key in sorted(set(shipped) | set(used)):
            path = f"{where}.{key}" if where else str(key)
            if key not in used:
                paths.append(f"{path} (left out)")
            elif key not in shipped:
                paths.append(f"{path} (added)")
            else:
                paths.extend(_changed(shipped[key], used[key], path))
        return paths
    return [] if shipped == used else [where or "(the whole team)"]


def team_differences(team: TeamConfig | None, people: Iterable[str] = ()) -> list[str]:
    """How ``team`` differs from the ready team of its name, one phrase each; none when it is
    that team (see the module's docstring). ``None``: members given in code, no team file."""
    if team is None:
        return ["the members were given in code, not by a team file"]
    path = ready_teams().get(team.name)
    if path is None:
        return [f"{team.name!r} is not a ready team"]
    try:
        shipped = load_team(path)
    except (OSError, ValueError) as error:
        return [f"the ready team {team.name!r} cannot be read: {error}"]
    seats = list(people)
    changed = _changed(_comparable(shipped, seats), _comparable(team, seats))
    return [f"{path} differs from the ready team {team.name!r}" for path in changed]


def instance_differences(task: str, protocol: str, env: Any) -> list[str]:
    """Why the session's task is not one of ``protocol``'s instances of ``task``; none when it
    is. A dataset task's instance is one when it was read from the dataset; another task's when
    its arguments are those of one of its instances."""
    factory = task_class(task)
    if factory is None:
        return [f"{task!r} is not a registered task"]
    if hasattr(env, "reads_dataset") and hasattr(env, "instance"):
        return [] if env.reads_dataset else ["a task of your own, not one of the dataset's"]
    try:
        arguments = env.env_args()
        instances = factory.instances(protocol) if hasattr(factory, "instances") else [{}]
    except Exception as error:  # noqa: BLE001 - a task that cannot list them is not standard
        return [f"the task's instances could not be listed: {error}"]
    used = _instance_part(arguments)
    if any(_instance_part(known) == used for known in instances):
        return []
    return ["its arguments are not those of any of the protocol's instances"]


def _instance_part(arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in arguments.items() if key not in _NOT_THE_INSTANCE}


def run_instance_differences(selected: Sequence[int], count: int) -> list[str]:
    """Why a run's instances are not the protocol's whole set of ``count``; none when they are."""
    if sorted(set(selected)) == list(range(count)):
        return []
    return [f"{len(set(selected))} of the protocol's {count} instances"]
