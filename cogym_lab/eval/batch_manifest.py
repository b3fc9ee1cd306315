"""``run.json``: what a batch run was asked to do, with which software and LMs, and how it went."""

from __future__ import annotations

import json
import os
import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from cogym_lab.core.protocol import LEGACY_PROTOCOL

RUN_FILE = "run.json"
RUN_FORMAT = 1
VERSIONED_PACKAGES = ("cogym_lab", "openai", "pydantic", "numpy", "pandas", "jupyter_client",
                      "bm25s", "tqdm")

SessionStatus = Literal["finished", "failed", "pending"]


class TokenCount(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: TokenCount) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.calls += other.calls


class Tokens(BaseModel):
    """Token totals, overall and by model name."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    by_model: dict[str, TokenCount] = Field(default_factory=dict)

    @classmethod
    def from_models(cls, by_model: dict[str, TokenCount]) -> Tokens:
        prompt = sum(c.prompt_tokens for c in by_model.values())
        completion = sum(c.completion_tokens for c in by_model.values())
        return cls(prompt_tokens=prompt, completion_tokens=completion,
                   total_tokens=prompt + completion, by_model=by_model)


class Price(BaseModel):
    """US dollars per million tokens."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)


class SessionEntry(BaseModel):
    """One instance of the batch. ``resumed`` marks a session finished by an earlier invocation."""

    instance: int
    directory: str  # relative to the run directory
    session_id: str
    status: SessionStatus = "pending"
    resumed: bool = False
    end_reason: str | None = None
    delivered: bool | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    duration: float | None = None
    tokens: Tokens = Field(default_factory=Tokens)
    cost_usd: float | None = None
    error: str | None = None


class Invocation(BaseModel):
    """One call of the runner on this directory (a resumed run has several)."""

    started_at: float
    ended_at: float | None = None
    ran: int = 0
    skipped: int = 0
    interrupted: bool = False


class Counts(BaseModel):
    total: int = 0
    finished: int = 0
    failed: int = 0
    pending: int = 0
    skipped: int = 0  # finished earlier and skipped by the latest invocation
    delivered: int = 0


class LMDescription(BaseModel):
    model: str | None = None
    base_url: str | None = None
    provider: str | None = None


class RunSummary(BaseModel):
    """The content of ``run.json``; also what :func:`cogym_lab.eval.run` returns."""

    format: int = RUN_FORMAT
    task: str
    team: str
    protocol: str = LEGACY_PROTOCOL  # the scoring protocol; runs from before it had a name
    team_config: dict[str, Any] = Field(default_factory=dict)
    instances: list[int] = Field(default_factory=list)
    concurrency: int = 1
    env_args: dict[str, Any] = Field(default_factory=dict)
    session_config: dict[str, Any] = Field(default_factory=dict)
    lms: dict[str, LMDescription] = Field(default_factory=dict)  # by role, "tools" for the env
    prices: dict[str, Price] = Field(default_factory=dict)  # by model name
    versions: dict[str, str] = Field(default_factory=dict)
    status: Literal["running", "finished", "interrupted"] = "running"
    started_at: float = 0.0
    ended_at: float | None = None
    counts: Counts = Field(default_factory=Counts)
    tokens: Tokens = Field(default_factory=Tokens)
    cost_usd: float | None = None
    sessions: list[SessionEntry] = Field(default_factory=list)
    invocations: list[Invocation] = Field(default_factory=list)
    out: str | None = Field(default=None, exclude=True)  # where it lives; not written

    def entry(self, instance: int) -> SessionEntry:
        return next(s for s in self.sessions if s.instance == instance)

    @property
    def failed(self) -> list[SessionEntry]:
        return [s for s in self.sessions if s.status == "failed"]

    def recount(self, skipped: int | None = None) -> None:
        """Refresh counts, token totals and cost from the session entries."""
        by_model: dict[str, TokenCount] = {}
        for session in self.sessions:
            for model, count in session.tokens.by_model.items():
                by_model.setdefault(model, TokenCount()).add(count)
        self.tokens = Tokens.from_models(by_model)
        costs = [s.cost_usd for s in self.sessions if s.cost_usd is not None]
        self.cost_usd = round(sum(costs), 6) if costs else None
        self.counts = Counts(
            total=len(self.sessions),
            finished=sum(s.status == "finished" for s in self.sessions),
            failed=sum(s.status == "failed" for s in self.sessions),
            pending=sum(s.status == "pending" for s in self.sessions),
            skipped=self.counts.skipped if skipped is None else skipped,
            delivered=sum(bool(s.delivered) for s in self.sessions),
        )

    def write(self, directory: str | Path) -> Path:
        """Write ``run.json`` atomically, so a kill never leaves half a file."""
        path = Path(directory) / RUN_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.model_dump(mode="json"), indent=2, ensure_ascii=False,
                                  default=str), encoding="utf-8")
        os.replace(tmp, path)
        return path


def read_run(directory: str | Path) -> RunSummary | None:
    """The ``run.json`` in ``directory``, or ``None`` when there is none (or it is unreadable)."""
    path = Path(directory) / RUN_FILE
    try:
        summary = RunSummary.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    summary.out = str(directory)
    return summary


def package_versions() -> dict[str, str]:
    """Python, the platform and the versions of the packages a run's results depend on."""
    versions = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions
