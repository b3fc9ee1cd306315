"""Hosted teams when no LM is configured.

A person who opens a panel without having set up a model should still get a working workspace,
and should learn in the chat what to set. So each member that needs an LM and has none is
replaced by a :class:`SetupGuide`, which explains the missing settings and otherwise waits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cogym_lab.core import Action, Notification, SessionContext, format_action
from cogym_lab.core.messages import MemberKind

NOTEBOOK_HINT = ("From a notebook you can also pass the model when you start a session: "
                 "`%cogym new TASK --model NAME` or `cogym_lab.new_session(TASK, model=NAME)`; "
                 "set OPENAI_BASE_URL first when the model is served by another "
                 "OpenAI-compatible server.")


class SetupGuide:
    """Stands in for a member whose LM is not configured.

    It says once what is missing and how to fix it, answers a person's messages with a short
    reminder (a few times at most, so two guides never talk forever), and otherwise waits.
    """

    def __init__(self, reason: str, kind: MemberKind = "agent", max_reminders: int = 3) -> None:
        self.reason = reason
        self.kind = kind
        self.max_reminders = max_reminders

    def start(self, context: SessionContext) -> None:
        self.role = context.role
        self.people = {member.role for member in context.team if member.kind == "person"}
        self.explained = False
        self.reminders = 0

    async def act(self, notification: Notification) -> str | None:
        if not self.explained:
            self.explained = True
            return _message(f"I cannot act in this session: {self.reason} {NOTEBOOK_HINT} "
                            "After that, start a new session. Until then the workspace is "
                            "yours to use, and everything you do is recorded.")
        asked = [m for m in notification.new_messages if m.sender in self.people]
        if asked and self.reminders < self.max_reminders:
            self.reminders += 1
            return _message("I still have no language model, so I cannot help yet. "
                            f"{self.reason}")
        return None

    def end(self, final: Notification) -> None:
        """Nothing to save: this member made no LM calls."""


def _message(text: str) -> str:
    return format_action(Action(name="SEND_TEAMMATE_MESSAGE", args={"message": text}))


def build_team_with_guides(team: Any, env: Any,
                           lm_arguments: Mapping[str, Mapping[str, Any]] | None = None,
                           ) -> tuple[dict[str, Any], dict[str, MemberKind], list[str]]:
    """Like ``build_team``, but a member whose LM is missing becomes a :class:`SetupGuide`.

    Returns the teammates, their kinds, and the roles that got a guide. Other errors (an
    unknown member type) still raise.
    """
    from cogym_lab.lm import LMNotConfigured
    from cogym_lab.teams.build import build_member

    lm_arguments = lm_arguments or {}
    members: dict[str, Any] = {}
    guided: list[str] = []
    for role, member in team.members.items():
        arguments = {**lm_arguments.get("*", {}), **lm_arguments.get(role, {})}
        try:
            members[role] = build_member(role, member, env, arguments)
        except LMNotConfigured as error:
            members[role] = SetupGuide(str(error), kind=member.kind)
            guided.append(role)
    return members, {role: member.kind for role, member in team.members.items()}, guided
