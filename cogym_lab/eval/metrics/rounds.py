"""Split a trajectory into rounds and grade the outcome at the end of each one.

A round is a hand-off between the human side and the agents (effort scaling, paper 002 §3): the
first round starts with the session, and each collaboration act of a person or simulated user
(a message, an answer to a confirmation request, a pause or a resume) that follows some agent
activity starts the next one. Several human acts in a row stay in one round.

Grading replays the event log on a fresh env (as :func:`cogym_lab.nodes.replay` does) and calls the
task's own grader, ``CoEnv.aevaluate``, on the state at each round's end, so it works for every
task whose log replays.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from cogym_lab.core.env import is_non_empty
from cogym_lab.core.messages import Event, EventType
from cogym_lab.core.rounds import ROUND_STARTERS
from cogym_lab.errors import CogymError
from cogym_lab.lm import LM
from cogym_lab.records.trajectory import SessionRecord

log = logging.getLogger(__name__)


#: Env attributes that hold the LM a task's grader uses; an unset one gets the judge's LM.
GRADER_LM_ATTRIBUTES = ("judge_lm", "parser_lm")


@dataclass
class Round:
    index: int  # from 1
    events: list[Event] = field(default_factory=list)

    @property
    def end_seq(self) -> int:
        return self.events[-1].seq if self.events else 0


def split_rounds(record: SessionRecord) -> list[Round]:
    """The session's rounds, in order (at least one)."""
    rounds = [Round(index=1)]
    agent_acted = False
    for event in record.events:
        human = record.is_human(event.actor)
        if human and event.status == "ok" and event.type in ROUND_STARTERS and agent_acted:
            rounds.append(Round(index=len(rounds) + 1))
            agent_acted = False
        rounds[-1].events.append(event)
        if event.actor is not None and not human and event.status == "ok" \
                and event.type is not EventType.WAIT:
            agent_acted = True
    return rounds


@dataclass
class RoundOutcome:
    """The outcome at a round's end, whether it changed in the round, and its grade."""

    index: int
    outcome: Any
    changed: bool  # differs from the outcome at the previous round's end (or from none)
    agent_changed: bool  # an agent's act changed the outcome during the round
    scores: dict[str, float] | None  # the grader's scores when the outcome changed


class ReplayFailed(CogymError, RuntimeError):
    """The session's log could not be replayed, so its rounds cannot be graded."""


def _outcome_key(env: Any) -> str:
    """The env's current outcome in comparable form (none before the session started)."""
    return _key(env.outcome() if env._is_reset else None)


def _key(outcome: Any) -> str:
    """A comparable form of an outcome; every empty outcome is the same as none."""
    if not is_non_empty(outcome):
        return "null"
    return json.dumps(outcome, sort_keys=True, default=str)


async def grade_rounds(record: SessionRecord, rounds: list[Round], *,
                       grader_lm: LM | None = None) -> list[RoundOutcome]:
    """Replay ``record`` and grade the outcome at the end of every round in which it changed.

    The same outcome is graded once; the final outcome reuses the session's own scores when it
    has them. ``grader_lm`` is given to the env's grader when the task's grader needs an LM and
    the env has none. Raises :class:`ReplayFailed` when the log does not replay.
    """
    from cogym_lab.nodes.replay import ReplayMismatch, rebuild_coordinator, replay_events

    try:
        coordinator = rebuild_coordinator(record.session)
    except Exception as error:  # an unknown task, missing data: no grading, not a crash
        raise ReplayFailed(f"cannot rebuild {record.task}: {type(error).__name__}: {error}") \
            from error
    env = coordinator.env
    for attribute in GRADER_LM_ATTRIBUTES:
        if grader_lm is not None and getattr(env, attribute, False) is None:
            setattr(env, attribute, grader_lm)
    graded: dict[str, dict[str, float]] = {}
    if record.delivered and "performance" in record.scores:
        graded[_key(record.outcome)] = record.scores
    ends = {r.end_seq: r for r in rounds}
    results: list[RoundOutcome] = []
    previous_key = current_key = _outcome_key(env)
    agent_changed = False
    try:
        for event, _ in replay_events(coordinator, record.events):
            after = _outcome_key(env)
            if after != current_key and not record.is_human(
                    event.info.get("requester") or event.actor):
                agent_changed = True
            current_key = after
            if event.seq in ends:
                results.append(await _grade(env, ends[event.seq].index, previous_key,
                                            agent_changed, graded))
                previous_key, agent_changed = current_key, False
    except ReplayMismatch as error:
        raise ReplayFailed(str(error)) from error
    except Exception as error:
        raise ReplayFailed(f"replaying {record.path} failed: {type(error).__name__}: "
                           f"{error}") from error
    finally:
        await env.aclose()
    return results


async def _grade(env: Any, index: int, previous_key: str, agent_changed: bool,
                 graded: dict[str, dict[str, float]]) -> RoundOutcome:
    outcome = env.outcome()
    key = _key(outcome)
    if key == previous_key:
        return RoundOutcome(index, outcome, False, False, None)
    if key not in graded:
        try:
            graded[key] = await env.aevaluate() if outcome else {"performance": 0.0}
        except Exception as error:  # noqa: BLE001 - a failing judge costs this round's grade only
            log.warning("grading round %d failed: %s", index, error)
            graded[key] = {}
    return RoundOutcome(index, outcome, True, agent_changed, graded[key])
