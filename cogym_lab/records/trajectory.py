"""Read one results directory into a :class:`SessionRecord`: everything the metrics need.

A results directory holds ``session.json``, ``events.jsonl``, a folder per member
(``member.json``, ``usage.json``, ``lm_calls.jsonl``) and, after a person rated the session in a
notebook panel, ``ratings.json``. A run directory (from the batch runner) holds one results
directory per instance and a ``run.json``; :func:`find_sessions` finds them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from cogym_lab.core import ActionError
from cogym_lab.core.env import is_non_empty
from cogym_lab.core.grammar import parse_canonical
from cogym_lab.core.jsonl import read_jsonl_or_empty
from cogym_lab.core.messages import ChatMessage, Event, EventType, TeamMember
from cogym_lab.core.outcome_class import OutcomeClass, outcome_class
from cogym_lab.core.protocol import ScoringProtocol, get_protocol, recorded_protocol
from cogym_lab.core.team_acts import read_selection
from cogym_lab.lm.calllog import log_files
from cogym_lab.lm.failures import LMFailure
from cogym_lab.nodes.results import EVENTS_FILE, SESSION_FILE
from cogym_lab.records import likert

RATINGS_FILE = "ratings.json"
RUN_FILE = "run.json"
#: A folder holding a file of this name holds sessions derived from a run (the noise study's
#: reruns, ``cogym_lab.eval.batch.noise``): searching the run does not count them as its sessions.
DERIVED_MARKER = ".derived"

#: Acts that coordinate the team rather than change the task's workspace. A wait is left out:
#: it is a keep-alive that changes nothing.
COLLABORATION_EVENTS = frozenset({
    EventType.MESSAGE, EventType.CONFIRM_REQUEST, EventType.CONFIRM_ACCEPT,
    EventType.CONFIRM_REJECT, EventType.PAUSE, EventType.RESUME, EventType.FINISH,
})


class Rating(BaseModel):
    """What a person said about a session in the rating panel (1-5 Likert scales). The Cocoa
    items' old names read as their new ones (:func:`~cogym_lab.records.likert.renamed`), and
    :attr:`utility` is the general-utility composite."""

    outcome_rating: int | None = Field(default=None, ge=1, le=5)
    satisfaction: int | None = Field(default=None, ge=1, le=5)
    # Cocoa's nine study items (optional in the form), as records.likert names them.
    useful_outputs: int | None = Field(default=None, ge=1, le=5, strict=True)
    insights: int | None = Field(default=None, ge=1, le=5, strict=True)
    clear_steps: int | None = Field(default=None, ge=1, le=5, strict=True)
    understanding: int | None = Field(default=None, ge=1, le=5, strict=True)
    easy_to_use: int | None = Field(default=None, ge=1, le=5, strict=True)
    steerable: int | None = Field(default=None, ge=1, le=5, strict=True)
    fits_workflow: int | None = Field(default=None, ge=1, le=5, strict=True)
    artifact: int | None = Field(default=None, ge=1, le=5, strict=True)
    next_steps: int | None = Field(default=None, ge=1, le=5, strict=True)
    comment: str = ""
    # Co-Gym's pairwise comparison (Appendix C.4): the person's outcome against the autonomous
    # agent's on the same instance, the order the two were shown in, and that session's folder.
    pairwise: Literal["own", "autonomous", "tie"] | None = None
    pairwise_order: list[Literal["own", "autonomous"]] | None = None
    pairwise_baseline: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _old_item_names(cls, data: Any) -> Any:
        return likert.renamed(data) if isinstance(data, dict) else data

    @property
    def utility(self) -> float | None:
        """The general-utility composite: the mean of the utility items answered."""
        return likert.utility_composite(self.model_dump(include=set(likert.UTILITY_ITEMS)))


@dataclass(frozen=True)
class Tokens:
    """LM tokens one member used: ``completion`` is what it wrote, ``prompt`` what it read."""

    prompt: int = 0
    completion: int = 0

    @property
    def total(self) -> int:
        return self.prompt + self.completion


@dataclass
class SessionRecord:
    """One session as its results directory tells it. Read with :func:`load_session`."""

    path: Path
    session: dict[str, Any]
    events: list[Event]
    members: dict[str, dict[str, Any]] = field(default_factory=dict)  # role -> member files
    ratings: dict[str, Rating] = field(default_factory=dict)
    run: dict[str, Any] | None = None  # run.json of the run directory around it, if any

    # -- who and what ------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return str(self.session.get("session_id") or self.path.name)

    @property
    def task(self) -> str:
        return str(self.session.get("task") or "unknown")

    @property
    def env_args(self) -> dict[str, Any]:
        return dict(self.session.get("env_args") or {})

    @property
    def instance(self) -> str:
        """The instance id that pairs sessions across runs: the instance number when the task
        has one, else the env arguments as JSON."""
        args = self.env_args
        if "instance" in args:
            return str(args["instance"])
        return json.dumps({k: v for k, v in args.items() if k != "data_dir"}, sort_keys=True)

    @cached_property
    def team(self) -> list[TeamMember]:
        return [TeamMember.model_validate(m) for m in self.session.get("team") or []]

    @property
    def kinds(self) -> dict[str, str]:
        """Role -> ``agent``, ``user`` (simulated) or ``person``."""
        return {member.role: member.kind for member in self.team}

    @property
    def roles(self) -> list[str]:
        return [member.role for member in self.team]

    @property
    def agent_roles(self) -> list[str]:
        return [member.role for member in self.team if not member.is_human]

    @property
    def human_roles(self) -> list[str]:
        """People and simulated users: the human side of the team."""
        return [member.role for member in self.team if member.is_human]

    def is_human(self, role: str | None) -> bool:
        return role is not None and self.kinds.get(role, "agent") != "agent"

    @property
    def agent_type(self) -> str:
        """The agent's type (``autonomous``, ``collaborative``, ``collaborative-planning``, ...),
        from the agent's usage file, else the run's team (so a session that failed before it
        wrote anything still counts for its system), else the agent's class name."""
        for role in self.agent_roles:
            usage = self.members.get(role, {}).get("usage", {})
            if usage.get("agent_type"):
                return str(usage["agent_type"])
        planned = _run_agent_setting(self.run, "type")
        if planned:
            return planned
        team = _run_team_name(self.run)
        if team:
            return team
        for role in self.agent_roles:
            teammate = self.members.get(role, {}).get("member", {}).get("teammate")
            if teammate:
                return str(teammate)
        return "unknown"

    @property
    def model(self) -> str:
        """The agent's LM, or ``-`` for agents without one."""
        for role in self.agent_roles:
            usage = self.members.get(role, {}).get("usage", {})
            if usage.get("model"):
                return str(usage["model"])
        return _run_agent_setting(self.run, "model") or "-"

    @property
    def run_name(self) -> str:
        """The run directory this session belongs to (its folder name), or ``-``."""
        return self.path.parent.name if self.run is not None else "-"

    @property
    def trial(self) -> int:
        """Which trial of its instance this session was (0 for a run without trials, or a
        session not from a batch run)."""
        batch = self.session.get("batch")
        trial = batch.get("trial") if isinstance(batch, dict) else None
        return trial if isinstance(trial, int) and not isinstance(trial, bool) else 0

    @property
    def seeds(self) -> dict[str, int]:
        """The seeds the batch runner gave this session, by role (``env`` for the
        environment's); empty for a session run without them."""
        batch = self.session.get("batch")
        seeds = batch.get("seeds") if isinstance(batch, dict) else None
        if not isinstance(seeds, dict):
            return {}
        return {str(role): seed for role, seed in seeds.items()
                if isinstance(seed, int) and not isinstance(seed, bool)}

    # -- how it ended ------------------------------------------------------------------------

    @property
    def status(self) -> str:
        return str(self.session.get("status") or "unknown")

    @property
    def error(self) -> str | None:
        error = self.session.get("error")
        return str(error) if error else None

    @property
    def finished(self) -> bool:
        return self.status == "finished" and self.error is None

    @property
    def end_reason(self) -> str | None:
        return self.session.get("end_reason")

    @property
    def outcome_class(self) -> OutcomeClass:
        """Whether the session counts (``completed``) or ended for a cause outside the team
        (``infrastructure``, ``simulator_error``, ``agent_failure``):
        :mod:`cogym_lab.core.outcome_class`."""
        return outcome_class(self.session)

    @property
    def cause(self) -> str | None:
        """The LM failure that ended the session or cost its grade, in one sentence."""
        recorded = self.session.get("failure")
        if not isinstance(recorded, dict):
            return self.error
        try:
            return LMFailure.model_validate(recorded).describe()
        except ValueError:
            return str(recorded.get("reason") or "an LM failed")

    @property
    def outcome(self) -> Any:
        return self.session.get("outcome")

    @property
    def protocol(self) -> ScoringProtocol:
        """The scoring protocol the session followed (see ``cogym_lab.core.protocol``)."""
        return get_protocol(recorded_protocol(self.session))

    @property
    def data(self) -> str | None:
        """Which data the task read, as ``session.json`` records it: ``"full"``, ``"sample"``
        (the small sample that comes with cogym_lab, not comparable with the papers' numbers);
        ``None`` for a task that reads no dataset and for sessions from before it was
        recorded."""
        value = self.session.get("data")
        return value if isinstance(value, str) else None

    @property
    def interaction(self) -> str:
        """``"notifications"`` (Co-Gym's protocol) or ``"turns"`` (strict turn-taking, the
        paper's §5.3 ablation), as ``session.json`` records it; sessions from before the option
        were notifications."""
        config = self.session.get("config")
        recorded = self.session.get("interaction") or (
            config.get("interaction") if isinstance(config, dict) else None)
        return str(recorded or "notifications")

    @property
    def delivered(self) -> bool:
        """Whether the session delivered, as its ``session.json`` says; for a file that does not
        say, a non-empty outcome at an ending its protocol counts."""
        if "delivered" in self.session:
            return bool(self.session["delivered"])
        return is_non_empty(self.outcome) and self.protocol.delivers(self.end_reason)

    @property
    def leakage(self) -> dict[str, Any] | None:
        """The session's leakage check (``checked``, ``leaks``, ...), or ``None`` for a session
        that ended before it was written."""
        value = self.session.get("leakage")
        return value if isinstance(value, dict) else None

    @property
    def scores(self) -> dict[str, float]:
        return {k: float(v) for k, v in (self.session.get("scores") or {}).items()
                if isinstance(v, int | float)}

    @property
    def performance(self) -> float:
        """The task grader's ``performance`` in [0, 1]; NaN when the session was not graded."""
        return self.scores.get("performance", math.nan)

    # -- what happened ------------------------------------------------------------------------

    @cached_property
    def messages(self) -> list[ChatMessage]:
        """The chat, rebuilt from the logged message events."""
        chat = []
        for event in self.events:
            if event.type is not EventType.MESSAGE or not event.action or event.actor is None:
                continue
            try:
                args = parse_canonical(event.action).args
            except ActionError:
                continue
            try:
                selection = read_selection(args.get("selection"))
            except ActionError:  # a log the rules would have refused: the message without it
                selection = None
            chat.append(ChatMessage(seq=event.seq, time=event.time, sender=event.actor,
                                    text=str(args.get("message", "")), to=args.get("to"),
                                    selection=selection))
        return chat

    def actions_by(self, role: str) -> list[Event]:
        """Every logged act of ``role`` (refused ones included), in order."""
        return [event for event in self.events if event.actor == role]

    @property
    def tokens(self) -> dict[str, Tokens]:
        """LM tokens per member role, from its usage file or, failing that, its call log."""
        return {role: self._tokens(role) for role in self.roles}

    def _tokens(self, role: str) -> Tokens:
        files = self.members.get(role, {})
        usage = files.get("usage")
        if usage:
            return Tokens(int(usage.get("prompt_tokens", 0)),
                          int(usage.get("completion_tokens", 0)))
        calls = files.get("calls", [])
        return Tokens(sum(int((c.get("usage") or {}).get("prompt_tokens") or 0) for c in calls),
                      sum(int((c.get("usage") or {}).get("completion_tokens") or 0)
                          for c in calls))

    def words_written(self, role: str) -> int:
        """Words in ``role``'s messages and actions: the effort of a member without an LM."""
        return sum(len((event.action or "").split()) for event in self.actions_by(role)
                   if event.status == "ok")

    def rating_values(self, name: str) -> list[float]:
        return [value for rating in self.ratings.values()
                if (value := getattr(rating, name)) is not None]


def _run_agent_setting(run: dict[str, Any] | None, name: str) -> str | None:
    """The first agent's ``type`` or ``model`` as the run's team file and LM list give it."""
    if not run:
        return None
    members = (run.get("team_config") or {}).get("members") or {}
    for role, member in members.items():
        if not isinstance(member, dict) or member.get("kind", "agent") != "agent":
            continue
        if name == "type":
            return member.get("type") or None
        lm = (run.get("lms") or {}).get(role) or {}
        return lm.get("model") or (member.get("lm") or {}).get("model") or None
    return None


def _run_team_name(run: dict[str, Any] | None) -> str | None:
    if not run:
        return None
    nested = run.get("config")
    config = nested if isinstance(nested, dict) else run
    team = config.get("team")
    if isinstance(team, dict):
        return team.get("name")
    return str(team) if team else None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON Lines file, by the one log reader (``cogym_lab.core.jsonl``): a
    torn last line is skipped with a warning, a bad line before it raises ``LogReadError``."""
    return read_jsonl_or_empty(path)


def _read_events(path: Path) -> list[Event]:
    return read_jsonl_or_empty(path, Event.model_validate_json)


def _read_ratings(path: Path) -> dict[str, Rating]:
    data = _read_json(path)
    if not isinstance(data, dict):
        return {}
    ratings = {}
    for role, value in data.items():
        try:
            ratings[str(role)] = Rating.model_validate(value)
        except ValidationError:
            continue
    return ratings


def load_session(path: str | Path) -> SessionRecord:
    """Read one session's results directory.

    Raises ``FileNotFoundError`` when ``path`` has no ``session.json``. A log cut short by a
    crash is read up to its last whole line; a log damaged before its last line raises
    ``cogym_lab.core.jsonl.LogReadError`` (a ``ValueError``) naming the file and the line.
    """
    directory = Path(path)
    session = _read_json(directory / SESSION_FILE)
    if not isinstance(session, dict):
        raise FileNotFoundError(f"{directory} is not a session's results directory: it has no "
                                f"readable {SESSION_FILE}")
    members: dict[str, dict[str, Any]] = {}
    for member in session.get("team") or []:
        role = member.get("role")
        folder = directory / str(role)
        if not role or not folder.is_dir():
            continue
        members[role] = {
            "member": _read_json(folder / "member.json") or {},
            "usage": _read_json(folder / "usage.json") or {},
            "calls": [call for log in log_files(folder / "lm_calls.jsonl")
                      for call in _read_jsonl(log)],  # rotated parts first
        }
    run = _read_json(directory.parent / RUN_FILE)
    return SessionRecord(path=directory, session=session,
                         events=_read_events(directory / EVENTS_FILE), members=members,
                         ratings=_read_ratings(directory / RATINGS_FILE),
                         run=run if isinstance(run, dict) else None)


def find_sessions(paths: Iterable[str | Path]) -> list[Path]:
    """Session directories in ``paths``: each path is a session directory, or a folder (a run
    directory, or a folder of runs) searched for them. The search skips hidden folders (a run's
    ``.replaced`` sessions) and folders marked :data:`DERIVED_MARKER` (a noise study's reruns);
    name such a folder itself to read its sessions."""
    found: dict[Path, None] = {}
    for path in paths:
        root = Path(path)
        if (root / SESSION_FILE).is_file():
            found[root] = None
            continue
        if not root.is_dir():
            raise FileNotFoundError(f"{root} is neither a session nor a run directory")
        for session_file in sorted(root.rglob(SESSION_FILE)):
            if not _set_aside(root, session_file.parent):
                found[session_file.parent] = None
    return list(found)


def _set_aside(root: Path, directory: Path) -> bool:
    """Whether ``directory``, found under ``root``, lies in a hidden or derived folder."""
    folder = directory
    while folder != root:
        if folder.name.startswith(".") or (folder / DERIVED_MARKER).exists():
            return True
        folder = folder.parent
    return False


def load_sessions(paths: Iterable[str | Path]) -> list[SessionRecord]:
    """Every session found in ``paths`` (see :func:`find_sessions`)."""
    return [load_session(path) for path in find_sessions(paths)]
