"""Find member types by name: the built-in ones, installed packages' ``cogym_lab.members`` entry
points, and types registered in code (a Jupyter server registers those its configuration names).

A team file names member types only from here, never an arbitrary ``package.module:name``: a
team file may come from someone else, and naming a callable would run it.
"""

from __future__ import annotations

import importlib
from importlib.metadata import EntryPoint

from cogym_lab.core.member import MemberType
from cogym_lab.core.plugins import installed_entry_points
from cogym_lab.errors import CogymError

#: The entry-point group through which installed packages add member types.
MEMBERS_GROUP = "cogym_lab.members"

#: The agents' and the simulated user's types. A task's own members (the example task's
#: rule-based team) come through entry points, like any other package's.
_BUILTIN = {
    "autonomous": "cogym_lab.agents.members:AUTONOMOUS",
    "collaborative": "cogym_lab.agents.members:COLLABORATIVE",
    "collaborative-planning": "cogym_lab.agents.members:COLLABORATIVE_PLANNING",
    "plan-aware": "cogym_lab.agents.members:PLAN_AWARE",
    "simulated": "cogym_lab.users.members:SIMULATED_USER",
    "replay": "cogym_lab.users.replay:REPLAY_USER",  # the noise study's fixed user side
    # a program that is an MCP client, launched in the agent's seat (docs/outside-agents.md)
    "mcp-client": "cogym_lab.mcp_seat.mcp_client_member:MCP_CLIENT",
    "acp": "cogym_lab.mcp_seat.acp_member:ACP",  # an Agent Client Protocol agent, launched
}
_registered: dict[str, MemberType | str] = {}


class UnknownMemberType(CogymError, ValueError):
    """A team named a member type nobody registered."""


def register_member(member: MemberType | str, name: str | None = None) -> None:
    """Let team files name a member type: a :class:`MemberType`, or the ``package.module:NAME``
    path of one (loaded when first used). ``name`` defaults to the type's own name.

    Built-in names cannot be taken over."""
    key = name or (member.name if isinstance(member, MemberType) else None)
    if not key:
        raise ValueError("Give the name a path-registered member type is known by.")
    if key in _BUILTIN:
        raise ValueError(f"{key!r} is a built-in member type; register yours under another name.")
    _registered[key] = member


def unregister_member(name: str) -> None:
    """Undo :func:`register_member` (nothing happens for a name never registered)."""
    _registered.pop(name, None)


def member_type_names() -> list[str]:
    """Every name a team file may use, sorted."""
    return sorted({*_BUILTIN, *_registered,
                   *(point.name for point in installed_entry_points(MEMBERS_GROUP))})


def member_type(name: str) -> MemberType:
    """The member type called ``name``. Raises :class:`UnknownMemberType` saying which exist and
    how to register one, and ``TypeError`` when a registration names something that is not a
    :class:`MemberType`."""
    found: MemberType | str | EntryPoint | None = _registered.get(name)
    if found is None:
        found = next((p for p in installed_entry_points(MEMBERS_GROUP) if p.name == name), None)
    if found is None:
        found = _BUILTIN.get(name)
    if found is None:
        raise UnknownMemberType(
            f"{name!r} is not a registered member type. Use one of "
            f"{', '.join(member_type_names())}, or register yours: an entry point in the "
            f"{MEMBERS_GROUP!r} group naming a cogym_lab MemberType, or "
            f"c.CogymLabApp.members on a Jupyter server.")
    loaded = found if isinstance(found, MemberType) else _load(found)
    if not isinstance(loaded, MemberType):
        raise TypeError(f"Member type {name!r} is registered as {type(loaded).__name__}, not a "
                        "cogym_lab.core.member.MemberType.")
    return loaded


def _load(where: str | EntryPoint) -> object:
    # Not isinstance(EntryPoint): where the importlib_metadata backport is imported (jupyter-ai
    # does), installed packages' entry points are the backport's class
    if not isinstance(where, str):
        return where.load()
    module, _, attribute = where.partition(":")
    if not attribute:
        raise ValueError(f"Expected 'package.module:NAME', got {where!r}")
    return getattr(importlib.import_module(module), attribute)


__all__ = ["MEMBERS_GROUP", "UnknownMemberType", "member_type", "member_type_names",
           "register_member", "unregister_member"]
