"""The LM interface every agent, simulated user and judge talks to.

One async method, :meth:`LM.complete`, with retries, token and latency accounting and a call log.
Callers handle :class:`LMError`, raised once retries are spent or the call's deadline
(``LMConfig.deadline``) has passed, whichever comes first.

The retry loop lives here, once for every provider; a provider implements only
:meth:`LM._attempt`, one try at an answer, and says how it failed by raising
:class:`AttemptFailed` (or ``TimeoutError``). The loop:

* bounds each attempt by ``asyncio.timeout`` for ``min(attempt_timeout, time left before the
  deadline)``, which cancels it wherever it is (connecting, waiting, reading a trickled body);
* retries a failure that is not final after ``backoff * 2 ** (attempt - 1)`` seconds plus up to
  10 % jitter (so concurrent callers spread out), or after the wait the server asked for
  (``Retry-After``, at most :data:`MAX_RETRY_AFTER`) when that is longer;
* makes no retry that could only start at or after the deadline, and fails at once instead. So
  ``complete`` returns or raises :class:`LMError` within ``config.deadline`` seconds;
* runs each attempt in a slot of the process's gate (:mod:`cogym_lab.lm.limits`: requests in
  flight and per minute, per endpoint and model). Waiting for the slot counts against the
  deadline, and the attempt's own ``timeout`` starts once it has one; a call that gets no slot
  before its deadline fails saying so. A 429 whose ``Retry-After`` says how long to wait slows
  every caller of that endpoint and model down until then, not only this one.

Every reply text is made valid Unicode here (:func:`cogym_lab.core.text.clean_text`), in one place
for every provider, before the caller, the meter or the call log sees it: a reply may carry a lone
surrogate (a JSON ``"\\ud83d"``), which no UTF-8 file or CRDT document can hold. So is every
prompt, before its first attempt: a lone surrogate in it could not be sent as UTF-8 at all.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from cogym_lab.core.text import clean_text
from cogym_lab.errors import CogymError
from cogym_lab.lm.calllog import call_record, redact, write_call
from cogym_lab.lm.config import LMConfig
from cogym_lab.lm.failures import (
    FailingSide,
    FailureKind,
    LMFailure,
    public_endpoint,
    stop_watching,
    watch_reply_start,
)
from cogym_lab.lm.limit_rules import limit_key
from cogym_lab.lm.limits import current_gate
from cogym_lab.lm.text_memo import clean_messages

log = logging.getLogger(__name__)

# OpenAI chat format: [{"role": "system" | "user" | "assistant", "content": "..."}]
Messages = list[dict[str, str]]


#: What an :class:`LMError` says to a teammate when its raiser gave no plainer reason.
DEFAULT_REASON = "it gave no usable answer"
#: The plain reason for replies that came back but could not be used (no text, not JSON ...).
REASON_UNREADABLE = "its answers could not be read"
#: Seconds: the longest wait between attempts that a server may ask for (``Retry-After``) and
#: have honoured; a longer one is cut to this (and the deadline still holds).
MAX_RETRY_AFTER = 30.0


def timeout_reason(seconds: float) -> str:
    """The plain reason for a timeout: 'it did not answer within 120 seconds'."""
    unit = "second" if seconds == 1 else "seconds"
    return f"it did not answer within {seconds:g} {unit}"


def waiting_reason(seconds: float) -> str:
    """The plain reason for a call the provider limits kept waiting past its deadline."""
    unit = "second" if seconds == 1 else "seconds"
    return f"it was too busy to take my request within {seconds:g} {unit}"


def _attempts(count: int) -> str:
    return "attempt" if count == 1 else "attempts"


def _seconds(value: float) -> str:
    """A duration for a message: tenths of a second, or two digits when shorter than that."""
    return f"{round(value, 1):g}" if value >= 0.05 else f"{max(value, 0.0):.2g}"


class LMError(CogymError, RuntimeError):
    """The LM gave no usable answer after every retry, or within its deadline.

    The message says why, for logs and developers (model, endpoint, HTTP status ...). ``reason``
    says it in plain words for a teammate in the chat ("it did not answer within 120 seconds").
    ``kind`` names the failure (:data:`~cogym_lab.lm.failures.FailureKind`), with the last
    attempt's HTTP ``status`` and ``retry_after`` when it had them; :meth:`failure` makes the
    typed cause a session records.
    """

    def __init__(self, message: str, *, reason: str = DEFAULT_REASON,
                 kind: FailureKind = "failed", status: int | None = None,
                 retry_after: float | None = None, attempts: int = 0,
                 model: str | None = None, endpoint: str | None = None,
                 purpose: str = "") -> None:
        super().__init__(message)
        self.reason = reason
        self.kind: FailureKind = kind
        self.status = status
        self.retry_after = retry_after
        self.attempts = attempts
        self.model = model
        self.endpoint = public_endpoint(endpoint)
        self.purpose = purpose

    def failure(self, member: str, side: FailingSide) -> LMFailure:
        """This error as the cause a session records: ``member``'s LM, on ``side``."""
        return LMFailure(member=member, side=side, kind=self.kind, reason=self.reason,
                         detail=str(self), model=self.model, endpoint=self.endpoint,
                         status=self.status, retry_after=self.retry_after,
                         attempts=self.attempts, purpose=self.purpose)


class LMNotConfigured(LMError):
    """No model or endpoint is set. The message says exactly what to set."""

    def __init__(self, message: str, *, reason: str = "it is not set up") -> None:
        super().__init__(message, reason=reason, kind="not_configured")


class AttemptFailed(CogymError):
    """One attempt gave no usable answer: what a provider's :meth:`LM._attempt` raises.

    ``error`` says what went wrong, for logs ("HTTP 500: upstream exploded"); ``reason`` says it
    in plain words for a teammate. A failure that is not ``final`` is retried and ``error``
    becomes the "last error" of the call's message. A ``final`` one (a refused request, a model
    that cannot be loaded) ends the call at once, and its ``error`` is then the whole message
    of the :class:`LMError`. ``retry_after`` is the wait the server asked for, in seconds;
    ``kind`` and ``status`` name the failure (:mod:`cogym_lab.lm.failures`).
    """

    def __init__(self, error: str, reason: str = DEFAULT_REASON, *, final: bool = False,
                 retry_after: float | None = None, kind: FailureKind = "failed",
                 status: int | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.reason = reason
        self.final = final
        self.retry_after = retry_after
        self.kind: FailureKind = kind
        self.status = status


@dataclass(frozen=True)
class _LastFailure:
    """How the latest attempt of a call failed: what its :class:`LMError` says in the end."""

    kind: FailureKind = "failed"
    status: int | None = None
    retry_after: float | None = None


@dataclass
class Usage:
    """What one answer cost, and what the server said about how it was made."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: The server's ``system_fingerprint`` (its backend configuration), when it sent one: with
    #: the seed, what says whether two answers could have been the same.
    system_fingerprint: str | None = None

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
    system_fingerprint: str | None = None


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
        #: Called with the :class:`LMError` of every call that failed past its retries, before
        #: it is raised: a session ends on it, naming the cause (:mod:`cogym_lab.lm.failures`).
        self.failure_watchers: list[Callable[[LMError], None]] = []

    def log_to(self, path: str | Path | None) -> None:
        """Append every call (prompt, completion, usage, latency; secrets redacted) to ``path``,
        rotated at ``config.log_max_bytes`` (see :mod:`cogym_lab.lm.calllog`)."""
        self.log_path = Path(path) if path else None

    # -- the call: the retry loop, once for every provider -------------------------------------

    async def complete(self, messages: Messages, *, purpose: str = "",
                       max_tokens: int | None = None, stop: list[str] | None = None) -> Completion:
        """One chat completion. Raises :class:`LMError` when every retry failed or the deadline
        passed (see the module docstring for the rules)."""
        config = self.config
        # A lone surrogate cannot be encoded as UTF-8: the request would fail on every attempt.
        # Each long text is scanned once in its life, not on every call that resends it.
        messages = clean_messages(messages)
        max_tokens = config.max_tokens if max_tokens is None else max_tokens
        started = time.monotonic()
        deadline_at = started + config.deadline
        attempts_allowed = config.max_retries + 1
        gate, key = current_gate(), self.limit_key
        loop = asyncio.get_running_loop()
        last_error, reason, attempt = "", DEFAULT_REASON, 0
        last = _LastFailure()
        while attempt < attempts_allowed:
            attempt += 1
            retry_after: float | None = None
            budget: float | None = None  # set once the attempt has its slot
            attempt_limit: float | None = None
            started_reply, watching = watch_reply_start()
            try:
                # Waiting for a slot counts against the deadline; the attempt's own time limit
                # starts once it has one.
                async with asyncio.timeout(deadline_at - time.monotonic()) as timer, \
                        gate.slot(key):
                    budget = deadline_at - time.monotonic()
                    limit = self.attempt_timeout
                    # The attempt's own limit when it ends before the deadline; else None.
                    attempt_limit = limit if limit is not None and budget >= limit else None
                    if attempt_limit is not None:
                        budget = attempt_limit
                        timer.reschedule(loop.time() + budget)
                    text, usage = await self._attempt(messages, max_tokens, stop)
            except TimeoutError:
                if budget is None:  # no slot before the deadline: the limits kept it waiting
                    raise self._fail_waiting(messages, purpose, started, attempt - 1, key,
                                             last_error, last) from None
                trickled = started_reply[0]
                cut = f"no answer within {_seconds(budget)} s (timeout" + (
                    "; the reply had started: a trickle)" if trickled else ")")
                if attempt_limit is None and last.kind not in ("failed", "timeout", "trickle"):
                    # An attempt after server errors, cut short by the deadline: the call
                    # failed for those errors, which the attempt had no time to get past.
                    last_error = f"{last_error}; then {cut}, cut by the deadline"
                else:
                    last = _LastFailure("trickle" if trickled else "timeout")
                    last_error = cut
                    # Cut by the deadline: say the deadline, not the sliver this attempt had.
                    reason = timeout_reason(config.deadline if attempt_limit is None
                                            else attempt_limit)
            except AttemptFailed as failure:
                last = _LastFailure(failure.kind, failure.status, failure.retry_after)
                if failure.final:
                    raise self._fail(messages, purpose, started, attempt, failure.error,
                                     failure.reason, last) from failure.__cause__ or failure
                last_error, reason = failure.error, failure.reason
                retry_after = failure.retry_after
                if retry_after is not None:  # the provider said when: everyone waits till then
                    gate.slowdown(key, min(retry_after, MAX_RETRY_AFTER))
            else:
                return self._succeed(messages, purpose, text, usage, started, attempt)
            finally:
                stop_watching(watching)
            if attempt >= attempts_allowed:
                break
            delay = self._backoff(attempt, retry_after)
            if time.monotonic() + delay >= deadline_at:
                # The retry could only start at or after the deadline: say so now, not then.
                raise self._fail_at_deadline(messages, purpose, started, attempt, last_error,
                                             reason, last)
            log.debug("%s attempt %d failed (%s); retrying in %.2f s", config.describe(),
                      attempt, last_error, delay)
            await asyncio.sleep(delay)
        raise self._fail(messages, purpose, started, attempt,
                         f"{config.describe()} gave no usable answer after {attempt} "
                         f"{_attempts(attempt)}; last error: {last_error}", reason, last)

    # -- what a provider implements ------------------------------------------------------------

    @abc.abstractmethod
    async def _attempt(self, messages: Messages, max_tokens: int | None,
                       stop: list[str] | None) -> tuple[str, Usage]:
        """One try at an answer: its text and usage.

        Raises :class:`AttemptFailed` saying what went wrong and whether to retry, or
        ``TimeoutError`` for a provider's own timeout. The loop cancels an attempt that runs
        past its time: a provider releases what it holds on ``asyncio.CancelledError``.
        """

    @property
    def limit_key(self) -> str:
        """The key its calls are limited under (:mod:`cogym_lab.lm.limits`): model and endpoint."""
        return limit_key(self.config.model, self.config.base_url, self.config.provider)

    @property
    def attempt_timeout(self) -> float | None:
        """Seconds one attempt may take (``config.timeout``); ``None``: only the deadline."""
        return self.config.timeout

    # -- what every provider does around a call ------------------------------------------------

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt number ``attempt``."""
        delay = self.config.backoff * 2 ** (attempt - 1)
        delay += random.uniform(0, 0.1 * delay)  # jitter: concurrent callers spread out
        if retry_after is not None:
            delay = max(delay, min(retry_after, MAX_RETRY_AFTER))
        return delay

    def _fail_at_deadline(self, messages: Messages, purpose: str, started: float, attempts: int,
                          last_error: str, reason: str, last: _LastFailure) -> LMError:
        return self._fail(messages, purpose, started, attempts,
                          f"{self.config.describe()} gave no usable answer within its "
                          f"{self.config.deadline:g} s deadline ({attempts} "
                          f"{_attempts(attempts)}); last error: {last_error}", reason, last)

    def _fail_waiting(self, messages: Messages, purpose: str, started: float, attempts: int,
                      key: str, last_error: str, last: _LastFailure) -> LMError:
        """No slot came free before the deadline: the provider limits kept the call waiting."""
        before = f"; last error: {last_error}" if last_error else ""
        return self._fail(messages, purpose, started, attempts,
                          f"{self.config.describe()} got no request slot within its "
                          f"{self.config.deadline:g} s deadline: the provider limits of "
                          f"{key!r} kept it waiting ({attempts} {_attempts(attempts)} made"
                          f"{before})", waiting_reason(self.config.deadline),
                          last if last_error else _LastFailure("waiting"))

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
                          model=self.config.model or "", attempts=attempts,
                          system_fingerprint=usage.system_fingerprint)

    def _fail(self, messages: Messages, purpose: str, started: float, attempts: int,
              message: str, reason: str = DEFAULT_REASON,
              last: _LastFailure | None = None) -> LMError:
        """Count and log a final failure; the error for the caller to raise.

        ``message`` is for logs (it may quote the server: its text is cleaned and redacted);
        ``reason`` is the plain-words version a teammate reads.
        """
        latency = time.monotonic() - started
        self.meter.failures += 1
        message = clean_text(redact(message, self.secrets))
        self._log(messages, purpose, None, Usage(), latency, attempts, message)
        last = last or _LastFailure()
        error = LMError(message, reason=reason, kind=last.kind, status=last.status,
                        retry_after=last.retry_after, attempts=attempts, model=self.config.model,
                        endpoint=self.config.base_url, purpose=purpose)
        for watcher in list(self.failure_watchers):
            try:
                watcher(error)
            except Exception:  # a watcher's bug must not change what the caller is told
                log.exception("an LM failure watcher failed")
        return error

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
                             attempts=attempts, error=error, seed=self.config.seed,
                             system_fingerprint=usage.system_fingerprint)
        try:
            write_call(self.log_path, record, self.secrets, max_bytes=self.config.log_max_bytes,
                       backups=self.config.log_backups)
        except OSError as exc:  # a full disk must not turn a good answer into a failure
            log.warning("could not write the LM call log %s: %s", self.log_path, exc)

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections (an OpenAI-compatible LM lets go of its shared client). The LM
        may still be used afterwards: it opens what it needs again."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """``async with make_lm(config) as lm:`` closes the LM at the end of the block."""
        await self.aclose()
