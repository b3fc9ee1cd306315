"""Turn a team file into teammate objects for a session."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cogym_lab.core import CoEnv
from cogym_lab.core.member import MemberSetup, TaskDescription
from cogym_lab.core.messages import MemberKind
from cogym_lab.lm import LM, LMConfig, LMNotConfigured, make_lm
from cogym_lab.members import member_type
from cogym_lab.teams.config import MemberConfig, TeamConfig
from cogym_lab.users.traits import check_traits


def build_member(role: str, member: MemberConfig, env: CoEnv,
                 lm_arguments: Mapping[str, Any] | None = None) -> Any:
    """The member object for one role (``None`` for a person, who joins from a UI), built by
    its registered type from the role, the task's public description, its LM (when the type
    uses one) and, for a simulated user, the task's hidden information.

    Raises ``LMNotConfigured`` when an LM member has no model, and ``ValueError`` for a type
    nobody registered (see :mod:`cogym_lab.members`).
    """
    if member.is_person:
        return None
    registered = member_type(member.type)
    options = dict(member.options)
    if "traits" in options:  # checked here, so every member type gets the same clear error
        if not registered.takes_traits:
            raise ValueError(f"member type {member.type!r} takes no traits (the simulated user "
                             f"and the rule-based users that implement them do)")
        options["traits"] = list(check_traits(options["traits"]))
    lm = _lm(role, member, lm_arguments) if registered.uses_lm else None
    hidden = env.hidden_information() if registered.kind == "user" else None
    return registered.build(MemberSetup(role=role, task=TaskDescription.of(env), lm=lm,
                                        hidden_information=hidden, options=options))


def with_traits(team: TeamConfig, traits: Iterable[str], roles: Iterable[str] | None = None
                ) -> TeamConfig:
    """``team`` with ``traits`` given to the members of ``roles`` (default: every member
    of kind ``user``, the simulated people), on top of any the team file gives them."""
    names = check_traits(list(traits))
    if not names:
        return team
    kinds = team.kinds()
    chosen = set(roles) if roles is not None else {r for r, k in kinds.items() if k == "user"}
    if not chosen & {r for r, m in team.members.items() if not m.is_person}:
        raise ValueError(f"team {team.name!r} has no simulated user to give traits to")
    members = {}
    for role, member in team.members.items():
        if role in chosen and not member.is_person:
            given = check_traits(member.options.get("traits"))
            options = {**member.options, "traits": list(dict.fromkeys([*given, *names]))}
            members[role] = member.model_copy(update={"options": options})
        else:
            members[role] = member
    return team.model_copy(update={"members": members})


def build_team(team: TeamConfig, env: CoEnv,
               lm_arguments: Mapping[str, Mapping[str, Any]] | None = None,
               ) -> tuple[dict[str, Any], dict[str, MemberKind]]:
    """Teammates and kinds by role, ready for ``Session(env, members, kinds=kinds)``.

    ``lm_arguments`` maps a role (or ``"*"`` for every member) to LM settings that override the
    environment and the team file. The members' LMs (``member.lm``) are the caller's to close
    (``await lm.aclose()``) once a session awaited on the caller's loop has ended: a session
    closes only the LMs ``build_session`` made for it (``Session.run_sync`` closes every LM
    client of the loop it owns).
    """
    lm_arguments = lm_arguments or {}
    kinds = team.kinds()  # checked first: a contradictory kind is an error before any LM
    members = {role: build_member(role, member, env,
                                  {**lm_arguments.get("*", {}), **lm_arguments.get(role, {})})
               for role, member in team.members.items()}
    return members, kinds


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
                built = make_lm(config, member=f"the {slot.removesuffix('_lm')} of {env.name}")
            except LMNotConfigured:
                continue
            setattr(env, slot, built)
            attached[slot] = built
        elif isinstance(value, LM):
            attached[slot] = value
    return attached


def _lm(role: str, member: MemberConfig, arguments: Mapping[str, Any] | None) -> Any:
    config = LMConfig.resolve(arguments=arguments, toml=member.lm)
    return make_lm(config, member=role)
