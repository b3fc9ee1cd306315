"""A study folder on disk: the state every participant's server shares.

Under JupyterHub each participant has a Jupyter server of their own, so what the study shares
lives where all of them reach it: a folder (on a shared disk) with

* ``design.json``: the validated design, and ``study.json``: its seed and the salt that makes
  anonymous ids (a secret of the study's: whoever has it can test a login against an id);
* ``arrivals.json``: how many participants have arrived (participant numbers, for assignment),
  changed under a file lock;
* ``participants/<id>.json``: one file per participant, keyed by the anonymous id (never the
  login), each written whole and atomically (a new file moved over the old one);
* ``events.jsonl``: the study's telemetry, one JSON line per event, appended under a lock;
* ``sessions/``: the results folders of the sessions participants played.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from cogym_lab.studies.assignment import sequence_for
from cogym_lab.studies.design import StudyDesign

DESIGN_FILE = "design.json"
STUDY_FILE = "study.json"
ARRIVALS_FILE = "arrivals.json"
EVENTS_FILE = "events.jsonl"
PARTICIPANTS_DIR = "participants"
SESSIONS_DIR = "sessions"


class SessionPlayed(BaseModel):
    """A session a participant played for one step (for a comparison step: the baseline's
    team alone, with no person seat, ``role`` empty)."""

    session_id: str
    role: str
    results_dir: str
    started_at: float
    ended_at: float | None = None


class ComparisonShown(BaseModel):
    """A comparison step's two outcomes: which is left (``Outcome 1``) and which right, drawn
    once at random and kept, so a reload shows the same order and the export records it."""

    order: list[Literal["own", "baseline"]]
    drawn_at: float
    #: When both outcomes were first shown (``None``: not yet, the baseline still runs).
    shown_at: float | None = None


class GivenAnswer(BaseModel):
    """One stored answer (a ranking or a task-load form is several, one per part)."""

    step: str
    questionnaire: str
    item: str
    kind: str
    part: str = ""
    value: str


class ParticipantState(BaseModel):
    """What the study keeps of one participant: where they are, and what they gave."""

    participant: str
    number: int
    sequence: list[str]
    step: int = 0
    status: str = "assigned"
    started_at: float
    finished_at: float | None = None
    sessions: dict[str, SessionPlayed] = Field(default_factory=dict)
    answers: list[GivenAnswer] = Field(default_factory=list)
    visits: int = 0
    #: Step ids finished, with when (a step is finished once).
    finished_steps: dict[str, float] = Field(default_factory=dict)
    #: Comparison step ids, with the order their two outcomes are shown in.
    comparisons: dict[str, ComparisonShown] = Field(default_factory=dict)


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` whole: a reader sees the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) across processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


class StudyFolder:
    """One study's folder (see the module docstring)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    # -- setting up ----------------------------------------------------------------------------

    @classmethod
    def create(cls, root: str | Path, design: StudyDesign, *, seed: int = 0) -> StudyFolder:
        """Set a study up in ``root`` (a folder that may exist): its design, seed and salt. A
        folder set up already keeps its salt and participants; its design must be the same."""
        folder = cls(root)
        folder.root.mkdir(parents=True, exist_ok=True)
        (folder.root / PARTICIPANTS_DIR).mkdir(exist_ok=True)
        (folder.root / SESSIONS_DIR).mkdir(exist_ok=True)
        text = design.model_dump_json(indent=2)
        design_path = folder.root / DESIGN_FILE
        if design_path.exists() and folder.design() != design:
            raise ValueError(f"{folder.root} holds another design ({folder.design().name}); "
                             "a study keeps its design once participants may have met it")
        if not design_path.exists():
            write_atomically(design_path, text)
        if not (folder.root / STUDY_FILE).exists():
            write_atomically(folder.root / STUDY_FILE, json.dumps(
                {"design": design.name, "seed": seed, "salt": secrets.token_hex(16),
                 "created_at": time.time()}, indent=2))
        return folder

    def exists(self) -> bool:
        return (self.root / DESIGN_FILE).is_file() and (self.root / STUDY_FILE).is_file()

    def design(self) -> StudyDesign:
        return StudyDesign.model_validate_json((self.root / DESIGN_FILE).read_text("utf-8"))

    def settings(self) -> dict[str, Any]:
        value = json.loads((self.root / STUDY_FILE).read_text("utf-8"))
        return value if isinstance(value, dict) else {}

    @property
    def sessions_dir(self) -> Path:
        return self.root / SESSIONS_DIR

    @property
    def events_path(self) -> Path:
        return self.root / EVENTS_FILE

    # -- participants --------------------------------------------------------------------------

    def anonymous_id(self, login: str) -> str:
        """The participant id of ``login``: a salted hash, the same in every table."""
        salt = str(self.settings()["salt"]).encode()
        digest = hmac.new(salt, login.encode("utf-8", "surrogatepass"), hashlib.sha256)
        return "p-" + digest.hexdigest()[:16]

    def _participant_path(self, participant: str) -> Path:
        if not participant.startswith("p-") or not participant[2:].isalnum():
            raise ValueError("not a participant id")
        return self.root / PARTICIPANTS_DIR / f"{participant}.json"

    def participant(self, participant: str) -> ParticipantState | None:
        path = self._participant_path(participant)
        if not path.is_file():
            return None
        return ParticipantState.model_validate_json(path.read_text("utf-8"))

    def arrive(self, login: str) -> tuple[ParticipantState, bool]:
        """The state of ``login``'s participant, assigned on the first arrival (the next
        participant number, under the study's lock); and whether it was new."""
        participant = self.anonymous_id(login)
        known = self.participant(participant)
        if known is not None:
            return known, False
        with locked(self.root / ".arrivals.lock"):
            known = self.participant(participant)  # a second tab that arrived meanwhile
            if known is not None:
                return known, False
            counter = self.root / ARRIVALS_FILE
            number = int(json.loads(counter.read_text())["next"]) if counter.exists() else 0
            design = self.design()
            state = ParticipantState(
                participant=participant, number=number,
                sequence=sequence_for(design, number, int(self.settings().get("seed", 0))),
                started_at=time.time())
            # the counter first: a crash in between skips a number, never gives one twice
            write_atomically(counter, json.dumps({"next": number + 1}))
            self.save(state)
        return state, True

    def save(self, state: ParticipantState) -> None:
        write_atomically(self._participant_path(state.participant),
                         state.model_dump_json(indent=2))

    def participants(self) -> list[ParticipantState]:
        """Every participant, by arrival."""
        folder = self.root / PARTICIPANTS_DIR
        states = [ParticipantState.model_validate_json(path.read_text("utf-8"))
                  for path in sorted(folder.glob("p-*.json"))] if folder.is_dir() else []
        return sorted(states, key=lambda state: state.number)

    # -- events --------------------------------------------------------------------------------

    def append_event(self, event: dict[str, Any]) -> None:
        """Append one event line (under the lock: servers of several participants append)."""
        line = json.dumps(event, ensure_ascii=True) + "\n"
        with locked(self.root / ".events.lock"), self.events_path.open("a",
                                                                       encoding="utf-8") as out:
            out.write(line)

    def events(self) -> list[dict[str, Any]]:
        if not self.events_path.is_file():
            return []
        found = []
        for line in self.events_path.read_text("utf-8").splitlines():
            with contextlib.suppress(ValueError):
                value = json.loads(line)
                if isinstance(value, dict):
                    found.append(value)
        return found


__all__ = ["ComparisonShown", "GivenAnswer", "ParticipantState", "SessionPlayed", "StudyFolder",
           "locked", "write_atomically"]
