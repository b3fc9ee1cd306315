"""The LM call log: one JSON line per call, with secrets masked.

Each line holds ``time`` (UTC, ISO 8601), ``purpose``, ``model``, ``base_url``, ``messages``,
``completion`` (the text, or null when the call failed), ``usage``, ``latency`` (seconds, all
attempts), ``attempts`` and ``error`` (null on success). The LMs' records (:func:`call_record`)
add ``seed`` (the sampling seed sent with the call, null when none was) and, when the server
returned one, its ``system_fingerprint``, and, for a call a member made while deciding on a
notification, ``seen_seq``: that notification's event (set by the member's node through
:func:`deciding_on`; the training export matches calls to the act they led to with it). Before
a line is written, every given
secret (such as the API key) is replaced by ``[REDACTED]`` wherever it occurs, and so is anything
shaped like an OpenAI-style key (``sk-`` and at least 16 key characters) or a ``Bearer`` token.
Every text is made valid Unicode first (:func:`cogym_lab.core.text.clean`), so a reply with a lone
surrogate can always be written as UTF-8.

The log is bounded. With ``max_bytes``, :func:`write_call` rotates the file before a line would
take it past that size: ``lm_calls.jsonl`` becomes ``lm_calls.1.jsonl``, the earlier
``lm_calls.1.jsonl`` becomes ``lm_calls.2.jsonl``, and so on; only ``backups`` rotated files are
kept, the oldest is deleted. A single line longer than ``max_bytes`` (a huge prompt) is written
with its longest strings cut in the middle and ``"truncated": true``, so no file ever exceeds the
cap. :func:`log_files` lists a log's files oldest first and :func:`read_calls` reads them all.

Cost per call. A batch logs a thousand calls a second from one process, so the log keeps each
file open (at most :data:`MAX_OPEN_LOGS` at once, the least recently written closed first) and
writes each line with one ``write`` to a descriptor opened for appending, with no buffer of its
own: a line is in the operating system's hands when :func:`write_call` returns, and a crash of the
process loses none (a line is never half written by this process). Cleaning and redaction are
remembered per long string (:mod:`cogym_lab.lm.text_memo`), so a prompt's history is scanned once,
not on every call that sends it again; and each message's JSON is kept (:class:`_MessageMemo`),
so a line is put together from the JSON of the messages resent, not encoded whole each time (the
same bytes: :func:`_line_data`). One process writes a given log: a file rotated by another
would go on being written under its new name until this one reopens it (:func:`close_logs`).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cogym_lab.core.jsonl import read_jsonl
from cogym_lab.lm.text_memo import MAX_CHARS, SizedCache, StringMemo, clean_messages

REDACTED = "[REDACTED]"

FIELDS = ("time", "purpose", "model", "base_url", "messages", "completion", "usage", "latency",
          "attempts", "error")

# "sk-" that does not continue a word ("task-..." is not a key), then 16+ key characters.
_KEY_PATTERN = re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_\-]{16,}")
_BEARER_PATTERN = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/\-]+=*")

_write_lock = threading.Lock()

#: Log files kept open at once; a batch of 1,000 sessions has 2,000 logs, more than a process
#: may usually hold open, so the least recently written are closed (and reopened when needed).
MAX_OPEN_LOGS = 128

#: The notification (its event's seq) the member whose code runs now is deciding on, if any.
_DECIDING_ON: ContextVar[int | None] = ContextVar("cogym_deciding_on", default=None)


@contextlib.contextmanager
def deciding_on(seq: int) -> Iterator[None]:
    """Within this block (and the tasks it starts), the LM calls logged record ``seen_seq``:
    the member is deciding on the notification of event ``seq``."""
    token = _DECIDING_ON.set(seq)
    try:
        yield
    finally:
        _DECIDING_ON.reset(token)

# How a string cut to fit the cap reads: head, this note, tail.
_CUT_NOTE = " [... {count} characters cut ...] "
_SMALLEST_CUT = 64  # below this a cut string says nothing; drop the bulky fields instead


def _redact_text(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    # Each pattern starts with a fixed word, and a plain search for it is twenty times faster
    # than the pattern's scan of a prompt (which every call logs). No other character matches
    # "bearer" ignoring case, so lower() finds every place the pattern would.
    if "sk-" in text:
        text = _KEY_PATTERN.sub(REDACTED, text)
    if "bearer" in text.lower():
        text = _BEARER_PATTERN.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return text


def _usable_secrets(secrets: Iterable[str | None] | None) -> list[str]:
    # Longest first, so a secret that contains another is masked whole; empty ones would match
    # everywhere and are dropped.
    return sorted({s for s in secrets or () if isinstance(s, str) and s}, key=len, reverse=True)


_redactors: dict[tuple[str, ...], StringMemo] = {}


def _redactor(secrets: tuple[str, ...]) -> StringMemo:
    """Redaction with these secrets, remembered per long string (each LM has its own secrets,
    the same for every call it makes)."""
    memo = _redactors.get(secrets)
    if memo is None:
        if len(_redactors) >= 64:  # many keys in one process: start again, bounded
            _redactors.clear()
        memo = _redactors[secrets] = StringMemo(lambda text: _redact_text(text, list(secrets)))
    return memo


def redact(obj: Any, secrets: Iterable[str | None] | None = ()) -> Any:
    """A copy of ``obj`` with every secret masked in every string, dict keys included.

    Dicts, lists and tuples are walked recursively; other values are returned as they are.
    """
    cleaned = _usable_secrets(secrets)
    text_of = _redactor(tuple(cleaned))

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return text_of(value)
        if isinstance(value, dict):
            return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, tuple):
            return tuple(walk(v) for v in value)
        return value

    return walk(obj)


def write_call(path: str | Path, record: dict[str, Any],
               secrets: Iterable[str | None] | None = (), *, max_bytes: int | None = None,
               backups: int = 2) -> None:
    """Append ``record`` to the JSON-lines file at ``path`` (folders created as needed).

    Missing standard fields are written as null (``time`` defaults to now); extra keys are kept.
    The whole line is cleaned (valid Unicode) and redacted with :func:`redact` first. With
    ``max_bytes``, the file is rotated first when this line would take it past ``max_bytes``,
    keeping ``backups`` rotated files (see the module's docstring).
    """
    line: dict[str, Any] = {name: record.get(name) for name in FIELDS}
    if line["time"] is None:
        line["time"] = datetime.now(UTC).isoformat(timespec="milliseconds")
    line.update({k: v for k, v in record.items() if k not in line})
    data, written = _line_data(line, _usable_secrets(secrets))
    if max_bytes and len(data) > max_bytes:
        data = _fit(written(), max_bytes - 1).encode("utf-8") + b"\n"
    target = os.fspath(path)
    if not os.path.isabs(target):  # one open file per log, however its path is spelt
        target = os.path.abspath(target)
    with _write_lock:
        log_file = _open_log(target)
        if max_bytes and log_file.size + len(data) > max_bytes:
            _close_log(target)
            _rotate(Path(target), backups)
            log_file = _open_log(target)
        log_file.write(data)


class _OpenLog:
    """A log file open for appending, and how large it is (counted, not asked each time)."""

    def __init__(self, path: str) -> None:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        try:
            self.fd = os.open(path, flags, 0o644)
        except FileNotFoundError:  # the first line: make the folder (not checked on every call)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            self.fd = os.open(path, flags, 0o644)
        self.size = os.fstat(self.fd).st_size

    def write(self, data: bytes) -> None:
        # One write for the whole line: the kernel has it (or none of it) when this returns.
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]
        self.size += len(data)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


_open_logs: OrderedDict[str, _OpenLog] = OrderedDict()  # by absolute path


def _open_log(path: str) -> _OpenLog:
    """The open file of the log at ``path`` (opened now if need be); under ``_write_lock``."""
    log_file = _open_logs.get(path)
    if log_file is not None:
        _open_logs.move_to_end(path)
        return log_file
    log_file = _open_logs[path] = _OpenLog(path)
    while len(_open_logs) > MAX_OPEN_LOGS:
        _, oldest = _open_logs.popitem(last=False)
        oldest.close()
    return log_file


def _close_log(path: str) -> None:
    log_file = _open_logs.pop(path, None)
    if log_file is not None:
        log_file.close()


def close_logs(path: str | Path | None = None) -> None:
    """Close the call log at ``path`` (every one, without it). Nothing is lost either way:
    each line was written when it was logged; the next line opens the file again."""
    with _write_lock:
        if path is None:
            for log_file in _open_logs.values():
                log_file.close()
            _open_logs.clear()
        else:
            _close_log(os.path.abspath(path))


def open_logs() -> int:
    """How many call logs this process holds open (for tests and diagnostics)."""
    return len(_open_logs)


atexit.register(close_logs)


def _encoded(line: dict[str, Any], secrets: list[str]) -> tuple[bytes, dict[str, Any]]:
    """``line`` as UTF-8 JSON, cleaned and redacted; and the line as written.

    What :func:`redact` and :func:`~cogym_lab.core.text.clean` would do, found out from the JSON
    text first, which is made anyway: walking a whole prompt's strings on every call cost more
    than the request. A string that needs cleaning makes the text unencodable; a string that
    holds a secret, ``sk-`` or ``bearer`` (in any case) puts it in the text too, as JSON escapes
    each character on its own (a secret is looked for in its escaped form as well). Only then
    is the line walked, as before.
    """
    text = _dumps(line)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (or a pair written as two escapes)
        line = clean_messages(line)
        text = _dumps(line)
        data = text.encode("utf-8")
    if _may_hold_secret(text, secrets):
        line = redact(line, secrets)
        data = _dumps(line).encode("utf-8")
    return data, line


def _line_data(line: dict[str, Any], secrets: list[str]
               ) -> tuple[bytes, Callable[[], dict[str, Any]]]:
    """What :func:`_encoded` gives for ``line``, byte for byte, and a newline; with each
    message of its ``messages`` encoded (and cleaned and redacted) once, not on every call that
    resends it. The rest of the line is encoded as before, with a marker where the messages go,
    and their JSON is put in its place. The line as written comes from the function returned
    (wanted only to cut an oversized line).
    """
    messages = line.get("messages")
    if not messages or not isinstance(messages, list):
        data, whole = _encoded(line, secrets)
        return data + b"\n", lambda: whole
    rest, rest_line = _encoded({**line, "messages": _MESSAGES_HERE}, secrets)
    around = rest.split(_MESSAGES_MARK)
    if len(around) != 2:  # the marker's text in the line itself: the whole line, as before
        data, whole = _encoded(line, secrets)
        return data + b"\n", lambda: whole
    encoded = _message_memo.encode_all(messages, secrets)
    # Each message's JSON is kept with the ", " that follows it (the encoder's separator), so
    # the line is put together in one copy.
    pieces = [around[0] + b"[", *(data for data, _ in encoded), b"]" + around[1] + b"\n"]
    pieces[-2] = pieces[-2][:-len(_SEPARATOR)]  # the last message has no ", " after it
    data = b"".join(pieces)

    def written() -> dict[str, Any]:
        listed = [message for _, message in encoded]
        return {key: listed if value is _MESSAGES_HERE else value
                for key, value in rest_line.items()}

    return data, written


class _Marker:
    """Where a line's messages go: encoded (``default=str``) as a string no text holds."""

    def __init__(self) -> None:
        # No "sk-" and no "bearer" in it: the marker alone never makes a line look for secrets.
        self.text = f"cogym:messages:{uuid.uuid4().hex}"

    def __str__(self) -> str:
        return self.text


_MESSAGES_HERE = _Marker()
_MESSAGES_MARK = f'"{_MESSAGES_HERE}"'.encode()
_SEPARATOR = b", "


class _MessageMemo:
    """Each message's line JSON (cleaned and redacted), kept by its content: a prompt's history
    is resent on every call, and encoding it anew made a call's log cost grow with it.

    A message of text fields only (``{"role": ..., "content": ...}``) is kept under its text and
    the secrets it was redacted with; Python keeps its strings' hashes, so a resent message is
    found without reading its text again. At most ``max_chars`` characters are kept, the least
    recently used dropped first; other messages are encoded each time.
    """

    def __init__(self, max_chars: int = MAX_CHARS) -> None:
        self._kept: SizedCache[tuple[Any, ...], tuple[bytes, Any]] = SizedCache(max_chars)

    def encode_all(self, messages: list[Any], secrets: list[str]) -> list[tuple[bytes, Any]]:
        """Each message's JSON followed by ``", "``, and the message as cleaned and redacted."""
        tag = tuple(secrets)
        found: list[tuple[bytes, Any] | None] = []
        missed: list[tuple[int, Any, tuple[Any, ...] | None]] = []
        kept = self._kept
        with kept.lock:  # one hold for the whole prompt: this runs for every message of a call
            for message in messages:
                key = None
                if type(message) is dict:
                    items = tuple(message.items())
                    for name, value in items:
                        if type(name) is not str or type(value) is not str:
                            break
                    else:
                        key = (tag, items)
                        entry = kept.get(key, refresh=True)
                        if entry is not None:
                            found.append(entry)
                            continue
                missed.append((len(found), message, key))
                found.append(None)
        for index, message, key in missed:
            data, written = _encoded(message, secrets)
            data += _SEPARATOR
            found[index] = (data, written)
            if key is not None:
                size = sum(len(name) + len(value) for name, value in key[1]) + len(data)
                kept.keep(key, (data, written), size)
        return found  # type: ignore[return-value]  # every None was filled in above

    def __len__(self) -> int:
        return len(self._kept)

    def clear(self) -> None:
        self._kept.clear()


_message_memo = _MessageMemo()


def _may_hold_secret(text: str, secrets: list[str]) -> bool:
    """Whether :func:`redact` could change a value whose JSON is ``text``."""
    if "sk-" in text:
        return True
    for secret in secrets:
        if secret in text or _escaped(secret) in text:
            return True
    return "bearer" in text.lower()


@functools.lru_cache(maxsize=64)
def _escaped(secret: str) -> str:
    """``secret`` as it reads inside a JSON string."""
    return json.dumps(secret, ensure_ascii=False)[1:-1]


def log_files(path: str | Path) -> list[Path]:
    """The files of the call log at ``path`` that exist, oldest first: the rotated ones
    (``lm_calls.N.jsonl`` ... ``lm_calls.1.jsonl``), then ``path`` itself."""
    target = Path(path)
    rotated = [_rotated(target, n) for n in range(_highest_rotation(target), 0, -1)]
    return [p for p in [*rotated, target] if p.is_file()]


# One encoder for every line: json.dumps builds one per call when given options.
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)


def _dumps(line: Any) -> str:
    return _ENCODER.encode(line)


def _fit(line: dict[str, Any], max_bytes: int) -> str:
    """``line`` as JSON of at most ``max_bytes`` bytes, its longest strings cut if need be."""
    text = _dumps(line)
    if len(text.encode("utf-8")) <= max_bytes:
        return text
    limit = max_bytes // 2
    while limit >= _SMALLEST_CUT:
        text = _dumps({**_cut_strings(line, limit), "truncated": True})
        if len(text.encode("utf-8")) <= max_bytes:
            return text
        limit //= 2
    # Thousands of messages: keep what says which call it was, and what came of it.
    small = {k: v for k, v in line.items() if k not in ("messages", "completion")}
    return _dumps({**_cut_strings(small, _SMALLEST_CUT), "messages": None, "completion": None,
                   "truncated": True})


def _cut_strings(value: Any, limit: int) -> Any:
    """A copy of ``value`` with every string longer than ``limit`` cut to its head and tail."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        half = limit // 2
        return value[:half] + _CUT_NOTE.format(count=len(value) - 2 * half) + value[-half:]
    if isinstance(value, dict):
        return {k: _cut_strings(v, limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_cut_strings(v, limit) for v in value]
    return value


def _rotated(path: Path, number: int) -> Path:
    """``lm_calls.jsonl`` -> ``lm_calls.NUMBER.jsonl``: the suffix stays, so tools that open
    ``*.jsonl`` still read rotated files."""
    return path.with_name(f"{path.stem}.{number}{path.suffix}")


def _highest_rotation(path: Path) -> int:
    if not path.parent.is_dir():
        return 0
    pattern = re.compile(rf"{re.escape(path.stem)}\.(\d+){re.escape(path.suffix)}")
    numbers = [int(m.group(1)) for p in path.parent.iterdir() if (m := pattern.fullmatch(p.name))]
    return max(numbers, default=0)


def _rotate(path: Path, backups: int) -> None:
    """Shift ``path`` to ``.1``, ``.1`` to ``.2`` ...; delete what falls beyond ``backups``."""
    for number in range(_highest_rotation(path), 0, -1):
        older = _rotated(path, number)
        if number >= backups:
            older.unlink(missing_ok=True)
        else:
            os.replace(older, _rotated(path, number + 1))
    if backups > 0:
        os.replace(path, _rotated(path, 1))
    else:
        path.unlink(missing_ok=True)


def call_record(*, purpose: str, model: str | None, base_url: str | None, messages: Any,
                completion: str | None, prompt_tokens: int, completion_tokens: int,
                latency: float, attempts: int, error: str | None, seed: int | None = None,
                system_fingerprint: str | None = None) -> dict[str, Any]:
    """The standard record of one call, as the LM implementations log it: ``seed`` is the one
    the call asked for (whether or not the endpoint honours it), ``system_fingerprint`` what
    the server said it ran on, kept only when it said so."""
    record: dict[str, Any] = {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "purpose": purpose,
        "model": model,
        "base_url": base_url,
        "messages": messages,
        "completion": completion,
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
        "latency": round(latency, 6),
        "attempts": attempts,
        "error": error,
        "seed": seed,
    }
    if system_fingerprint is not None:
        record["system_fingerprint"] = system_fingerprint
    seen_seq = _DECIDING_ON.get()
    if seen_seq is not None:
        record["seen_seq"] = seen_seq
    return record


def read_calls(path: str | Path) -> list[dict[str, Any]]:
    """Every record still kept in the call log at ``path``, oldest first: its rotated files,
    then ``path`` itself. Raises ``FileNotFoundError`` when there is no log at all."""
    files = log_files(path)
    if not files:
        raise FileNotFoundError(f"no call log at {path}")
    return [record for file in files for record in read_jsonl(file)]
