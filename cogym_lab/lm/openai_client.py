"""An LM behind any OpenAI-compatible chat endpoint, through the ``openai`` package.

Works with the OpenAI API itself (``base_url`` unset, an API key required) and with other servers
that speak the same protocol: vLLM, Ollama, the llama.cpp server, LM Studio and the like
(``base_url`` set; the key may be left out, a placeholder is sent).

The ``openai`` client's own retries are switched off (``max_retries=0``); this module retries with
exponential backoff itself, so that every attempt is counted, timed and logged in one place.

Retried: rate limits (429, honouring ``Retry-After``), timeouts, connection errors, 408/409, every
5xx, and replies that cannot be used (a body that is not JSON, no choices, no text). Other 4xx
(bad request, authentication, not found ...) fail at once.

Time limits. httpx's timeouts (which the ``openai`` client uses) bound each network operation, not
the request: its read timeout is the longest gap between two chunks, so a server that sends one
byte every few seconds keeps a call alive for ever. So each attempt also runs inside
``asyncio.timeout`` for ``min(config.timeout, time left before config.deadline)``, which cancels
it wherever it is (connecting, waiting, or reading a trickled body); httpx closes the connection
on cancellation. Backoff waits count against the deadline too, and a retry that could only start
after it is not made. So ``complete`` returns or raises :class:`LMError` within
``config.deadline`` seconds, whatever the server does.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import inspect
import logging
import random
import ssl
import time
from typing import Any

import openai

from cogym_lab.lm.base import DEFAULT_REASON, LM, Completion, LMNotConfigured, Messages, Usage
from cogym_lab.lm.config import ENV_API_KEY, LMConfig

log = logging.getLogger(__name__)

PLACEHOLDER_API_KEY = "not-needed"  # sent to servers other than OpenAI's when no key is set
MAX_RETRY_AFTER = 30.0  # seconds: the longest server-asked wait we honour
RETRYABLE_STATUS = frozenset({408, 409, 429})


# What went wrong last, in plain words for a teammate (LMError.reason): no status codes, no URLs.
REASON_SERVER_ERRORS = "its server kept reporting errors"
REASON_BUSY = "its server says it is too busy"
REASON_CONNECTION = "I cannot connect to it"
REASON_REFUSED = "its server refused my request"
REASON_UNREADABLE = "its answers could not be read"


def _timeout_reason(seconds: float) -> str:
    """The plain reason for a timeout: 'it did not answer within 120 seconds'."""
    unit = "second" if seconds == 1 else "seconds"
    return f"it did not answer within {seconds:g} {unit}"


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context for every client: loading the CA bundle anew costs each client about
    20 ms of CPU, which adds up when a batch builds LMs for 64 sessions at once."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


class _UnusableReplyError(Exception):  # internal: never leaves this module
    """The server answered 2xx, but with nothing we can use."""


def _as_int(value: Any) -> int:
    try:
        return max(int(value), 0) if value is not None and not isinstance(value, bool) else 0
    except (TypeError, ValueError):
        return 0


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (``Retry-After`` / ``retry-after-ms``), if it did."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            return max(float(ms) / 1000.0, 0.0)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(float(value), 0.0)
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)  # an HTTP date
            return max(when.timestamp() - time.time(), 0.0)
    except (TypeError, ValueError, OverflowError):
        return None


def _server_text(exc: openai.APIStatusError) -> str:
    """The error text the server sent, as short as it can be said."""
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message") or body.get("error") or body
        return str(message)
    if body:
        return str(body)[:500]
    return exc.message or str(exc)


def _attempts(count: int) -> str:
    return "attempt" if count == 1 else "attempts"


class OpenAILM(LM):
    """A member's LM on an OpenAI-compatible chat completions endpoint."""

    def __init__(self, config: LMConfig) -> None:
        super().__init__(config)
        if not config.model:
            raise LMNotConfigured("OpenAILM needs a model name: set COGYM_MODEL or give model "
                                  "in the LM configuration")
        key = config.api_key.get_secret_value() if config.api_key is not None else ""
        if not key:
            if config.base_url is None:
                raise LMNotConfigured(f"{config.describe()} needs an API key: set {ENV_API_KEY}, "
                                      "or point OPENAI_BASE_URL at another OpenAI-compatible "
                                      "server")
            key = PLACEHOLDER_API_KEY
        self._api_key = key
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._known_params: frozenset[str] | None = None

    # -- client -----------------------------------------------------------------------------------

    def _client_for_this_loop(self) -> openai.AsyncOpenAI:
        """The client, made anew if this is another event loop than last time.

        Its connection pool belongs to one event loop; an LM used from several ``asyncio.run``
        calls would otherwise reuse connections of a closed loop.
        """
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = openai.AsyncOpenAI(
                base_url=self.config.base_url, api_key=self._api_key,
                timeout=self.config.timeout, max_retries=0,
                http_client=openai.DefaultAsyncHttpxClient(verify=_tls_context()))
            self._client_loop = loop
        return self._client

    def _request(self, client: openai.AsyncOpenAI, messages: Messages, max_tokens: int | None,
                 stop: list[str] | None) -> dict[str, Any]:
        """Keyword arguments for ``chat.completions.create``.

        ``config.extra`` entries that the installed client does not know as parameters (server
        specific ones such as vLLM's ``top_k``) travel in ``extra_body``, not as keywords.
        """
        config = self.config
        kwargs: dict[str, Any] = {"model": config.model, "messages": messages,
                                  "temperature": config.temperature}
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        if stop:
            kwargs["stop"] = list(stop)
        if config.extra:
            if self._known_params is None:
                params = inspect.signature(client.chat.completions.create).parameters
                self._known_params = frozenset(params)
            extra_body = dict(config.extra.get("extra_body") or {})
            for name, value in config.extra.items():
                if name == "extra_body":
                    continue
                if name in self._known_params:
                    kwargs[name] = value
                else:
                    extra_body[name] = value
            if extra_body:
                kwargs["extra_body"] = extra_body
        return kwargs

    @staticmethod
    def _read(response: Any) -> tuple[str, Usage]:
        """The text and usage of a reply; :class:`_UnusableReplyError` says what is wrong."""
        if isinstance(response, str | bytes):  # the client hands back bodies not sent as JSON
            preview = response[:200] if isinstance(response, str) else response[:200].decode(
                "utf-8", "replace")
            raise _UnusableReplyError(f"the reply is not JSON: {preview!r}")
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list):
            raise _UnusableReplyError(f"the reply is not a chat completion: "
                                      f"{str(response)[:200]}")
        if not choices:
            raise _UnusableReplyError("the reply has no choices")
        message = getattr(choices[0], "message", None)
        content = getattr(message, "content", None)
        if not isinstance(content, str):
            reason = getattr(choices[0], "finish_reason", None)
            refusal = getattr(message, "refusal", None)
            detail = f"; refusal: {refusal!r}" if refusal else ""
            raise _UnusableReplyError(f"the reply has no text (finish_reason "
                                      f"{reason!r}{detail})")
        usage = getattr(response, "usage", None)
        return content, Usage(prompt_tokens=_as_int(getattr(usage, "prompt_tokens", None)),
                              completion_tokens=_as_int(getattr(usage, "completion_tokens", None)))

    # -- the call -----------------------------------------------------------------------------

    async def complete(self, messages: Messages, *, purpose: str = "",
                       max_tokens: int | None = None, stop: list[str] | None = None) -> Completion:
        config = self.config
        client = self._client_for_this_loop()
        kwargs = self._request(client, messages,
                               config.max_tokens if max_tokens is None else max_tokens, stop)
        attempts_allowed = config.max_retries + 1
        started = time.monotonic()
        deadline_at = started + config.deadline
        last_error, reason = "", DEFAULT_REASON
        attempt = 0
        while attempt < attempts_allowed:
            attempt += 1
            server_wait: float | None = None
            budget = min(config.timeout, deadline_at - time.monotonic())
            try:
                # The whole attempt, body included: httpx alone would let a trickle run on.
                async with asyncio.timeout(budget):
                    response = await client.chat.completions.create(**kwargs)
                text, usage = self._read(response)
            except (TimeoutError, openai.APITimeoutError):
                last_error = f"no answer within {round(budget, 1):g} s (timeout)"
                # Cut by the deadline: say the deadline, not the sliver of it this attempt had.
                reason = _timeout_reason(config.deadline if budget < config.timeout
                                         else config.timeout)
            except openai.APIStatusError as exc:
                status = exc.status_code
                last_error = f"HTTP {status}: {_server_text(exc)}"
                if status not in RETRYABLE_STATUS and status < 500:
                    raise self._fail(messages, purpose, started, attempt,
                                     f"{config.describe()} refused the request with "
                                     f"{last_error}", REASON_REFUSED) from exc
                reason = REASON_BUSY if status == 429 else REASON_SERVER_ERRORS
                if status == 429:
                    server_wait = _retry_after(exc)
            except openai.APIConnectionError as exc:
                cause = exc.__cause__ or exc.__context__
                last_error = f"connection failed: {exc.message}" + (
                    f" ({type(cause).__name__}: {cause})" if cause else "")
                reason = REASON_CONNECTION
            except (openai.APIResponseValidationError, ValueError) as exc:
                # A 2xx body the client could not decode: it raises json.JSONDecodeError for
                # text that is not JSON, UnicodeDecodeError for bytes that are not UTF-8.
                last_error = f"unusable reply: {type(exc).__name__}: {exc}"
                reason = REASON_UNREADABLE
            except _UnusableReplyError as exc:
                last_error = f"unusable reply: {exc}"
                reason = REASON_UNREADABLE
            except openai.OpenAIError as exc:
                raise self._fail(messages, purpose, started, attempt,
                                 f"{config.describe()} failed: {type(exc).__name__}: "
                                 f"{exc}") from exc
            else:
                return self._succeed(messages, purpose, text, usage, started, attempt)
            if attempt >= attempts_allowed:
                break
            delay = config.backoff * 2 ** (attempt - 1)
            delay += random.uniform(0, 0.1 * delay)  # jitter: concurrent callers spread out
            if server_wait is not None:
                delay = max(delay, min(server_wait, MAX_RETRY_AFTER))
            if time.monotonic() + delay >= deadline_at:
                # The retry could only start at or after the deadline: say so now, not then.
                raise self._fail(messages, purpose, started, attempt,
                                 f"{config.describe()} gave no usable answer within its "
                                 f"{config.deadline:g} s deadline ({attempt} "
                                 f"{_attempts(attempt)}); last error: {last_error}", reason)
            log.debug("%s attempt %d failed (%s); retrying in %.2f s", config.describe(),
                      attempt, last_error, delay)
            await asyncio.sleep(delay)
        raise self._fail(messages, purpose, started, attempt,
                         f"{config.describe()} gave no usable answer after {attempt} "
                         f"{_attempts(attempt)}; last error: {last_error}", reason)

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client, self._client_loop = self._client, None, None
            with contextlib.suppress(RuntimeError):  # its event loop is closed: nothing to free
                await client.close()
