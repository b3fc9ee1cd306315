"""The LM interface every agent, simulated user and judge talks to.

One async method, :meth:`LM.complete`, with retries, token and latency accounting, and a call log
handled by the implementation. Callers handle :class:`LMError`, raised once retries are spent or
the call's deadline (``LMConfig.deadline``) has passed, whichever comes first.

Every reply text is made valid Unicode here (:func:`cogym_lab.core.text.clean_text`), in one place
for every provider, before the caller, the meter or the call log sees it: a reply may carry a lone
surrogate (a JSON ``"\\ud83d"``), which no UTF-8 file or CRDT document can hold.
"""

from __future__ import annotations

import abc
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogym_lab.core.text import clean_text
from cogym_lab.lm.calllog import call_record, redact, write_call
from cogym_lab.lm.config import LMConfig

log = logging.getLogger(__name__)

# OpenAI chat format: [{"role": "system" | "user" | "assistant", "content": "..."}]
Messages = list[dict[str, str]]


#: What an :class:`LMError` says to a teammate when its raiser gave no plainer reason.
DEFAULT_REASON = "it gave no usable answer"


class LMError(RuntimeError):
    """The LM gave no usable answer after every retry, or within its deadline.

    The message says why, for logs and developers (model, endpoint, HTTP status ...). ``reason``
    says it in plain words for a teammate in the chat ("it did not answer within 120 seconds").
    """

    def __init__(self, message: str, *, reason: str = DEFAULT_REASON) -> None:
        super().__init__(message)
        self.reason = reason


class LMNotConfigured(LMError):
    """No model or endpoint is set. The message says exactly what to set."""

    def __init__(self, message: str, *, reason: str = "it is not set up") -> None:
        super().__init__(message, reason=reason)


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class Completion:
    text: str
    usage: Usage
    latency: float  # seconds, all attempts included
    model: str
    attempts: int = 1


@dataclass
class UsageMeter:
    """Running totals for one member's LM."""

    calls: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency: float = 0.0
    by_purpose: dict[str, dict[str, float]] = field(default_factory=dict)

    def record(self, purpose: str, usage: Usage, latency: float) -> None:
        self.calls += 1
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.latency += latency
        row = self.by_purpose.setdefault(purpose or "other", {"calls": 0, "prompt_tokens": 0,
                                                              "completion_tokens": 0,
                                                              "latency": 0.0})
        row["calls"] += 1
        row["prompt_tokens"] += usage.prompt_tokens
        row["completion_tokens"] += usage.completion_tokens
        row["latency"] += latency

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "failures": self.failures,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.total_tokens, "latency": round(self.latency, 4),
                "by_purpose": self.by_purpose}


class LM(abc.ABC):
    """A language model endpoint as one member uses it."""

    def __init__(self, config: LMConfig) -> None:
        self.config = config
        self.meter = UsageMeter()
        self.log_path: Path | None = None
        #: Called with (messages, purpose) for every call, answered or failed: the session's
        #: leakage guard reads every prompt an agent's LM is given through this.
        self.prompt_watchers: list[Callable[[Messages, str], None]] = []

    def log_to(self, path: str | Path | None) -> None:
        """Append every call (prompt, completion, usage, latency; secrets redacted) to ``path``,
        rotated at ``config.log_max_bytes`` (see :mod:`cogym_lab.lm.calllog`)."""
        self.log_path = Path(path) if path else None

    @abc.abstractmethod
    async def complete(self, messages: Messages, *, purpose: str = "",
                       max_tokens: int | None = None, stop: list[str] | None = None) -> Completion:
        """One chat completion. Raises :class:`LMError` when every retry failed."""

    # -- what every provider does around a call ------------------------------------------------

    @property
    def secrets(self) -> list[str]:
        """Strings masked in call logs and error messages."""
        return [self.config.api_key.get_secret_value()] if self.config.api_key else []

    def _succeed(self, messages: Messages, purpose: str, text: str, usage: Usage,
                 started: float, attempts: int) -> Completion:
        """Count and log a good answer; the completion for the caller, its text valid Unicode."""
        text = clean_text(text)
        latency = time.monotonic() - started
        self.meter.record(purpose, usage, latency)
        self._log(messages, purpose, text, usage, latency, attempts, None)
        return Completion(text=text, usage=usage, latency=latency,
                          model=self.config.model or "", attempts=attempts)

    def _fail(self, messages: Messages, purpose: str, started: float, attempts: int,
              message: str, reason: str = DEFAULT_REASON) -> LMError:
        """Count and log a final failure; the error for the caller to raise.

        ``message`` is for logs (it may quote the server: its text is cleaned and redacted);
        ``reason`` is the plain-words version a teammate reads.
        """
        latency = time.monotonic() - started
        self.meter.failures += 1
        message = clean_text(redact(message, self.secrets))
        self._log(messages, purpose, None, Usage(), latency, attempts, message)
        return LMError(message, reason=reason)

    def _log(self, messages: Messages, purpose: str, text: str | None, usage: Usage,
             latency: float, attempts: int, error: str | None) -> None:
        for watcher in self.prompt_watchers:
            try:
                watcher(messages, purpose)
            except Exception:  # a watcher's bug must not cost the answer
                log.exception("a prompt watcher failed")
        if self.log_path is None:
            return
        record = call_record(purpose=purpose, model=self.config.model,
                             base_url=self.config.base_url, messages=messages, completion=text,
                             prompt_tokens=usage.prompt_tokens,
                             completion_tokens=usage.completion_tokens, latency=latency,
                             attempts=attempts, error=error)
        try:
            write_call(self.log_path, record, self.secrets, max_bytes=self.config.log_max_bytes,
                       backups=self.config.log_backups)
        except OSError as exc:  # a full disk must not turn a good answer into a failure
            log.warning("could not write the LM call log %s: %s", self.log_path, exc)

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""
