"""Team files: who is on the team, what each member is, and which LM it uses.

A team is a TOML file::

    name = "collaborative-planning"
    description = "..."

    [session]                 # optional SessionConfig overrides
    idle_seconds = 30

    [members.agent]
    kind = "agent"            # agent | user | person
    type = "collaborative-planning"
    [members.agent.lm]        # any LMConfig field: model, base_url, temperature, timeout, ...
    model = "gpt-4o"
    [members.agent.options]   # keyword arguments of the member's class
    history_window = 10

    [tools.lm]                # optional: the LM of the task's own tools (drafting assistant,
    model = "gpt-4o"          # judges, plan parser); without it they use the first agent's

Ready teams ship with the package (``cogym-lab teams`` lists them); a path to your own file works
wherever a team name does on your own machine (the command line, a kernel). A Jupyter server takes
names only: :func:`load_registered_team` knows the ready teams and those its configuration adds.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cogym_lab.core.messages import MemberKind


class MemberConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: MemberKind = "agent"
    type: str = ""  # an agent type, "simulated", "example-agent", or package.module:Class
    lm: dict[str, Any] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)


class ToolsConfig(BaseModel):
    """The LM settings of the task's own tools (drafting, judging, parsing)."""

    model_config = ConfigDict(extra="forbid")

    lm: dict[str, Any] = Field(default_factory=dict)


class TeamConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    session: dict[str, Any] = Field(default_factory=dict)
    members: dict[str, MemberConfig]
    tools: ToolsConfig | None = None

    def tools_lm_table(self) -> dict[str, Any]:
        """The team file's LM settings for the task's tools: ``[tools.lm]``, else the first
        agent's ``[members.ROLE.lm]`` (the team's main model), else none."""
        if self.tools is not None:
            return dict(self.tools.lm)
        agent = next((m for m in self.members.values() if m.kind == "agent"), None)
        return dict(agent.lm) if agent is not None else {}


def ready_teams() -> dict[str, Path]:
    """The team files that ship with the package, by name."""
    folder = files("cogym_lab.teams")
    return {entry.name.removesuffix(".toml"): Path(str(entry))
            for entry in folder.iterdir() if entry.name.endswith(".toml")}


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
