"""The LM interface every agent, simulated user and judge talks to.

One async method, :meth:`LM.complete`, with retries, token and latency accounting, and a call log
handled by the implementation. Callers handle :class:`LMError`, raised once retries are spent.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogym_lab.lm.config import LMConfig

Messages = list[dict[str, str]]  # OpenAI chat format: [{"role": "system"|"user"|"assistant", "content": ...}]


class LMError(RuntimeError):
    """The LM gave no usable answer after every retry. The message says why."""


class LMNotConfigured(LMError):
    """No model or endpoint is set. The message says exactly what to set."""


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

    def log_to(self, path: str | Path | None) -> None:
        """Append every call (prompt, completion, usage, latency; secrets redacted) to ``path``."""
        self.log_path = Path(path) if path else None

    @abc.abstractmethod
    async def complete(self, messages: Messages, *, purpose: str = "",
                       max_tokens: int | None = None, stop: list[str] | None = None) -> Completion:
        """One chat completion. Raises :class:`LMError` when every retry failed."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""
