"""The LM call log: one JSON line per call, with secrets masked.

Each line holds ``time`` (UTC, ISO 8601), ``purpose``, ``model``, ``base_url``, ``messages``,
``completion`` (the text, or null when the call failed), ``usage``, ``latency`` (seconds, all
attempts), ``attempts`` and ``error`` (null on success). Before a line is written, every given
secret (such as the API key) is replaced by ``[REDACTED]`` wherever it occurs, and so is anything
shaped like an OpenAI-style key (``sk-`` and at least 16 key characters) or a ``Bearer`` token.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REDACTED = "[REDACTED]"

FIELDS = ("time", "purpose", "model", "base_url", "messages", "completion", "usage", "latency",
          "attempts", "error")

# "sk-" that does not continue a word ("task-..." is not a key), then 16+ key characters.
_KEY_PATTERN = re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_\-]{16,}")
_BEARER_PATTERN = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/\-]+=*")

_write_lock = threading.Lock()


def _redact_text(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    text = _KEY_PATTERN.sub(REDACTED, text)
    return _BEARER_PATTERN.sub(lambda m: f"{m.group(1)} {REDACTED}", text)


def _usable_secrets(secrets: Iterable[str | None] | None) -> list[str]:
    # Longest first, so a secret that contains another is masked whole; empty ones would match
    # everywhere and are dropped.
    return sorted({s for s in secrets or () if isinstance(s, str) and s}, key=len, reverse=True)


def redact(obj: Any, secrets: Iterable[str | None] | None = ()) -> Any:
    """A copy of ``obj`` with every secret masked in every string, dict keys included.

    Dicts, lists and tuples are walked recursively; other values are returned as they are.
    """
    cleaned = _usable_secrets(secrets)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return _redact_text(value, cleaned)
        if isinstance(value, dict):
            return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, tuple):
            return tuple(walk(v) for v in value)
        return value

    return walk(obj)


def write_call(path: str | Path, record: dict[str, Any],
               secrets: Iterable[str | None] | None = ()) -> None:
    """Append ``record`` to the JSON-lines file at ``path`` (folders created as needed).

    Missing standard fields are written as null (``time`` defaults to now); extra keys are kept.
    The whole line is redacted with :func:`redact` first.
    """
    line: dict[str, Any] = {name: record.get(name) for name in FIELDS}
    if line["time"] is None:
        line["time"] = datetime.now(UTC).isoformat(timespec="milliseconds")
    line.update({k: v for k, v in record.items() if k not in line})
    text = json.dumps(redact(line, secrets), ensure_ascii=False, default=str)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _write_lock, target.open("a", encoding="utf-8") as handle:
        handle.write(text + "\n")


def call_record(*, purpose: str, model: str | None, base_url: str | None, messages: Any,
                completion: str | None, prompt_tokens: int, completion_tokens: int,
                latency: float, attempts: int, error: str | None) -> dict[str, Any]:
    """The standard record of one call, as the LM implementations log it."""
    return {
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
    }


def read_calls(path: str | Path) -> list[dict[str, Any]]:
    """Every record in a call log, in order."""
    with Path(path).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
