"""Scoring protocols: the rules a session is counted and scored by, named so results say which.

Researchers publish the numbers cogym_lab prints, so every rule that changes a number is part of
a named protocol, recorded in ``session.json`` and ``run.json``:

* ``cogym`` (the default) follows the Co-Gym paper and its release (SALT-NLP/collaborative-gym,
  the code each rule cites): every act of an agent or a simulated user but a wait counts toward
  its step limit, as the release's env node counts its event log (a task action run on a
  teammate's acceptance counts for the member that asked); a session is delivered when it ends
  by completion (a finish, the task saying it is done), at a step limit, or idle, the endings at
  which the release evaluates the outcome, with a non-empty outcome; H_init is 0 when nobody
  took initiative; controlled autonomy is the release's two counts, reported apart: the agent's
  questions ("?") that the human side's very next message answers (CA+), and the human side's
  messages the judge marks as halts (CA-). Tasks score as the release does (each task's docs
  say how) and use the paper's instance sets.
* ``cogym_lab`` keeps this project's own choices as a named alternative: task actions
  and refused attempts count toward agents' limits, the human side has none, any ending with a
  non-empty outcome is delivered, H_init is undefined (NaN) when nobody took initiative, and
  controlled autonomy counts formal confirmation requests and judged confirmation questions
  that got an answer, plus halts (pauses and judged messages), in one number.

``docs/evaluation.md`` has the table of every difference, with an example for each.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

ProtocolName = Literal["cogym", "cogym_lab"]
DEFAULT_PROTOCOL: ProtocolName = "cogym"
#: The protocol whose numbers claim to be comparable with the Co-Gym paper's: a batch run under
#: it refuses to start on the small data sample that comes with the package (unless allowed).
PAPER_PROTOCOL: ProtocolName = "cogym"
#: The rules of sessions logged before protocols had names (their ``session.json`` has none).
LEGACY_PROTOCOL: ProtocolName = "cogym_lab"

#: Endings that count as the task's completion.
#: ``time_up``: a clocked game ran its whole length (``Coordinator.clock``), which is how it ends.
COMPLETION_ENDINGS = frozenset({"finished", "task_done", "time_up"})
STEP_LIMIT_ENDING = "step_limit"
IDLE_ENDING = "idle"
#: The endings at which the Co-Gym release evaluates a session's outcome: its env node calls
#: ``TaskEnvNode.end`` (which runs ``evaluate_task_performance``) when a step terminates the
#: task, when a member reaches ``max_steps``, and after ``max_tick_cnt`` idle ticks. Our own
#: guards (a session's wall-clock timeout, the event limit, a task failing) have no
#: counterpart there: the release would never have evaluated such a session.
RELEASE_EVALUATED_ENDINGS = COMPLETION_ENDINGS | {STEP_LIMIT_ENDING, IDLE_ENDING}


class ScoringProtocol(BaseModel):
    """The counting and scoring rules of one protocol."""

    model_config = ConfigDict(frozen=True)

    name: ProtocolName
    summary: str
    every_act_is_a_step: bool  # messages and confirmation acts count too (never waits)
    simulated_user_step_limit: int | None  # None: the simulated user is not limited
    #: Only the endings the release evaluates deliver (timeouts and event limits do not).
    delivered_only_when_release_evaluates: bool
    h_init_without_initiative: float  # H_init when no message took initiative
    controlled_autonomy: Literal["release_counts", "answered_and_halts"]

    def delivers(self, end_reason: str | None) -> bool:
        """Whether a session that ended for ``end_reason`` may count as delivered."""
        if not self.delivered_only_when_release_evaluates:
            return True
        return end_reason in RELEASE_EVALUATED_ENDINGS


PROTOCOLS: dict[str, ScoringProtocol] = {
    "cogym": ScoringProtocol(
        name="cogym",
        summary="the Co-Gym paper and release: every act but waits counts toward a step limit, "
                "delivery at the endings the release evaluates (completion, step limit, idle), "
                "the release's controlled autonomy and task scores",
        every_act_is_a_step=True,
        simulated_user_step_limit=30,
        delivered_only_when_release_evaluates=True,
        h_init_without_initiative=0.0,
        controlled_autonomy="release_counts",
    ),
    "cogym_lab": ScoringProtocol(
        name="cogym_lab",
        summary="cogym_lab's own choices: task actions count toward agents' limits, any ending "
                "delivers, finer task scores",
        every_act_is_a_step=False,
        simulated_user_step_limit=None,
        delivered_only_when_release_evaluates=False,
        h_init_without_initiative=math.nan,
        controlled_autonomy="answered_and_halts",
    ),
}


def recorded_protocol(session: Mapping[str, Any]) -> ProtocolName:
    """The protocol a ``session.json`` says its session followed (older files: the legacy one)."""
    env_args = session.get("env_args") or {}
    name = session.get("protocol") or env_args.get("protocol") or LEGACY_PROTOCOL
    return get_protocol(name).name


def get_protocol(name: str | ScoringProtocol | None = None) -> ScoringProtocol:
    """The protocol called ``name`` (the default when ``None``); a clear error for others."""
    if isinstance(name, ScoringProtocol):
        return name
    key = name or DEFAULT_PROTOCOL
    if key not in PROTOCOLS:
        raise ValueError(f"Unknown scoring protocol {key!r}; use one of {', '.join(PROTOCOLS)}.")
    return PROTOCOLS[key]


__all__ = [
    "COMPLETION_ENDINGS",
    "DEFAULT_PROTOCOL",
    "IDLE_ENDING",
    "LEGACY_PROTOCOL",
    "PAPER_PROTOCOL",
    "PROTOCOLS",
    "RELEASE_EVALUATED_ENDINGS",
    "STEP_LIMIT_ENDING",
    "ProtocolName",
    "ScoringProtocol",
    "get_protocol",
    "recorded_protocol",
]
