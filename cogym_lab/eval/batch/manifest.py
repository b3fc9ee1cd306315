"""A batch run's manifest: what it was asked to do, with which software and LMs, how it went.

Two files. ``run.json`` holds the run's header (configuration, versions, LMs, invocations) and the
session entries as of its last write; it is rewritten, atomically, only when an invocation starts
and when it ends. ``sessions.jsonl`` takes one small JSON line per session that ends in between,
appended: rewriting the whole ``run.json`` after every session cost time that grew with the
number of sessions, all of it on the batch's event loop (34 ms a write at 1,000 sessions).

Once an invocation has written its final ``run.json``, it deletes the log: the folder of a run
that is not under way holds ``run.json`` alone. Each line carries the index of the invocation
that wrote it, so lines left over from an earlier
invocation (one killed before it could start afresh) are never applied over a newer ``run.json``.
:func:`read_run` folds the current invocation's lines into ``run.json`` while it is still
``running``; a line torn by a kill mid-write is ignored (that session's own ``session.json`` still
says whether it ended, which is what a resume goes by).
"""

from __future__ import annotations

import json
import os
import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from cogym_lab.core.loop_lag import LoopLag
from cogym_lab.core.outcome_class import OutcomeClass
from cogym_lab.core.protocol import LEGACY_PROTOCOL
from cogym_lab.lm.limit_rules import ProviderLimits
from cogym_lab.provenance import Provenance

RUN_FILE = "run.json"
SESSIONS_FILE = "sessions.jsonl"
# 2: session entries that ended after run.json was written are in sessions.jsonl. Format 1 runs
# (run.json rewritten after every session, no sessions.jsonl) read the same way.
RUN_FORMAT = 2
# aiohttp carries the LM calls (plain JSON posts); llama_cpp_python those of a local model.
VERSIONED_PACKAGES = ("cogym_lab", "aiohttp", "llama_cpp_python", "pydantic", "numpy", "pandas",
                      "jupyter_client", "bm25s", "tqdm")
#: Packages recorded only when installed, and labelled as not carrying the LM calls: no LM
#: imports them, so their version decides nothing a run did.
UNUSED_PACKAGES = ("openai",)
UNUSED_LABEL = " (installed; not used for LM calls)"

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
    """One session of the batch: a trial of an instance (trial 0 when each instance runs once).
    ``resumed`` marks a session finished by an earlier invocation."""

    instance: int
    trial: int = Field(default=0, ge=0)  # runs from before trials had one each: trial 0
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
    #: Whether the session counts or ended for a cause outside the team
    #: (:mod:`cogym_lab.core.outcome_class`); ``None`` while pending, and in older runs.
    outcome_class: OutcomeClass | None = None
    #: The LM failure behind a failure class, in one sentence (``LMFailure.describe``).
    cause: str | None = None

    @property
    def key(self) -> tuple[int, int]:
        """(instance, trial): what names a session of the run."""
        return self.instance, self.trial

    @property
    def counted_class(self) -> OutcomeClass | None:
        """Its outcome class; for runs from before it was recorded, from its status."""
        if self.status == "pending":
            return None
        if self.status == "failed":
            return "infrastructure"
        return self.outcome_class or "completed"


class Invocation(BaseModel):
    """One call of the runner on this directory (a resumed run has several)."""

    started_at: float
    ended_at: float | None = None
    ran: int = 0
    skipped: int = 0
    interrupted: bool = False
    #: What ran its sessions: ``{"engine": "inprocess", "concurrency": 8}``, or the Ray
    #: engine's nodes and actors (:mod:`cogym_lab.eval.batch.engines`); empty for older runs.
    engine: dict[str, Any] = Field(default_factory=dict)
    #: The provider limits its LM calls ran under (the team file's and the run's own); none for
    #: older runs (docs/evaluation-runs.md, "Provider limits").
    limits: ProviderLimits = Field(default_factory=ProviderLimits)
    #: How late the event loop its sessions ran on woke (the in-process engine's; none for
    #: Ray, whose actors run them, and older runs). A p99 of seconds means the sessions' own
    #: timers ran that late: the process was short of CPU for that many sessions at once.
    loop_lag: LoopLag | None = None
    #: With the in-process engine on worker processes, each worker's loop lag (``loop_lag`` is
    #: then the worst of them); none otherwise.
    loop_lags: list[LoopLag] | None = None
    #: The versions that decide a score when it started (``Provenance.versions``): a run
    #: resumed after an update shows where its sessions' graders or prompts changed.
    versions: dict[str, str | None] = Field(default_factory=dict)


class Counts(BaseModel):
    total: int = 0
    finished: int = 0
    failed: int = 0
    pending: int = 0
    skipped: int = 0  # finished earlier and skipped by the latest invocation
    delivered: int = 0
    #: The sessions that ended (finished or failed) by outcome class: they add up to
    #: ``finished + failed`` (cogym_lab.core.outcome_class).
    completed: int = 0
    infrastructure: int = 0
    simulator_error: int = 0
    agent_failure: int = 0


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
    #: Which data the task read: ``"full"``, or ``"sample"`` (the small sample that comes with
    #: the package; not comparable with the papers' numbers). ``None``: the task reads no
    #: dataset, or the run is from before this was recorded.
    data: Literal["full", "sample"] | None = None
    team_config: dict[str, Any] = Field(default_factory=dict)
    instances: list[int] = Field(default_factory=list)
    trials: int = 1  # the most trials any instance has (sessions per instance)
    concurrency: int = 1
    env_args: dict[str, Any] = Field(default_factory=dict)
    session_config: dict[str, Any] = Field(default_factory=dict)
    lms: dict[str, LMDescription] = Field(default_factory=dict)  # by role, "tools" for the env
    prices: dict[str, Price] = Field(default_factory=dict)  # by model name
    versions: dict[str, str] = Field(default_factory=dict)
    #: What the run was made with, as of its latest invocation: graders', judges' and prompts'
    #: versions, data checksums, standard or custom (docs/evaluation-runs.md, "Provenance").
    #: Each session's ``session.json`` holds its own. ``None``: a run from before it was kept.
    provenance: Provenance | None = None
    status: Literal["running", "finished", "interrupted"] = "running"
    started_at: float = 0.0
    ended_at: float | None = None
    counts: Counts = Field(default_factory=Counts)
    tokens: Tokens = Field(default_factory=Tokens)
    cost_usd: float | None = None
    sessions: list[SessionEntry] = Field(default_factory=list)
    invocations: list[Invocation] = Field(default_factory=list)
    out: str | None = Field(default=None, exclude=True)  # where it lives; not written

    def entry(self, instance: int, trial: int = 0) -> SessionEntry:
        return next(s for s in self.sessions if s.key == (instance, trial))

    @property
    def failed(self) -> list[SessionEntry]:
        return [s for s in self.sessions if s.status == "failed"]

    @property
    def not_counted(self) -> list[SessionEntry]:
        """The sessions that ended for a cause outside the team (crashes included): what
        ``retry_failed`` runs again."""
        return [s for s in self.sessions if s.counted_class not in (None, "completed")]

    def recount(self, skipped: int | None = None) -> None:
        """Refresh counts, token totals and cost from the session entries."""
        by_model: dict[str, TokenCount] = {}
        for session in self.sessions:
            for model, count in session.tokens.by_model.items():
                by_model.setdefault(model, TokenCount()).add(count)
        self.tokens = Tokens.from_models(by_model)
        self.trials = max((s.trial for s in self.sessions), default=0) + 1
        costs = [s.cost_usd for s in self.sessions if s.cost_usd is not None]
        self.cost_usd = round(sum(costs), 6) if costs else None
        self.counts = Counts(
            total=len(self.sessions),
            finished=sum(s.status == "finished" for s in self.sessions),
            failed=sum(s.status == "failed" for s in self.sessions),
            pending=sum(s.status == "pending" for s in self.sessions),
            skipped=self.counts.skipped if skipped is None else skipped,
            delivered=sum(bool(s.delivered) for s in self.sessions),
            **{name: sum(s.counted_class == name for s in self.sessions)
               for name in ("completed", "infrastructure", "simulator_error", "agent_failure")},
        )

    def write(self, directory: str | Path) -> Path:
        """Write ``run.json`` atomically, so a kill never leaves half a file."""
        path = Path(directory) / RUN_FILE
        tmp = path.with_suffix(".json.tmp")
        try:
            tmp.write_text(json.dumps(self.model_dump(mode="json"), indent=2,
                                      ensure_ascii=False, default=str), encoding="utf-8")
        except OSError:
            tmp.unlink(missing_ok=True)  # a torn copy (a full disk): run.json is as it was
            raise
        os.replace(tmp, path)
        return path


class SessionLog:
    """``sessions.jsonl``: the entries of the sessions one invocation ended, one line each.

    Each line is written with a single ``write`` on a file opened for appending, so the cost of
    recording a session is its own line, whatever the number of sessions. Lines reach the
    operating system at once (no buffering in this process), so a killed process loses none it
    finished writing; a line cut short is skipped by :func:`read_run`.
    """

    def __init__(self, directory: str | Path, invocation: int) -> None:
        """Start the log of ``invocation`` (its index in ``RunSummary.invocations``), emptying
        whatever an earlier invocation left: ``run.json``, written just before, holds it all."""
        self.path = Path(directory) / SESSIONS_FILE
        self.invocation = invocation
        self.bytes_written = 0
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC
                                       | os.O_APPEND, 0o644)

    def append(self, entry: SessionEntry) -> int:
        """Record that ``entry``'s session ended; the number of bytes written."""
        if self._fd is None:
            raise ValueError(f"{self.path} is closed")
        line = json.dumps({"invocation": self.invocation, "session": entry.model_dump(mode="json")},
                          ensure_ascii=False, default=str) + "\n"
        data = line.encode("utf-8")
        os.write(self._fd, data)  # one call: a line is either whole or the last, torn one
        self.bytes_written += len(data)
        return len(data)

    def close(self, *, remove: bool = False) -> None:
        """Close the log; ``remove`` deletes it too, once ``run.json`` holds all it says."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if remove:
            self.path.unlink(missing_ok=True)


def read_session_log(directory: str | Path, invocation: int) -> list[SessionEntry]:
    """The entries ``invocation`` appended to ``sessions.jsonl``, in order; a line that does not
    parse (the last one, torn by a kill) or that another invocation wrote is left out."""
    try:
        lines = (Path(directory) / SESSIONS_FILE).read_bytes().splitlines()
    except OSError:
        return []
    entries = []
    for line in lines:
        try:
            record = json.loads(line)
            if not isinstance(record, dict) or record.get("invocation") != invocation:
                continue
            entries.append(SessionEntry.model_validate(record.get("session")))
        except ValueError:  # torn (or otherwise damaged): that line alone is lost
            continue
    return entries


def read_run(directory: str | Path) -> RunSummary | None:
    """The run in ``directory`` (``run.json`` with the sessions that ended since it was written,
    from ``sessions.jsonl``), or ``None`` when there is none (or it is unreadable)."""
    path = Path(directory) / RUN_FILE
    try:
        summary = RunSummary.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    summary.out = str(directory)
    if summary.status == "running" and summary.invocations:
        # Written at the invocation's start and not since: it ended no session yet, as far as
        # run.json knows. A run that ended wrote run.json whole, so its log adds nothing.
        latest = len(summary.invocations) - 1
        ended = read_session_log(directory, latest)
        if ended:
            at = {s.key: i for i, s in enumerate(summary.sessions)}
            for entry in ended:
                if entry.key in at:
                    summary.sessions[at[entry.key]] = entry
            summary.invocations[latest].ran = len(ended)
            summary.recount()
    return summary


def package_versions() -> dict[str, str]:
    """Python, the platform and the versions of the packages a run's results depend on (those
    installed); ``openai``, when installed, labelled as not carrying the LM calls."""
    versions = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    for name in UNUSED_PACKAGES:
        try:
            versions[name] = metadata.version(name) + UNUSED_LABEL
        except metadata.PackageNotFoundError:
            continue
    return versions
