"""Turn a team file into teammate objects for a session."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from importlib.metadata import EntryPoint, entry_points
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

_BUILT_IN_TYPES = frozenset([*AGENT_TYPES, "simulated"])

#: The entry-point group through which installed packages add member types.
MEMBERS_GROUP = "cogym_lab.members"

#: A member type's factory: an import path ``package.module:Class``, an entry point, or the
#: callable itself.
MemberFactory = str | EntryPoint | Callable[..., Any]

_registered_members: dict[str, MemberFactory] = {}


def register_member(name: str, factory: str | Callable[..., Any]) -> None:
    """Let team files name ``name`` as a member type (a Jupyter server does this for each entry
    of ``c.CogymLab.members``). ``factory`` is ``package.module:Class`` or the class itself."""
    if name in _BUILT_IN_TYPES:
        raise ValueError(f"{name!r} is a built-in member type; register yours under another name.")
    _registered_members[name] = factory


def unregister_member(name: str) -> None:
    """Undo :func:`register_member` (nothing happens for a name never registered)."""
    _registered_members.pop(name, None)


def member_types() -> dict[str, MemberFactory]:
    """Every member type a team file may name besides the agent types and ``simulated``: the
    example teammates, entry points of the ``cogym_lab.members`` group, and registered ones."""
    found: dict[str, MemberFactory] = dict(EXAMPLE_TEAMMATES)
    found.update({point.name: point for point in entry_points(group=MEMBERS_GROUP)})
    found.update(_registered_members)
    return found


def _member_factory(role: str, type_name: str) -> Callable[..., Any]:
    """The factory of a registered member type, named by its name or by its import path.

    Team files never import arbitrary code: ``os:system`` or any other ``package.module:name``
    that nobody registered is refused, because a team file may come from someone else."""
    known = member_types()
    factory = known.get(type_name)
    if factory is None:  # a registered type may also be named by its import path
        factory = next((f for f in known.values() if _import_path(f) == type_name), None)
    if factory is None:
        names = sorted([*AGENT_TYPES, "simulated", *known])
        raise ValueError(
            f"Member {role!r} has unknown type {type_name!r}: it is not a registered member "
            f"type. Use one of {', '.join(names)}, or register yours (an entry point in the "
            f"{MEMBERS_GROUP!r} group, or c.CogymLab.members on a Jupyter server).")
    if isinstance(factory, EntryPoint):
        return factory.load()
    return load_object(factory) if isinstance(factory, str) else factory


def _import_path(factory: MemberFactory) -> str | None:
    if isinstance(factory, EntryPoint):
        return factory.value
    return factory if isinstance(factory, str) else None


def build_member(role: str, member: MemberConfig, env: CoEnv,
                 lm_arguments: Mapping[str, Any] | None = None) -> Any:
    """The teammate object for one member (``None`` for a person, who joins from a UI).

    Raises ``LMNotConfigured`` when an LM member has no model, and ``ValueError`` for a type
    that is not registered (see :func:`member_types`).
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
    return _member_factory(role, member.type)(**options)


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
