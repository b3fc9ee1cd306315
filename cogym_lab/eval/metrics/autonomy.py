"""Who did what: task actions and collaboration acts per party, UserEnvActRatio, and controlled
autonomy (the human side keeping control over the agent)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cogym_lab.core.messages import EventType
from cogym_lab.records.trajectory import COLLABORATION_EVENTS, SessionRecord

if TYPE_CHECKING:  # the judges' labels, given by the caller: metrics sit below the judges
    from cogym_lab.eval.judging.labels import MessageLabel


@dataclass
class PartyActions:
    """One member's acts. Refused acts and waits are counted apart from the others."""

    task_actions: int = 0
    collaboration_acts: int = 0
    messages: int = 0
    waits: int = 0
    refused: int = 0


def party_actions(record: SessionRecord) -> dict[str, PartyActions]:
    """Acts per team member. A task action that ran after a teammate accepted it counts as its
    requester's task action (and the acceptance as the acceptor's collaboration act); the
    outputs a deferred action records later (a cell's results) are not a new act."""
    counts = {role: PartyActions() for role in record.roles}
    for event in record.events:
        party = counts.get(event.actor or "")
        if party is None:
            continue
        if event.status == "error":
            party.refused += 1
        elif event.type is EventType.ACTION and not event.info.get("follow_up"):
            party.task_actions += 1
        elif event.type is EventType.WAIT:
            party.waits += 1
        elif event.type in COLLABORATION_EVENTS:
            party.collaboration_acts += 1
            party.messages += event.type is EventType.MESSAGE
            requester = counts.get(str(event.info.get("requester", "")))
            if event.type is EventType.CONFIRM_ACCEPT and requester is not None:
                requester.task_actions += 1
    return counts


def user_env_act_ratio(record: SessionRecord) -> float:
    """The human side's task actions over all its acts (task actions plus collaboration acts,
    waits left out). NaN when the human side did nothing."""
    actions = party_actions(record)
    task = sum(actions[role].task_actions for role in record.human_roles)
    collaboration = sum(actions[role].collaboration_acts for role in record.human_roles)
    return task / (task + collaboration) if task + collaboration else math.nan


@dataclass
class ControlledAutonomy:
    """How the human side kept control: confirmations the agent sought and halts the human side
    made. ``total`` and ``reported_halts`` follow the scoring protocol's rule (``rule``):

    * ``release_counts`` (protocol ``cogym``, as the Co-Gym release's
      ``collaborative_gym/eval/controlled_autonomy.py``, ``AnalyzeControlledAutonomy.forward``,
      counts): ``total`` is CA+, the agent messages containing "?" whose very next message is
      the human side's and that the judge says confirms (answers yes or no) the question; the
      halts (CA-) are reported apart, the human messages the judge marks as halts;
    * ``answered_and_halts`` (cogym_lab): ``total`` is the confirmations the human side answered
      (formal requests and judged questions) plus halts (pauses and judged messages).
    """

    confirmation_requests: int = 0  # agents' formal requests plus confirmation questions
    confirmations_answered: int = 0  # ... that got an answer from the human side
    halts: int = 0  # pauses plus messages that stopped the agent
    judged_questions: int = 0  # agent messages the judge marks as confirmation questions
    judged_halts: int = 0  # human messages the judge marks as halts (the release's CA-)
    confirmed_questions: int = 0  # the release's CA+ (see ``release_counts`` above)
    rule: str = "answered_and_halts"

    @property
    def total(self) -> int:
        if self.rule == "release_counts":
            return self.confirmed_questions
        return self.confirmations_answered + self.halts

    @property
    def reported_halts(self) -> int:
        """The halts the protocol reports: the judged messages only under the release's rule
        (its pauses were never counted), pauses and judged messages otherwise."""
        return self.judged_halts if self.rule == "release_counts" else self.halts


def controlled_autonomy(record: SessionRecord, labels: Sequence[MessageLabel] | None = None,
                        rule: str | None = None) -> ControlledAutonomy:
    """Count controlled autonomy from the log, and from the judge's message ``labels`` (one per
    message of ``record.messages``, in order) when given; ``rule`` (default: the session's
    protocol's) picks what ``total`` counts (see :class:`ControlledAutonomy`).

    * A formal confirmation request is answered when a human accepts or rejects it.
    * A message the judge marks as a confirmation question from an agent is answered when a
      human sends a message before that agent's next message.
    * A pause by the human side is a halt, and so is a human message the judge marks as one.
    * The release's CA+: an agent message with a "?" whose next chat message (the release reads
      the messages of agents and people in order) is a human's that the judge marks as
      ``confirms``.
    """
    result = ControlledAutonomy(rule=rule or record.protocol.controlled_autonomy)
    answered_ids = {event.info.get("request_id") for event in record.events
                    if event.type in (EventType.CONFIRM_ACCEPT, EventType.CONFIRM_REJECT)
                    and record.is_human(event.actor)}
    for event in record.events:
        if event.type is EventType.CONFIRM_REQUEST and event.status == "ok" \
                and not record.is_human(event.actor):
            result.confirmation_requests += 1
            result.confirmations_answered += event.info.get("request_id") in answered_ids
        if event.type is EventType.PAUSE and record.is_human(event.actor):
            result.halts += 1
    if labels is None:
        return result
    by_number = {label.n: label for label in labels}
    messages = record.messages
    for index, message in enumerate(messages):
        label = by_number.get(index + 1)
        if label is None:
            continue
        if record.is_human(message.sender):
            result.halts += label.halt
            result.judged_halts += label.halt
            continue
        if label.confirmation:
            result.confirmation_requests += 1
            result.judged_questions += 1
            result.confirmations_answered += _answered(record, messages[index + 1:],
                                                       message.sender)
        reply = by_number.get(index + 2)
        if "?" in message.text and reply is not None and reply.confirms \
                and record.is_human(messages[index + 1].sender):
            result.confirmed_questions += 1
    return result


def _answered(record: SessionRecord, later: Sequence, asker: str) -> bool:
    for message in later:
        if message.sender == asker:
            return False
        if record.is_human(message.sender):
            return True
    return False
