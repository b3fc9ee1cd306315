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
from cogym_lab.lm.config import LMConfig

#: Added to the command-line advice of a session that did not come from a notebook (one made
#: over the REST API may still be watched from one).
NOTEBOOK_HINT = ("From a notebook, run `%cogym config model=NAME` (with `api_key=KEY` for the "
                 "OpenAI API, or `base_url=URL` for another OpenAI-compatible server) before "
                 "you start a session: it is sent with every session you start there.")
#: How to start again from a notebook once the settings are there.
NOTEBOOK_AGAIN = ("then start a new session: run your `%cogym new ...` cell again with "
                  "`--again`, or call `cogym_lab.new_session(...)`.")


def missing_lm_reason(role: str, config: LMConfig, fallback: str,
                      origin: str | None = None) -> str:
    """Why ``role`` has no LM and how to fix it, for a person where the session came from.

    ``config`` is the member's LM settings as resolved; ``fallback`` the error's own text,
    which speaks to a command line (environment variables, ``--model``, team files). For a
    session started from a notebook (``origin == "notebook"``) the advice is what works there:
    ``%cogym config`` (in a notebook the server's environment cannot be set)."""
    if origin != "notebook":
        return fallback
    if not config.model:
        return (f"No model is set for {role!r}. In the notebook, run `%cogym config model=NAME` "
                "(add `api_key=KEY` for the OpenAI API, or `base_url=URL` for another "
                "OpenAI-compatible server: vLLM, Ollama, llama.cpp server, LM Studio), "
                + NOTEBOOK_AGAIN)
    needs_key = config.provider == "openai" and config.base_url is None and (
        config.api_key is None or not config.api_key.get_secret_value())
    if needs_key:
        return (f"The LM for {role!r} ({config.describe()}) needs an API key. In the notebook, "
                "run `%cogym config api_key=KEY` (or `%cogym config base_url=URL` for another "
                "OpenAI-compatible server, which needs no key), " + NOTEBOOK_AGAIN)
    return fallback  # a local model file's problem: its own message says what to do


class SetupGuide:
    """Stands in for a member whose LM is not configured.

    It says once what is missing and how to fix it, answers a person's messages with a short
    reminder (a few times at most, so two guides never talk forever), and otherwise waits.
    """

    def __init__(self, reason: str, kind: MemberKind = "agent", max_reminders: int = 3,
                 hint: str = NOTEBOOK_HINT) -> None:
        self.reason = reason
        self.kind = kind
        self.max_reminders = max_reminders
        #: Said after the reason: the notebook way, for a session that speaks to a command line
        #: (empty when the reason already speaks to a notebook).
        self.hint = hint

    def start(self, context: SessionContext) -> None:
        self.role = context.role
        self.people = {member.role for member in context.team if member.kind == "person"}
        self.explained = False
        self.reminders = 0

    async def act(self, notification: Notification) -> str | None:
        if not self.explained:
            self.explained = True
            then = f" {self.hint} After that, start a new session." if self.hint else ""
            return _message(f"I cannot act in this session: {self.reason}{then} Until then the "
                            "workspace is yours to use, and everything you do is recorded.")
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
