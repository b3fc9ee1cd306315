"""Team files: who is on the team, what each member is, and which LM it uses.

A team is a TOML file::

    name = "collaborative-planning"
    description = "..."
    plans = false             # true: the task gets an interactive plan (docs/plans.md)

    [session]                 # optional SessionConfig overrides
    idle_seconds = 30

    [members.agent]
    type = "collaborative-planning"   # a registered member type (its kind comes with it)
    [members.agent.lm]        # any LMConfig field: model, base_url, temperature, timeout, ...
    model = "gpt-4o"
    [members.agent.options]   # keyword arguments of the member's class
    history_window = 10

    [tools.lm]                # optional: the LM of the task's own tools (drafting assistant,
    model = "gpt-4o"          # judges, plan parser); without it they use the first agent's

Ready teams ship with the package, or with a task through the ``cogym_lab.teams`` entry points
(``cogym-lab teams`` lists them); a path to your own file works wherever a team name does on your
own machine (the command line, a kernel). A Jupyter server takes
names only: :func:`load_registered_team` knows the ready teams and those its configuration adds.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cogym_lab.core.messages import MemberKind
from cogym_lab.core.plugins import installed_entry_points


class MemberConfig(BaseModel):
    """One member of a team: a registered member ``type`` (whose registration says its kind),
    or ``kind = "person"`` for a seat a person takes from a panel."""

    model_config = ConfigDict(extra="forbid")

    kind: MemberKind | None = None  # optional: a type's kind comes from its registration
    type: str = ""  # a registered member type: collaborative, simulated, example-agent, ...
    lm: dict[str, Any] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _type_or_person(self) -> MemberConfig:
        if self.kind == "person" and self.type:
            raise ValueError(f"a person seat has no type (got {self.type!r})")
        if self.kind != "person" and not self.type:
            raise ValueError('give the member a registered type, or kind = "person"')
        return self

    @property
    def is_person(self) -> bool:
        return self.kind == "person"


class ToolsConfig(BaseModel):
    """The LM settings of the task's own tools (drafting, judging, parsing)."""

    model_config = ConfigDict(extra="forbid")

    lm: dict[str, Any] = Field(default_factory=dict)


class TeamConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    tasks: list[str] | None = None  # the tasks it can play; None: any
    #: The team works through an interactive plan: its sessions' tasks are made with plans
    #: (``make_env(task, plans=True)``, docs/plans.md).
    plans: bool = False
    session: dict[str, Any] = Field(default_factory=dict)
    members: dict[str, MemberConfig]
    tools: ToolsConfig | None = None

    def kinds(self) -> dict[str, MemberKind]:
        """Each role's kind: ``person``, or the one its member type is registered with. A
        ``kind`` the file gives that contradicts the registration is an error."""
        from cogym_lab.members import member_type

        kinds: dict[str, MemberKind] = {}
        for role, member in self.members.items():
            if member.is_person:
                kinds[role] = "person"
                continue
            registered = member_type(member.type).kind
            if member.kind is not None and member.kind != registered:
                raise ValueError(f"Member {role!r} of team {self.name!r} says kind "
                                 f"{member.kind!r}, but its type {member.type!r} is registered "
                                 f"as {registered!r}.")
            kinds[role] = registered
        return kinds

    def plays(self, task: str) -> bool:
        return self.tasks is None or task in self.tasks

    def check_plays(self, task: str) -> None:
        """Raise ``ValueError`` when this team cannot play ``task``."""
        if not self.plays(task):
            raise ValueError(f"Team {self.name!r} plays only {', '.join(self.tasks or [])}, "
                             f"not {task!r}.")

    def tools_lm_table(self) -> dict[str, Any]:
        """The team file's LM settings for the task's tools: ``[tools.lm]``, else the first
        agent's ``[members.ROLE.lm]`` (the team's main model), else none."""
        if self.tools is not None:
            return dict(self.tools.lm)
        kinds = self.kinds()
        agent = next((m for role, m in self.members.items() if kinds[role] == "agent"), None)
        return dict(agent.lm) if agent is not None else {}


#: The entry-point group through which a package (a task's, say) ships ready teams: each entry
#: names a module attribute that holds the path of a team file.
TEAMS_GROUP = "cogym_lab.teams"


def ready_teams() -> dict[str, Path]:
    """The ready team files, by name: those of this package and those installed packages ship
    through the ``cogym_lab.teams`` entry-point group."""
    folder = files("cogym_lab.teams")
    ready = {entry.name.removesuffix(".toml"): Path(str(entry))
             for entry in folder.iterdir() if entry.name.endswith(".toml")}
    for entry_point in installed_entry_points(TEAMS_GROUP):
        ready.setdefault(entry_point.name, Path(entry_point.load()))
    return ready


def load_team(name_or_path: str | Path) -> TeamConfig:
    """A ready team by name, or a team file by path."""
    path = ready_teams().get(str(name_or_path)) or Path(name_or_path)
    if not path.is_file():
        raise FileNotFoundError(f"No team {str(name_or_path)!r}: give a file path or one of "
                                f"{', '.join(sorted(ready_teams()))}.")
    return _read_team(path)


def registered_teams(extra: Mapping[str, str | Path] | None = None) -> dict[str, Path]:
    """The ready teams, and ``extra`` (name -> team file, e.g. a server's configuration) over
    them."""
    return {**ready_teams(), **{name: Path(path) for name, path in (extra or {}).items()}}


def load_registered_team(name: str, extra: Mapping[str, str | Path] | None = None) -> TeamConfig:
    """A registered team by name: a ready team or one of ``extra``. Never a path, so that a
    request from someone else cannot make this process read a file of its choosing."""
    known = registered_teams(extra)
    if not isinstance(name, str) or name not in known:
        shown = name if isinstance(name, str) and len(name) <= 80 else "(that value)"
        raise FileNotFoundError(f"No team {shown!r}: name one of {', '.join(sorted(known))} "
                                "(team file paths are not accepted here).")
    return _read_team(known[name])


def _read_team(path: Path) -> TeamConfig:
    with path.open("rb") as handle:
        data = tomllib.load(handle)
    data.setdefault("name", path.stem)
    return TeamConfig.model_validate(data)
