"""Turn a team file into teammate objects for a session."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from cogym_lab.agents import AGENT_TYPES
from cogym_lab.core import CoEnv
from cogym_lab.core.messages import MemberKind
from cogym_lab.envs.registry import load_object
from cogym_lab.lm import LM, LMConfig, LMNotConfigured, make_lm
from cogym_lab.nodes.session import SessionConfig
from cogym_lab.teams.config import MemberConfig, TeamConfig
from cogym_lab.users import Persona, SimulatedUser

EXAMPLE_TEAMMATES = {
    "example-agent": "cogym_lab.envs.todo:ExampleAgent",
    "example-user": "cogym_lab.envs.todo:ExampleUser",
}


def build_member(role: str, member: MemberConfig, env: CoEnv,
                 lm_arguments: Mapping[str, Any] | None = None) -> Any:
    """The teammate object for one member (``None`` for a person, who joins from a UI).

    Raises ``LMNotConfigured`` when an LM member has no model, and ``ValueError`` for an
    unknown type.
    """
    if member.kind == "person":
        return None
    options = dict(member.options)
    if member.type in AGENT_TYPES:
        return AGENT_TYPES[member.type](_lm(role, member, lm_arguments), **options)
    if member.type == "simulated":
        persona_fields = {f.name for f in fields(Persona)}
        persona = Persona(**{k: options.pop(k) for k in list(options) if k in persona_fields})
        return SimulatedUser(_lm(role, member, lm_arguments), env.hidden_information(),
                             persona=persona, **options)
    path = EXAMPLE_TEAMMATES.get(member.type, member.type)
    if ":" not in path:
        known = sorted([*AGENT_TYPES, "simulated", *EXAMPLE_TEAMMATES])
        raise ValueError(f"Member {role!r} has unknown type {member.type!r}; use one of "
                         f"{', '.join(known)} or package.module:Class.")
    return load_object(path)(**options)


def build_team(team: TeamConfig, env: CoEnv,
               lm_arguments: Mapping[str, Mapping[str, Any]] | None = None,
               ) -> tuple[dict[str, Any], dict[str, MemberKind]]:
    """Teammates and kinds by role, ready for ``Session(env, members, kinds=kinds)``.

    ``lm_arguments`` maps a role (or ``"*"`` for every member) to LM settings that override the
    environment and the team file.
    """
    lm_arguments = lm_arguments or {}
    members = {role: build_member(role, member, env,
                                  {**lm_arguments.get("*", {}), **lm_arguments.get(role, {})})
               for role, member in team.members.items()}
    return members, {role: member.kind for role, member in team.members.items()}


#: The pseudo-role whose LM settings (``--model tools=...``) go to the task's own tools only.
TOOLS = "tools"


def tool_lm_config(team: TeamConfig,
                   lm_arguments: Mapping[str, Mapping[str, Any]] | None = None) -> LMConfig:
    """The LM settings of the task's own tools: arguments for every member (``"*"``) and for
    ``"tools"``, over the environment, over the team file's tools table."""
    lm_arguments = lm_arguments or {}
    arguments = {**lm_arguments.get("*", {}), **lm_arguments.get(TOOLS, {})}
    toml = {k: v for k, v in team.tools_lm_table().items() if k != "price"}
    return LMConfig.resolve(arguments=arguments, toml=toml)


def attach_tool_lms(env: CoEnv, config: LMConfig) -> dict[str, LM]:
    """Give each empty tool-LM slot of ``env`` (an attribute named ``*_lm``: a drafting
    assistant, a judge, a plan parser) its own LM built from ``config``, and return them by
    slot. Without a model nothing is attached: the tool then says what to set when used."""
    attached: dict[str, LM] = {}
    for slot, value in list(vars(env).items()):
        if not slot.endswith("_lm"):
            continue
        if value is None:
            try:
                value = make_lm(config, member=f"the {slot.removesuffix('_lm')} of {env.name}")
            except LMNotConfigured:
                continue
            setattr(env, slot, value)
        if isinstance(value, LM):
            attached[slot] = value
    return attached


def session_config(team: TeamConfig, **overrides: Any) -> SessionConfig:
    """The team's ``[session]`` settings with ``overrides`` on top."""
    return SessionConfig(**{**team.session, **{k: v for k, v in overrides.items()
                                               if v is not None}})


def _lm(role: str, member: MemberConfig, arguments: Mapping[str, Any] | None) -> Any:
    config = LMConfig.resolve(arguments=arguments, toml=member.lm)
    return make_lm(config, member=role)
