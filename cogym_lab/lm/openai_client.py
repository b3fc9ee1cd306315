"""An LM behind any OpenAI-compatible chat endpoint, through the ``openai`` package.

Works with the OpenAI API itself (``base_url`` unset, an API key required) and with other servers
that speak the same protocol: vLLM, Ollama, the llama.cpp server, LM Studio and the like
(``base_url`` set; the key may be left out, a placeholder is sent).

The ``openai`` client's own retries are switched off (``max_retries=0``): the retry loop of
:class:`~cogym_lab.lm.base.LM` makes every attempt, so that each is counted, timed and logged in
one place. This module makes one attempt and says how it failed.

Retried: rate limits (429, with the server's ``Retry-After`` or ``retry-after-ms``), timeouts,
connection errors, 408/409, every 5xx, and replies that cannot be used (a body that is not JSON,
no choices, no text). Other 4xx (bad request, authentication, not found ...) fail at once.

Cost. A large batch makes a thousand requests a second from one event loop, so each one's CPU
time counts. LMs on the same endpoint share one client per event loop
(:mod:`cogym_lab.lm.shared_clients`), which uses the ``openai`` package's aiohttp transport, and
each reply is read as plain JSON rather than built into the package's ``ChatCompletion`` model.

Time limits. httpx's timeouts (which the ``openai`` client uses) bound each network operation, not
the request: its read timeout is the longest gap between two chunks, so a server that sends one
byte every few seconds would keep a call alive for ever. The base loop's ``asyncio.timeout``
around each attempt cuts it wherever it is, and the transport closes the connection on
cancellation.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from typing import Any

import openai

from cogym_lab.errors import CogymError
from cogym_lab.lm.base import (
    DEFAULT_REASON,
    LM,
    REASON_UNREADABLE,
    AttemptFailed,
    LMNotConfigured,
    Messages,
    Usage,
)
from cogym_lab.lm.config import ENV_API_KEY, LMConfig
from cogym_lab.lm.shared_clients import ClientKey, forget, hold, release

PLACEHOLDER_API_KEY = "not-needed"  # sent to servers other than OpenAI's when no key is set
RETRYABLE_STATUS = frozenset({408, 409, 429})


# What went wrong, in plain words for a teammate (LMError.reason): no status codes, no URLs.
REASON_SERVER_ERRORS = "its server kept reporting errors"
REASON_BUSY = "its server says it is too busy"
REASON_CONNECTION = "I cannot connect to it"
REASON_REFUSED = "its server refused my request"
__all__ = ["REASON_BUSY", "REASON_CONNECTION", "REASON_REFUSED", "REASON_SERVER_ERRORS",
           "REASON_UNREADABLE", "OpenAILM"]


class _UnusableReplyError(CogymError):  # internal: never leaves this module
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


def _refusal_behind(exc: BaseException) -> OSError | None:
    """The connection error behind a reported timeout, if one is.

    The aiohttp transport reports every failed connection, a refused one too, as a connect
    timeout; the error it started from is in the chain of causes. A real timeout is an
    ``OSError`` too (``TimeoutError``), so it is not counted."""
    cause = exc.__cause__
    while cause is not None:
        if isinstance(cause, OSError) and not isinstance(cause, TimeoutError):
            return cause
        cause = cause.__cause__
    return None


#: The chat completions endpoint, under the client's base URL.
CHAT_PATH = "/chat/completions"
#: ``config.extra`` entries that are the client's request options, not body fields; by the
#: option's name.
_REQUEST_OPTIONS = {"extra_headers": "headers", "extra_query": "params", "timeout": "timeout"}


class OpenAILM(LM):
    """A member's LM on an OpenAI-compatible chat completions endpoint."""

    def __init__(self, config: LMConfig) -> None:
        super().__init__(config)
        if not config.model:
            raise LMNotConfigured("No model name is set for this language model: set "
                                  "COGYM_MODEL, or give model in the LM configuration")
        key = config.api_key.get_secret_value() if config.api_key is not None else ""
        if not key:
            if config.base_url is None:
                raise LMNotConfigured(f"{config.describe()} needs an API key: set {ENV_API_KEY}, "
                                      "or point OPENAI_BASE_URL at another OpenAI-compatible "
                                      "server")
            key = PLACEHOLDER_API_KEY
        self._client_key = ClientKey(base_url=config.base_url, api_key=key,
                                     timeout=config.timeout)
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    # -- client -----------------------------------------------------------------------------------

    def _client_for_this_loop(self) -> openai.AsyncOpenAI:
        """This loop's shared client for the endpoint, held from the first call until
        :meth:`aclose`. An LM used from several ``asyncio.run`` calls lets go of the last loop's
        client, whose connections belong to that loop."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            if self._client_loop is not None:
                forget(self._client_key, self._client_loop)
            self._client = hold(self._client_key)
            self._client_loop = loop
        return self._client

    def _request(self, messages: Messages, max_tokens: int | None,
                 stop: list[str] | None) -> tuple[dict[str, Any], dict[str, Any]]:
        """The JSON body of a chat completions request, and the client's request options.

        ``config.extra`` entries go into the body (``extra_body``'s too), except the client's own
        ``extra_headers``, ``extra_query`` and ``timeout``, which are request options. The body
        is posted as it is, not passed through ``chat.completions.create``: its check of every
        message against the parameter types cost a quarter of a large batch's CPU time.
        """
        config = self.config
        body: dict[str, Any] = {"model": config.model, "messages": messages,
                                "temperature": config.temperature}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if stop:
            body["stop"] = list(stop)
        if config.seed is not None:  # servers that cannot seed ignore it; the log records it
            body["seed"] = config.seed
        options: dict[str, Any] = {}
        for name, value in (config.extra or {}).items():
            if name in _REQUEST_OPTIONS:
                options[_REQUEST_OPTIONS[name]] = value
            elif name != "extra_body":
                body[name] = value
        body.update((config.extra or {}).get("extra_body") or {})
        return body, options

    @staticmethod
    def _read(reply: Any) -> tuple[str, Usage]:
        """The text and usage of a reply (its JSON, as parsed); :class:`_UnusableReplyError`
        says what is wrong with it."""
        if isinstance(reply, str | bytes):  # the client hands back bodies not sent as JSON
            preview = reply[:200] if isinstance(reply, str) else reply[:200].decode(
                "utf-8", "replace")
            raise _UnusableReplyError(f"the reply is not JSON: {preview!r}")
        choices = reply.get("choices") if isinstance(reply, dict) else None
        if not isinstance(choices, list):
            raise _UnusableReplyError(f"the reply is not a chat completion: {str(reply)[:200]}")
        if not choices:
            raise _UnusableReplyError("the reply has no choices")
        choice = choices[0] if isinstance(choices[0], dict) else {}
        message = choice.get("message")
        message = message if isinstance(message, dict) else {}
        content = message.get("content")
        if not isinstance(content, str):
            refusal = message.get("refusal")
            detail = f"; refusal: {refusal!r}" if refusal else ""
            raise _UnusableReplyError(f"the reply has no text (finish_reason "
                                      f"{choice.get('finish_reason')!r}{detail})")
        usage = reply.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        fingerprint = reply.get("system_fingerprint")
        return content, Usage(prompt_tokens=_as_int(usage.get("prompt_tokens")),
                              completion_tokens=_as_int(usage.get("completion_tokens")),
                              system_fingerprint=fingerprint if isinstance(fingerprint, str)
                              and fingerprint else None)

    # -- one attempt (the retry loop is LM.complete's) -------------------------------------

    async def _attempt(self, messages: Messages, max_tokens: int | None,
                       stop: list[str] | None) -> tuple[str, Usage]:
        client = self._client_for_this_loop()
        body, options = self._request(messages, max_tokens, stop)
        try:
            # options: the client's RequestOptions, a TypedDict its package does not export
            # cast_to=object: the parsed JSON as it came, not a ChatCompletion built from it.
            reply = await client.post(  # type: ignore[call-overload]
                CHAT_PATH, body=body, cast_to=object, options=options)
            return self._read(reply)
        except openai.APITimeoutError as exc:
            refused = _refusal_behind(exc)
            if refused is None:  # httpx's own timeout: the loop says how long
                raise TimeoutError from exc
            raise AttemptFailed(f"connection failed: {type(refused).__name__}: {refused}",
                                REASON_CONNECTION, kind="connection") from exc
        except openai.APIStatusError as exc:
            status = exc.status_code
            error = f"HTTP {status}: {_server_text(exc)}"
            if status not in RETRYABLE_STATUS and status < 500:
                raise AttemptFailed(f"{self.config.describe()} refused the request with {error}",
                                    REASON_REFUSED, final=True, kind="refused",
                                    status=status) from exc
            busy = status == 429
            raise AttemptFailed(error, REASON_BUSY if busy else REASON_SERVER_ERRORS,
                                retry_after=_retry_after(exc) if busy else None,
                                kind="rate_limited" if busy else "server_error",
                                status=status) from exc
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc.__context__
            raise AttemptFailed(f"connection failed: {exc.message}" + (
                f" ({type(cause).__name__}: {cause})" if cause else ""),
                REASON_CONNECTION, kind="connection") from exc
        except (openai.APIResponseValidationError, ValueError) as exc:
            # A 2xx body the client could not decode: it raises json.JSONDecodeError for text
            # that is not JSON, UnicodeDecodeError for bytes that are not UTF-8.
            raise AttemptFailed(f"unusable reply: {type(exc).__name__}: {exc}",
                                REASON_UNREADABLE, kind="unreadable") from exc
        except _UnusableReplyError as exc:
            raise AttemptFailed(f"unusable reply: {exc}", REASON_UNREADABLE,
                                kind="unreadable") from exc
        except openai.OpenAIError as exc:
            raise AttemptFailed(f"{self.config.describe()} failed: {type(exc).__name__}: {exc}",
                                DEFAULT_REASON, final=True) from exc

    async def aclose(self) -> None:
        if self._client_loop is not None:
            loop, self._client, self._client_loop = self._client_loop, None, None
            await release(self._client_key, loop)
