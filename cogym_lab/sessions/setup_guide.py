"""The member that stands in for one whose LM is not configured.

A person who opens a panel without having set up a model should still get a working workspace,
and should learn in the chat what to set. So a hosted session replaces each member that needs an
LM and has none by a :class:`SetupGuide` (``build_session(spec, guides=True)``), which explains
the missing settings and otherwise waits.
"""

from __future__ import annotations

from cogym_lab.core import Action, Notification, SessionContext
from cogym_lab.core.grammar import format_action
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
