"""An LM behind any OpenAI-compatible chat endpoint, spoken to over plain HTTP.

Works with the OpenAI API itself (``base_url`` unset, an API key required) and with other servers
that speak the same protocol: vLLM, Ollama, the llama.cpp server, LM Studio and the like
(``base_url`` set; the key may be left out, a placeholder is sent).

The lean path. A chat completion is one JSON body posted to ``{base_url}/chat/completions`` and
one JSON reply read back; that is all cogym_lab asks of the endpoint. So the request goes out over
the loop's shared aiohttp session (:mod:`cogym_lab.lm.shared_clients`), its body encoded once per
call (retries post the same bytes), and the reply is read as plain JSON. The ``openai`` package
is not imported: it built hundreds of models cogym_lab never used (a second of start-up in every
process) and cost about four times the CPU of a bare post per request.

This module makes one attempt and says how it failed; the retry loop of
:class:`~cogym_lab.lm.base.LM` makes every attempt, so that each is counted, timed and logged in
one place.

Retried: rate limits (429, with the server's ``Retry-After`` or ``retry-after-ms``), timeouts,
connection errors, 408/409, every 5xx, and replies that cannot be used (a body that is not JSON,
no choices, no text). Other statuses (bad request, authentication, not found, a redirect ...)
fail at once.

Time limits. The base loop's ``asyncio.timeout`` around each attempt bounds the whole request:
connecting, waiting, and reading a body the server trickles a byte at a time (a per-read
timeout would never fire on that). Cancelling the attempt closes its connection.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import Mapping
from typing import Any

import aiohttp

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
from cogym_lab.lm.failures import mark_reply_started
from cogym_lab.lm.shared_clients import ClientKey, EndpointClient, forget, hold, release

PLACEHOLDER_API_KEY = "not-needed"  # sent to servers other than OpenAI's when no key is set
RETRYABLE_STATUS = frozenset({408, 409, 429})


# What went wrong, in plain words for a teammate (LMError.reason): no status codes, no URLs.
REASON_SERVER_ERRORS = "its server kept reporting errors"
REASON_BUSY = "its server says it is too busy"
REASON_CONNECTION = "I cannot connect to it"
REASON_REFUSED = "its server refused my request"
__all__ = ["REASON_BUSY", "REASON_CONNECTION", "REASON_REFUSED", "REASON_SERVER_ERRORS",
           "REASON_UNREADABLE", "OpenAILM", "encode_body"]


class _UnusableReplyError(CogymError):  # internal: never leaves this module
    """The server answered 2xx, but with nothing we can use."""


def _as_int(value: Any) -> int:
    try:
        return max(int(value), 0) if value is not None and not isinstance(value, bool) else 0
    except (TypeError, ValueError):
        return 0


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait (``Retry-After`` / ``retry-after-ms``), if it did."""
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


def _server_text(status: int, reason: str | None, data: bytes) -> str:
    """The error text the server sent, as short as it can be said: an OpenAI-style error's
    ``message``, else the body's start, else the status line."""
    text = data[:4000].decode("utf-8", "replace").strip()
    try:
        body = json.loads(data)
    except ValueError:
        body = None
    if isinstance(body, dict):
        detail = body.get("error", body)
        if isinstance(detail, dict):
            return str(detail.get("message") or detail.get("error") or detail)
        return str(detail)
    if text:
        return text[:500]
    return f"{status} {reason or ''}".strip()


def encode_body(body: dict[str, Any]) -> bytes:
    """``body`` as the UTF-8 JSON a server reads. Prompts are valid Unicode by now (the retry
    loop cleaned them); a lone surrogate elsewhere (an ``extra`` setting) is sent escaped rather
    than failing the call."""
    try:
        return json.dumps(body, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(body, default=str).encode("ascii")


#: The chat completions endpoint, under the client's base URL.
CHAT_PATH = "/chat/completions"
#: ``config.extra`` entries that are request options, not body fields (their names as the
#: ``openai`` package spelt them, so team files written for it keep working).
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
        self._client: EndpointClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._options = self._request_options()
        # The last call's encoded body: its retries post the same bytes (see _body).
        self._encoded: tuple[Messages, int | None, list[str] | None, bytes] | None = None

    # -- client -----------------------------------------------------------------------------------

    def _client_for_this_loop(self) -> EndpointClient:
        """This loop's shared client for the endpoint, held from the first call until
        :meth:`aclose`. An LM used from several ``asyncio.run`` calls lets go of the last loop's
        client, whose connections belong to that loop."""
        loop = asyncio.get_running_loop()
        self._drop_closed_client()
        if self._client is None or self._client_loop is not loop:
            if self._client_loop is not None:
                forget(self._client_key, self._client_loop)
            self._client = hold(self._client_key)
            self._client_loop = loop
        return self._client

    def _drop_closed_client(self) -> None:
        """Let go of a client closed under the LM (by ``close_this_loops_clients`` as its loop
        ended): its hold went with it, so there is nothing to release or forget."""
        if self._client is not None and self._client.session.closed:
            self._client = self._client_loop = None

    def _request_options(self) -> dict[str, Any]:
        """What ``config.extra`` says about the request itself: ``extra_headers``,
        ``extra_query`` and ``timeout`` (seconds for the whole request)."""
        options: dict[str, Any] = {}
        for name, value in (self.config.extra or {}).items():
            if name not in _REQUEST_OPTIONS or value is None:
                continue
            if name == "timeout":
                if isinstance(value, int | float) and not isinstance(value, bool):
                    options["timeout"] = aiohttp.ClientTimeout(total=float(value))
            else:
                options[_REQUEST_OPTIONS[name]] = dict(value)
        return options

    def _request(self, messages: Messages, max_tokens: int | None,
                 stop: list[str] | None) -> dict[str, Any]:
        """The JSON body of a chat completions request.

        ``config.extra`` entries go into the body (``extra_body``'s too), except the request
        options ``extra_headers``, ``extra_query`` and ``timeout``.
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
        for name, value in (config.extra or {}).items():
            if name not in _REQUEST_OPTIONS and name != "extra_body":
                body[name] = value
        body.update((config.extra or {}).get("extra_body") or {})
        return body

    def _body(self, messages: Messages, max_tokens: int | None,
              stop: list[str] | None) -> bytes:
        """The encoded body, made once per call. The retry loop passes every attempt of a call
        the same ``messages`` list (its cleaned copy, new for each call), so the list's identity
        says whether this is a retry; concurrent calls only re-encode."""
        cached = self._encoded
        if cached is not None and cached[0] is messages and cached[1] == max_tokens \
                and cached[2] == stop:
            return cached[3]
        data = encode_body(self._request(messages, max_tokens, stop))
        self._encoded = (messages, max_tokens, stop, data)
        return data

    @staticmethod
    def _read(reply: Any) -> tuple[str, Usage]:
        """The text and usage of a reply (its JSON, as parsed); :class:`_UnusableReplyError`
        says what is wrong with it."""
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
        data = self._body(messages, max_tokens, stop)
        try:
            async with await client.post(CHAT_PATH, data, **self._options) as response:
                # Status line and headers have come: a timeout from here on is a trickle.
                mark_reply_started()
                payload = await response.read()
                status = response.status
                if status < 200 or status >= 300:
                    raise self._status_failure(status, response.reason, response.headers,
                                               payload)
        except aiohttp.ClientConnectorError as exc:
            raise AttemptFailed(f"connection failed: {type(exc).__name__}: {exc}",
                                REASON_CONNECTION, kind="connection") from exc
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError,
                aiohttp.ClientOSError) as exc:
            # The connection broke while the request or its reply was under way.
            raise AttemptFailed(f"connection failed: {type(exc).__name__}: {exc}",
                                REASON_CONNECTION, kind="connection") from exc
        except aiohttp.ServerTimeoutError:  # aiohttp's own (connect) timeout
            raise TimeoutError from None
        except aiohttp.ClientError as exc:
            raise AttemptFailed(f"{self.config.describe()} failed: {type(exc).__name__}: {exc}",
                                DEFAULT_REASON, final=True) from exc
        try:
            # A body that is not JSON: ValueError (JSONDecodeError, or UnicodeDecodeError for
            # bytes that are not UTF-8).
            return self._read(json.loads(payload))
        except ValueError as exc:
            preview = payload[:200].decode("utf-8", "replace")
            raise AttemptFailed(f"unusable reply: the reply is not JSON ({type(exc).__name__}: "
                                f"{exc}): {preview!r}", REASON_UNREADABLE,
                                kind="unreadable") from exc
        except _UnusableReplyError as exc:
            raise AttemptFailed(f"unusable reply: {exc}", REASON_UNREADABLE,
                                kind="unreadable") from exc

    def _status_failure(self, status: int, reason: str | None, headers: Mapping[str, str],
                        payload: bytes) -> AttemptFailed:
        """How a reply with an error status failed: refused at once, or to be retried."""
        error = f"HTTP {status}: {_server_text(status, reason, payload)}"
        if status not in RETRYABLE_STATUS and status < 500:
            return AttemptFailed(f"{self.config.describe()} refused the request with {error}",
                                 REASON_REFUSED, final=True, kind="refused", status=status)
        busy = status == 429
        return AttemptFailed(error, REASON_BUSY if busy else REASON_SERVER_ERRORS,
                             retry_after=_retry_after(headers) if busy else None,
                             kind="rate_limited" if busy else "server_error", status=status)

    async def aclose(self) -> None:
        self._encoded = None
        self._drop_closed_client()
        if self._client_loop is not None:
            loop, self._client, self._client_loop = self._client_loop, None, None
            await release(self._client_key, loop)
