"""What failed when an LM gave no usable answer: one typed cause, for the record and for people.

:class:`LMError` says *that* a call failed past its retries and deadline; :class:`LMFailure` says
*whose* LM it was (which member of the session, on which side: agent, simulated user, judge or
a task's tool), *how* it failed (:data:`FailureKind`), and where (model and endpoint, never a
key, a user name or a query string). ``session.json`` keeps it under ``failure``, the END event
under ``info.failure``, and :meth:`LMFailure.describe` says it in one plain sentence for the
terminal, the panel and the report.

Failure kinds, from what the last attempt of the call ran into:

* ``timeout``: no reply within the attempt's time or the call's deadline (a hung server);
* ``trickle``: the reply had started (status line and headers came) but its body did not end in
  time: a server sending a byte now and then, which no per-read timeout catches;
* ``server_error``: HTTP 5xx, 408 or 409, retried until the retries or the deadline ran out;
* ``rate_limited``: HTTP 429, often with a ``Retry-After`` longer than the deadline left;
* ``unreadable``: a 2xx reply that could not be used (not JSON, no choices, no text);
* ``connection``: no connection could be made;
* ``refused``: a 4xx that retrying cannot fix (bad request, authentication, unknown model);
* ``waiting``: the provider limits of this process kept the call waiting past its deadline;
* ``not_configured``: no model or key is set;
* ``failed``: anything else the provider reported.
"""

from __future__ import annotations

import contextvars
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel

FailureKind = Literal["timeout", "trickle", "server_error", "rate_limited", "unreadable",
                      "connection", "refused", "waiting", "not_configured", "failed"]
#: Which side of the session the failing LM served.
FailingSide = Literal["agent", "user", "judge", "tool"]

#: The failure kinds in words, for a sentence about them.
KIND_WORDS: dict[str, str] = {
    "timeout": "a hang: no answer in time",
    "trickle": "a trickle: the reply started but did not finish in time",
    "server_error": "server errors",
    "rate_limited": "rate limited",
    "unreadable": "replies that could not be read",
    "connection": "no connection",
    "refused": "the request was refused",
    "waiting": "kept waiting by this process's provider limits",
    "not_configured": "not set up",
    "failed": "a failure",
}

SIDE_WORDS: dict[str, str] = {"agent": "agent", "user": "simulated user", "judge": "judge",
                              "tool": "task tool"}

# Set by the retry loop around each attempt, to a one-item list the provider marks True once the
# reply's status line and headers have come: a timeout after that is a trickle, not a hang.
_reply_started: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar(
    "cogym_lm_reply_started", default=None)


def watch_reply_start() -> tuple[list[bool], contextvars.Token[list[bool] | None]]:
    """A fresh flag for one attempt (and the token to reset the variable with)."""
    flag = [False]
    return flag, _reply_started.set(flag)


def stop_watching(token: contextvars.Token[list[bool] | None]) -> None:
    _reply_started.reset(token)


def mark_reply_started() -> None:
    """Called by a provider when the reply's headers have come, before its body is read."""
    flag = _reply_started.get()
    if flag is not None:
        flag[0] = True


def public_endpoint(url: str | None) -> str | None:
    """``url`` without what may be secret: a user name or password, the query and fragment."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    except ValueError:
        return None


class LMFailure(BaseModel):
    """An LM call of a session that failed past its retries and deadline, named by its cause."""

    member: str  # the session's role whose LM failed ("agent", "user"), "judge" or "tools"
    side: FailingSide
    kind: FailureKind
    reason: str  # in plain words, as a teammate was told ("it did not answer within 2 seconds")
    detail: str = ""  # the error for logs: status, last error, attempts (secrets redacted)
    model: str | None = None
    endpoint: str | None = None  # base URL without credentials or query; None: the OpenAI API
    status: int | None = None  # the HTTP status of the last attempt, when it had one
    retry_after: float | None = None  # seconds the server asked to wait (429), when it said
    attempts: int = 0
    purpose: str = ""  # what the call was for ("act", "decide", "judge" ...)

    def whose(self) -> str:
        """"the agent's", "the simulated user's", "the simulated user alice's"."""
        if self.member in (self.side, "tools", "judge"):
            return f"the {SIDE_WORDS[self.side]}'s"
        return f"the {SIDE_WORDS[self.side]} {self.member}'s"

    def plain(self) -> str:
        """In plain words for a person (no model, address or status): "the agent's language
        model failed (it did not answer within 2 seconds)"."""
        return f"{self.whose()} language model failed ({self.reason})"

    def describe(self) -> str:
        """One sentence: "The agent's language model (m at http://host/v1) failed: it did not
        answer within 2 seconds (a hang: no answer in time, 2 attempts)."."""
        where = self.model or "unknown model"
        if self.endpoint:
            where += f" at {self.endpoint}"
        whose = self.whose()
        extra = f", HTTP {self.status}" if self.status else ""
        if self.retry_after is not None:
            extra += f", Retry-After {self.retry_after:g} s"
        if self.attempts > 1:  # "past its retries" is then visible, not only implied
            extra += f", {self.attempts} attempts"
        return (f"{whose[0].upper()}{whose[1:]} language model ({where}) failed: {self.reason} "
                f"({KIND_WORDS[self.kind]}{extra}).")


__all__ = ["KIND_WORDS", "SIDE_WORDS", "FailingSide", "FailureKind", "LMFailure",
           "mark_reply_started", "public_endpoint", "stop_watching", "watch_reply_start"]
