"""Member types: the registry through which team files name agents and simulated users."""

from cogym_lab.core.member import Member, MemberSetup, MemberType, TaskDescription
from cogym_lab.members.registry import (
    MEMBERS_GROUP,
    UnknownMemberType,
    member_type,
    member_type_names,
    register_member,
    unregister_member,
)

__all__ = ["MEMBERS_GROUP", "Member", "MemberSetup", "MemberType", "TaskDescription",
           "UnknownMemberType", "member_type", "member_type_names", "register_member",
           "unregister_member"]
