"""A scripted, OpenAI-compatible chat server on loopback, for tests.

This is test support: no default code path of cogym_lab uses it. It lets a test talk to an LM
through the real ``openai`` client and a real HTTP connection, with replies chosen by the test::

    with ScriptedOpenAIServer() as server:
        server.add("Hello!")
        server.add(Reply(status=429, headers={"Retry-After": "0.1"}))
        server.add("The plan is ...", when=lambda req: "plan" in req["messages"][-1]["content"])
        config = LMConfig(model="scripted", base_url=server.base_url)
        ...
        assert len(server.requests) == 2

How a reply is chosen for each ``POST /v1/chat/completions``:

1. rules added with a ``when`` predicate, in the order added; the first whose predicate is true
   answers (and is used up unless it was added with ``repeat=True``);
2. otherwise the oldest unconditional reply still in the script (FIFO);
3. otherwise the ``responder`` callable, if one was given;
4. otherwise HTTP 500 with a JSON error that says the script ran out, so the test fails loudly.

The server runs in a background thread (stdlib ``ThreadingHTTPServer``), so it serves sync and
async tests alike. Every request is recorded in :attr:`ScriptedOpenAIServer.requests`, with the
time it arrived; :attr:`ScriptedOpenAIServer.bodies` are their JSON bodies (what the client sent:
model, messages, temperature, seed ...).

A slow model, for studying what latency costs (a real-time task, say): ``latency`` holds every
reply back that many seconds, as a remote LM would, e.g. ``ScriptedOpenAIServer(responder=...,
latency=2.0)``; a mapping gives each model (the request's ``model``) its own, ``"*"`` for the
rest: ``latency={"fast-lm": 0.5, "slow-lm": 4.0}``. A reply's own ``delay`` overrides it. The
default, 0, answers at once.

Misbehaving servers, for deadline tests: ``Reply(delay=3600)`` hangs (accepts the request and
says nothing; :meth:`ScriptedOpenAIServer.stop` ends the wait), ``Reply("...", trickle=0.5)`` sends
the status line and headers at once, then the body one byte every 0.5 s, which keeps every
per-read timeout happy for as long as the body lasts.

Concurrency, for tests of provider limits: :attr:`ScriptedOpenAIServer.in_flight` counts the chat
requests being served now (from arrival until their answer starts), and
:attr:`ScriptedOpenAIServer.max_in_flight` the most there ever were at once.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import urlsplit

__all__ = ["RecordedRequest", "Reply", "ScriptedOpenAIServer"]

Predicate = Callable[[dict[str, Any]], bool]


@dataclass
class Reply:
    """One scripted answer.

    ``text`` is the assistant's content (``None`` sends ``"content": null``). ``status`` other than
    200 sends an OpenAI-style error body whose message is ``error`` (or a default). ``delay`` waits
    that many seconds before answering, to make a client time out; ``None`` (the default) waits
    the server's ``latency`` for the request's model (none unless the server was given one).
    ``garbage`` sends a body that is not JSON (``True`` for a default one, or the exact text or
    bytes to send) with the content type ``application/json`` unless ``headers`` sets another.
    ``no_choices`` sends an empty ``choices`` list. ``usage`` is ``(prompt_tokens,
    completion_tokens)``; by default the words of the prompt and of the reply are counted;
    ``send_usage=False`` leaves the ``usage`` field out.
    ``trickle`` (seconds) sends the headers at once and then the body one byte at a time, that
    long apart: a reply of a few hundred bytes then takes minutes, yet never pauses long.
    ``system_fingerprint`` is sent as the reply's ``system_fingerprint`` (null by default, as
    servers that do not say which backend answered send it).
    """

    text: str | None = ""
    status: int = 200
    delay: float | None = None
    garbage: bool | str | bytes = False
    headers: dict[str, str] = field(default_factory=dict)
    usage: tuple[int, int] | None = None
    send_usage: bool = True
    no_choices: bool = False
    finish_reason: str = "stop"
    error: str | None = None
    trickle: float = 0.0
    system_fingerprint: str | None = None


def _is_chat(path: str) -> bool:
    """Whether a request's path (its query aside: an ``extra_query`` adds one) is the chat
    completions endpoint."""
    return urlsplit(path).path.rstrip("/").endswith("/chat/completions")


@dataclass
class RecordedRequest:
    """A request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # the parsed JSON body, or None when there was none / it was not JSON
    raw: bytes = b""
    received_at: float = field(default_factory=time.time)  # wall clock, as events.jsonl uses

    def __getitem__(self, key: str) -> Any:
        """Shortcut into the JSON body: ``request["messages"]``."""
        return self.body[key]


@dataclass
class _Rule:
    reply: Reply
    when: Predicate | None
    repeat: bool


def _as_reply(reply: str | Reply) -> Reply:
    if isinstance(reply, Reply):
        return reply
    if isinstance(reply, str):
        return Reply(text=reply)
    raise TypeError(f"a scripted reply is a str or a Reply, not {type(reply).__name__}")


def _checked_seconds(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be a finite number of seconds, 0 or more; got {value!r}")
    return float(value)


def _count_words(messages: Any) -> int:
    """Word count of every text in the request's messages: the default prompt token count."""
    total = 0
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            total += len(content.split())
        elif isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    total += len(part["text"].split())
    return total


class ScriptedOpenAIServer:
    """An OpenAI-compatible HTTP server on 127.0.0.1 whose replies a test scripts.

    Use it as a context manager (or call :meth:`start` and :meth:`stop`). ``base_url`` is ready
    for ``openai.AsyncOpenAI(base_url=...)`` and for :class:`cogym_lab.lm.LMConfig`.
    ``latency`` holds back every reply without a ``delay`` of its own (see the module).
    """

    def __init__(self, replies: Iterable[str | Reply] = (), *,
                 responder: Callable[[dict[str, Any]], str | Reply] | None = None,
                 models: Iterable[str] = ("scripted",),
                 latency: float | Mapping[str, float] = 0.0) -> None:
        self.responder = responder
        self.models = list(models)
        self.latency = latency
        self.requests: list[RecordedRequest] = []
        #: Chat requests being served now, and the most there ever were at once (see below).
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._conditional: list[_Rule] = []
        self._fifo: list[_Rule] = []
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.extend(replies)

    # -- latency ----------------------------------------------------------------------------

    @property
    def latency(self) -> float | dict[str, float]:
        """Seconds every reply without a ``delay`` of its own is held back: one number, or one
        per model name (``"*"`` for any other model). May be changed while serving."""
        return self._latency

    @latency.setter
    def latency(self, value: float | Mapping[str, float]) -> None:
        if isinstance(value, Mapping):
            self._latency: float | dict[str, float] = {
                str(model): _checked_seconds(seconds, f"the latency of {model!r}")
                for model, seconds in value.items()}
        else:
            self._latency = _checked_seconds(value, "latency")

    def latency_for(self, body: Any) -> float:
        """The seconds a reply to ``body`` (a request's JSON) waits by default."""
        latency = self._latency
        if not isinstance(latency, dict):
            return latency
        model = body.get("model") if isinstance(body, dict) else None
        return latency.get(str(model), latency.get("*", 0.0))

    # -- script -----------------------------------------------------------------------------

    def add(self, reply: str | Reply, when: Predicate | None = None, *,
            repeat: bool = False) -> ScriptedOpenAIServer:
        """Script one reply; with ``when``, only for requests whose JSON body it accepts."""
        rule = _Rule(_as_reply(reply), when, repeat)
        with self._lock:
            (self._conditional if when is not None else self._fifo).append(rule)
        return self

    def extend(self, replies: Iterable[str | Reply]) -> ScriptedOpenAIServer:
        """Script several unconditional replies, answered in this order."""
        for reply in replies:
            self.add(reply)
        return self

    @property
    def pending(self) -> int:
        """Scripted replies not used yet (repeating rules included)."""
        with self._lock:
            return len(self._conditional) + len(self._fifo)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The recorded ``POST .../chat/completions`` requests only."""
        with self._lock:
            return [r for r in self.requests if _is_chat(r.path)]

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies of the recorded chat requests."""
        return [r.body for r in self.chat_requests]

    @contextlib.contextmanager
    def _serving(self) -> Iterator[None]:
        """Count one chat request as in flight: from its arrival until its answer starts (the
        count drops before the client can see the answer, so it never outlives the client's)."""
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            yield
        finally:
            with self._lock:
                self.in_flight -= 1

    def _choose(self, body: dict[str, Any]) -> Reply | None:
        with self._lock:
            for rule in self._conditional:
                assert rule.when is not None  # add() puts only rules with a predicate here
                try:
                    matched = bool(rule.when(body))
                except Exception:  # noqa: BLE001 - a predicate that cannot read this request
                    matched = False
                if matched:
                    if not rule.repeat:
                        self._conditional.remove(rule)
                    return rule.reply
            if self._fifo:
                rule = self._fifo[0]
                if not rule.repeat:
                    self._fifo.pop(0)
                return rule.reply
        if self.responder is not None:
            return _as_reply(self.responder(body))
        return None

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> Self:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        handler = type("_BoundHandler", (_Handler,), {"script": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler, bind_and_activate=False)
        httpd.daemon_threads = True
        httpd.request_queue_size = 128  # many concurrent clients connect at once
        try:
            httpd.server_bind()
            httpd.server_activate()
        except BaseException:
            httpd.server_close()
            raise
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="scripted-openai-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._stopping.set()  # wakes handlers sleeping on a delay
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    script: ScriptedOpenAIServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes: do not hold them
    server_version = "ScriptedOpenAIServer/1"

    def log_message(self, format: str, *args: Any) -> None:  # the stdlib's signature
        """Keep test output quiet."""

    # -- plumbing -------------------------------------------------------------------------------

    def _record(self) -> RecordedRequest:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = RecordedRequest(self.command, self.path, dict(self.headers.items()), body, raw)
        with self.script._lock:
            self.script.requests.append(request)
        return request

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None,
              content_type: str = "application/json", trickle: float = 0.0) -> None:
        merged = {"Content-Type": content_type}
        for name, value in (headers or {}).items():
            merged = {k: v for k, v in merged.items() if k.lower() != name.lower()}
            merged[name] = value
        try:
            self.send_response(status)
            for name, value in merged.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if trickle > 0:
                self._trickle(payload, trickle)
            else:
                self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            # the client gave up (it timed out, say) before the answer was ready
            self.close_connection = True

    def _trickle(self, payload: bytes, pause: float) -> None:
        """Send ``payload`` a byte at a time, ``pause`` seconds apart, until the server stops."""
        for index in range(len(payload)):
            self.wfile.write(payload[index:index + 1])
            if self.script._stopping.wait(pause):
                self.close_connection = True
                return

    def _send_error_json(self, status: int, message: str, kind: str = "server_error",
                         headers: dict[str, str] | None = None) -> None:
        body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
        self._send(status, json.dumps(body).encode(), headers)

    # -- routes ------------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._record()
        if self.path.rstrip("/").endswith("/models"):
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "cogym-lab-tests"}
                    for m in self.script.models]
            self._send(200, json.dumps({"object": "list", "data": data}).encode())
        else:
            self._send_error_json(404, f"ScriptedOpenAIServer serves no GET {self.path}",
                                  "invalid_request_error")

    def do_POST(self) -> None:
        request = self._record()
        if not _is_chat(self.path):
            self._send_error_json(404, f"ScriptedOpenAIServer serves no POST {self.path}; "
                                       "only /v1/chat/completions", "invalid_request_error")
            return
        with self.script._serving():
            reply = self._reply_to(request)
        if reply is not None:
            self._answer(request.body, reply)

    def _reply_to(self, request: RecordedRequest) -> Reply | None:
        """The scripted reply, once its delay is over; ``None`` when an error was sent instead
        (or the server is stopping)."""
        if not isinstance(request.body, dict):
            self._send_error_json(400, "the request body is not a JSON object",
                                  "invalid_request_error")
            return None
        try:
            reply = self.script._choose(request.body)
        except Exception as exc:  # noqa: BLE001 - a responder that crashed: tell the test
            self._send_error_json(500, f"ScriptedOpenAIServer's responder raised "
                                       f"{type(exc).__name__}: {exc}")
            return None
        if reply is None:
            last = request.body.get("messages") or [{}]
            preview = str(last[-1].get("content", ""))[:200] if isinstance(last[-1], dict) else ""
            self._send_error_json(500, "ScriptedOpenAIServer has no scripted reply left for "
                                       f"this request (last message: {preview!r}); add one with "
                                       "server.add(...) or give a responder")
            return None
        delay = reply.delay if reply.delay is not None else \
            self.script.latency_for(request.body)
        if delay > 0 and self.script._stopping.wait(delay):
            return None  # the server is stopping
        return reply

    def _answer(self, body: dict[str, Any], reply: Reply) -> None:
        if reply.garbage is not False:
            garbage = reply.garbage
            if garbage is True:
                garbage = "<html><body>502 Bad Gateway: upstream sent an unreadable answer</body>"
            data = garbage.encode() if isinstance(garbage, str) else bytes(garbage or b"")
            self._send(reply.status, data, reply.headers)
            return
        if reply.status != 200:
            kind = {400: "invalid_request_error", 401: "authentication_error",
                    404: "not_found_error", 429: "rate_limit_exceeded"}.get(reply.status,
                                                                            "server_error")
            message = reply.error or f"scripted error with status {reply.status}"
            self._send_error_json(reply.status, message, kind, reply.headers)
            return
        if reply.usage is not None:
            prompt_tokens, completion_tokens = reply.usage
        else:
            prompt_tokens = _count_words(body.get("messages"))
            completion_tokens = len(reply.text.split()) if reply.text else 0
        choices = [] if reply.no_choices else [{
            "index": 0,
            "message": {"role": "assistant", "content": reply.text, "refusal": None},
            "logprobs": None,
            "finish_reason": reply.finish_reason,
        }]
        payload: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or "scripted",
            "choices": choices,
            "system_fingerprint": reply.system_fingerprint,
        }
        if reply.send_usage:
            payload["usage"] = {"prompt_tokens": prompt_tokens,
                                "completion_tokens": completion_tokens,
                                "total_tokens": prompt_tokens + completion_tokens}
        self._send(200, json.dumps(payload).encode(), reply.headers, trickle=reply.trickle)
