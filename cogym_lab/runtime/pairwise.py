"""The pairwise question of the rating form (Co-Gym Appendix C.4): the person compares their
session's outcome with the fully autonomous agent's outcome on the same task and instance.

Where the autonomous outcome comes from: the host's **baseline folders** (``SessionHost(...,
baselines=[...])``; ``c.CogymLab.baseline_dirs`` on a server; ``COGYM_BASELINE_DIRS`` for a
kernel's own host), each a run directory or a folder of them, as ``cogym-lab eval run`` writes
with the ``autonomous`` team. The baseline of a session is a session found there of the same task
and instance (as the report pairs them: ``SessionRecord.instance``) whose team has no human side
(no person, no simulated user): an autonomous agent working alone. When several match (repeated
trials), the one whose agent type is ``autonomous`` comes first, then a finished one, then the
lowest trial, then the first by folder name. Without baseline folders, or without a match, the
form does not ask the question and says why.

The two outcomes are shown as "A" and "B" in an order drawn at random the first time a seat asks
and kept in ``pairwise.json`` in the session's folder, so a reload shows the same order and the
rating records the order that was shown.
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from cogym_lab.core.env import is_non_empty
from cogym_lab.nodes.results import SESSION_FILE, read_session
from cogym_lab.runtime.models import PairwiseOffer, PairwiseShown, ShownOutcome, Side
from cogym_lab.runtime.stored import write_json

log = logging.getLogger(__name__)

PAIRWISE_FILE = "pairwise.json"
BASELINE_ENV = "COGYM_BASELINE_DIRS"  # a kernel's host: folders separated by os.pathsep
AUTONOMOUS = "autonomous"
NOTHING_DELIVERED = "(Nothing was delivered.)"
#: Longer outcomes are cut in the form (the person reads them side by side, not in full).
MAX_OUTCOME_CHARS = 100_000

NO_BASELINE_FOLDER = ("There is no comparison with the autonomous agent this time: no results "
                      "of the autonomous agent were given to this server.")
NO_MATCH = ("There is no comparison with the autonomous agent this time: its results have no "
            "session of this task and instance.")

_SHOWN: TypeAdapter[dict[str, PairwiseShown]] = TypeAdapter(dict[str, PairwiseShown])


@dataclass(frozen=True)
class Baseline:
    """The autonomous session a session is compared with: its folder, a short label (the
    baseline folder's name and the path under it) and its outcome."""

    path: Path
    label: str
    outcome: Any


def outcome_text(outcome: Any) -> str:
    """An outcome as the form shows it: text as it is, a list of plain values one per line
    (a checklist reads as one), anything else as indented JSON."""
    if not is_non_empty(outcome):
        return NOTHING_DELIVERED
    if isinstance(outcome, str):
        text = outcome
    elif isinstance(outcome, list) and all(isinstance(item, str | int | float)
                                           for item in outcome):
        text = "\n".join(f"- {item}" for item in outcome)
    else:
        text = json.dumps(outcome, ensure_ascii=False, indent=2, default=str)
    if len(text) > MAX_OUTCOME_CHARS:
        text = text[:MAX_OUTCOME_CHARS] + f"\n… ({len(text) - MAX_OUTCOME_CHARS} more characters)"
    return text


def _is_autonomous_run(session: dict[str, Any]) -> bool:
    """Whether a ``session.json`` is of a team without a human side."""
    team = session.get("team") or []
    return bool(team) and all(isinstance(member, dict) and member.get("kind") == "agent"
                              for member in team)


def find_baseline(roots: Sequence[Path], task: str, instance: str,
                  exclude: Path | None = None) -> Baseline | None:
    """The autonomous session of ``task`` and ``instance`` in the baseline folders ``roots``
    (see the module docstring for the order of preference); ``None`` when there is none."""
    from cogym_lab.records.trajectory import SessionRecord, find_sessions, load_session

    matches: list[tuple[tuple[bool, bool, int, str], Path, Path]] = []
    for root in roots:
        if not root.is_dir():
            log.warning("baseline folder %s does not exist", root)
            continue
        # As the report finds a run's sessions: replaced and derived ones are left out.
        for folder in find_sessions([root]):
            if exclude is not None and folder.resolve() == exclude.resolve():
                continue
            try:
                session = json.loads((folder / SESSION_FILE).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if not isinstance(session, dict) or not _is_autonomous_run(session):
                continue
            brief = SessionRecord(path=folder, session=session, events=[])
            if brief.task != task or brief.instance != instance:
                continue
            try:
                record = load_session(folder)  # only the few that match: the agent type
            except (OSError, ValueError):  # a log damaged before its end
                record = brief
            matches.append(((record.agent_type != AUTONOMOUS, not record.finished,
                             brief.trial, str(folder)), folder, root))
    if not matches:
        return None
    _, folder, root = min(matches)
    relative = folder.relative_to(root).as_posix()
    label = root.name if relative == "." else f"{root.name}/{relative}"
    session = json.loads((folder / SESSION_FILE).read_text(encoding="utf-8"))
    return Baseline(path=folder, label=label, outcome=session.get("outcome"))


def read_shown(directory: Path) -> dict[str, PairwiseShown]:
    """The orders offered so far in a session, by role (``{}`` when none, or unreadable)."""
    path = directory / PAIRWISE_FILE
    if not path.is_file():
        return {}
    try:
        return _SHOWN.validate_json(path.read_bytes())
    except (OSError, ValidationError) as error:
        log.warning("%s cannot be read (%s); the comparison is drawn again", path, error)
        return {}


def make_offer(directory: Path, role: str, own_outcome: Any, roots: Sequence[Path],
               rng: random.Random) -> PairwiseOffer:
    """The pairwise question for seat ``role`` of the session in ``directory``, whose outcome
    is ``own_outcome``: the two outcomes in the order kept for the seat (drawn with ``rng`` the
    first time), or why there is none."""
    from cogym_lab.records.trajectory import SessionRecord

    if not roots:
        return PairwiseOffer(available=False, note=NO_BASELINE_FOLDER)
    try:
        own = SessionRecord(path=directory, session=read_session(directory), events=[])
    except (OSError, ValueError):  # never started: no task and instance to pair by
        return PairwiseOffer(available=False, note=NO_MATCH)
    baseline = find_baseline(roots, own.task, own.instance, exclude=directory)
    if baseline is None:
        return PairwiseOffer(available=False, note=NO_MATCH)
    shown = read_shown(directory)
    kept = shown.get(role)
    if kept is None or kept.baseline != baseline.label:
        order: list[Side] = (["own", "autonomous"] if rng.random() < 0.5
                             else ["autonomous", "own"])
        kept = PairwiseShown(order=order, baseline=baseline.label, ts=time.time())
        shown[role] = kept
        write_json(directory / PAIRWISE_FILE,
                   {name: record.model_dump(mode="json") for name, record in shown.items()})
    texts = {"own": outcome_text(own_outcome), "autonomous": outcome_text(baseline.outcome)}
    return PairwiseOffer(available=True, baseline=baseline.label, outcomes=[
        ShownOutcome(side=side, label=label, text=texts[side])
        for side, label in zip(kept.order, ("A", "B"), strict=True)])


def baselines_from_env(value: str | None) -> list[Path]:
    """The baseline folders a kernel's host reads from ``COGYM_BASELINE_DIRS``."""
    return [Path(part).expanduser() for part in (value or "").split(os.pathsep) if part.strip()]
