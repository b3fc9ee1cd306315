"""The LM judges of the evaluation suite, all through :mod:`cogym_lab.lm`.

* :meth:`Judge.label_messages`: which chat messages take initiative (for H_init), which agent
  messages ask for confirmation and which human messages halt the agent (controlled autonomy).
* :meth:`Judge.compare`: the better of two outcomes for the same request (pairwise win rate).
* :meth:`Judge.rate_progress`: a 1-5 progress rating for each round (usability drop).
* :meth:`Judge.annotate_failures`: the five failure categories, with evidence quotes.

Prompts are Markdown files in ``cogym_lab/eval/judging/prompts/``. Every judge asks for one JSON
object, validated against a model in :mod:`cogym_lab.eval.judging.labels`; an unusable reply gets
one retry, and a judge that still fails (or whose LM fails) returns ``None``, so that one metric of
one session goes missing instead of the whole report.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from cogym_lab.core.messages import EventType
from cogym_lab.eval.judging.labels import (
    FailureAnnotation,
    MessageLabel,
    MessageLabels,
    PairwiseVerdict,
    ProgressRatings,
)
from cogym_lab.eval.metrics.rounds import Round
from cogym_lab.lm import LM, LMConfig, LMError, Messages, make_lm
from cogym_lab.prompts import render
from cogym_lab.records.trajectory import SessionRecord

log = logging.getLogger(__name__)

PACKAGE = "cogym_lab.eval.judging"
Model = TypeVar("Model", bound=BaseModel)
# A person's live edits are keystrokes (Yjs updates): what they made is the announcing action.
_SKIPPED = {EventType.TICK, EventType.WAIT, EventType.START, EventType.EDIT}


def prompt(name: str, **values: object) -> str:
    return render(PACKAGE, name, **values)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" … [{len(text) - limit} more chars]"


def _outcome_text(outcome: Any) -> str:
    if outcome is None or outcome == "" or outcome == [] or outcome == {}:
        return "(nothing delivered)"
    return outcome if isinstance(outcome, str) else json.dumps(outcome, ensure_ascii=False,
                                                                indent=1)


def session_log(record: SessionRecord, *, number_messages: bool = True,
                action_chars: int = 300, events: Sequence | None = None) -> str:
    """The session as plain lines for a judge: messages in full (numbered [M1], [M2], ...),
    other acts with long arguments shortened."""
    numbers = {message.seq: n for n, message in enumerate(record.messages, start=1)}
    lines = []
    for event in record.events if events is None else events:
        if event.type in _SKIPPED:
            continue
        who = f"{event.actor} ({record.kinds.get(event.actor or '', 'env')})" \
            if event.actor else "environment"
        if event.type is EventType.MESSAGE and event.seq in numbers:
            message = record.messages[numbers[event.seq] - 1]
            tag = f"[M{numbers[event.seq]}] " if number_messages else ""
            to = f" to {message.to}" if message.to else ""
            lines.append(f"{tag}{who}{to} says: {message.text}")
        elif event.type is EventType.END:
            lines.append(f"The session ended ({event.info.get('reason', 'ended')}).")
        elif event.status == "error":
            lines.append(f"{who} tried {_shorten(event.action or '', action_chars)} "
                         f"-> refused: {_shorten(event.error or '', 160)}")
        else:
            lines.append(f"{who} {event.type.value}: {_shorten(event.action or '', action_chars)}")
    return "\n".join(lines)


def extract_json(reply: str) -> Any:
    """The first JSON object in ``reply`` (code fences and prose around it tolerated)."""
    text = re.sub(r"```[a-zA-Z]*", "", reply)
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise ValueError("the reply holds no JSON object")


class Judge:
    """LM judges sharing one LM, at most ``concurrency`` calls at a time.

    Build one from an :class:`LM`, or with :func:`make_judge` from a model name or config.
    """

    def __init__(self, lm: LM, *, concurrency: int = 8, transcript_chars: int = 30_000) -> None:
        self.lm = lm
        self.transcript_chars = transcript_chars
        self.concurrency = concurrency
        self._limits: dict[int, asyncio.Semaphore] = {}

    def _limit(self) -> asyncio.Semaphore:
        """This event loop's semaphore: a judge may serve several ``asyncio.run`` calls."""
        loop = id(asyncio.get_running_loop())
        if loop not in self._limits:
            self._limits = {loop: asyncio.Semaphore(self.concurrency)}
        return self._limits[loop]

    @property
    def name(self) -> str:
        return self.lm.config.model or "judge"

    async def ask(self, template: str, model: type[Model], purpose: str,
                  check: Any = None, **values: object) -> Model | None:
        """Ask one judge prompt and validate the reply as ``model`` (one retry)."""
        messages: Messages = [{"role": "system", "content": prompt("judge_system")},
                              {"role": "user", "content": prompt(template, **values)}]
        for attempt in range(2):
            try:
                async with self._limit():
                    reply = (await self.lm.complete(messages, purpose=purpose)).text
            except LMError as error:
                log.warning("judge %s: the LM failed: %s", purpose, error)
                return None
            try:
                answer = model.model_validate(extract_json(reply))
                if check is not None:
                    check(answer)
                return answer
            except (ValueError, ValidationError) as error:
                if attempt:
                    log.warning("judge %s: unusable reply after a retry: %s", purpose, error)
                    return None
                messages += [{"role": "assistant", "content": reply},
                             {"role": "user", "content": prompt("retry", error=_shorten(
                                 str(error), 400))}]
        return None

    def _transcript(self, record: SessionRecord, **options: Any) -> str:
        return _shorten(session_log(record, **options), self.transcript_chars)

    async def label_messages(self, record: SessionRecord, task: str = ""
                             ) -> list[MessageLabel] | None:
        """One label per message of ``record.messages``, in order ([] when there are none)."""
        count = len(record.messages)
        if count == 0:
            return []

        def complete(answer: MessageLabels) -> None:
            numbers = {label.n for label in answer.labels}
            missing = sorted(set(range(1, count + 1)) - numbers)
            if missing:
                raise ValueError(f"no label for messages {missing}; label all {count}")

        answer = await self.ask("messages", MessageLabels, "judge:messages", check=complete,
                                task=task or "(not given)", transcript=self._transcript(record),
                                count=count)
        if answer is None:
            return None
        by_number = {label.n: label for label in answer.labels}
        return [by_number[n] for n in range(1, count + 1)]

    async def compare(self, task: str, outcome: Any, baseline: Any, *,
                      key: str = "") -> str | None:
        """``"A"`` when ``outcome`` is better than ``baseline``, ``"B"`` when worse, ``"tie"``.

        The two are shown in an order fixed by ``key`` (the instance), half of the instances
        each way, so that a judge's preference for a position cancels out.
        """
        swap = int(hashlib.sha256(key.encode()).hexdigest(), 16) % 2 == 1
        first, second = (baseline, outcome) if swap else (outcome, baseline)
        verdict = await self.ask("pairwise", PairwiseVerdict, "judge:pairwise",
                                 task=task or "(not given)", outcome_a=_outcome_text(first),
                                 outcome_b=_outcome_text(second))
        if verdict is None:
            return None
        if swap and verdict.winner != "tie":
            return "B" if verdict.winner == "A" else "A"
        return verdict.winner

    async def rate_progress(self, record: SessionRecord, rounds: Sequence[Round],
                            outcomes: Sequence[Any] | None = None, task: str = ""
                            ) -> list[int] | None:
        """A 1-5 progress rating for each of ``rounds``; ``outcomes`` are the outcomes at
        their ends, when known."""
        if not rounds:
            return []
        blocks = []
        for position, item in enumerate(rounds):
            shown = session_log(record, number_messages=False, events=item.events) or \
                "(nothing happened)"
            block = f"## Round {item.index}\n{shown}"
            if outcomes is not None and position < len(outcomes):
                outcome = _shorten(_outcome_text(outcomes[position]), 1500)
                block += f"\nOutcome at the end of the round:\n{outcome}"
            blocks.append(block)
        expected = [item.index for item in rounds]

        def complete(answer: ProgressRatings) -> None:
            missing = sorted(set(expected) - {r.round for r in answer.ratings})
            if missing:
                raise ValueError(f"no rating for rounds {missing}; rate all {len(expected)}")

        answer = await self.ask("progress", ProgressRatings, "judge:progress", check=complete,
                                task=task or "(not given)",
                                rounds=_shorten("\n\n".join(blocks), self.transcript_chars),
                                count=len(rounds))
        if answer is None:
            return None
        by_round = {r.round: r.rating for r in answer.ratings}
        return [by_round[index] for index in expected]

    async def annotate_failures(self, record: SessionRecord, task: str = ""
                                ) -> FailureAnnotation | None:
        """The five failure categories for one trajectory, each with evidence quotes."""
        transcript = self._transcript(record) + "\n\nFinal outcome:\n" + _shorten(
            _outcome_text(record.outcome), 3000)
        return await self.ask("failures", FailureAnnotation, "judge:failures",
                              task=task or "(not given)", transcript=transcript)


def make_judge(judge: Judge | LM | LMConfig | str | dict[str, Any] | None, **options: Any
               ) -> Judge | None:
    """A :class:`Judge` from a judge, an LM, an LM config, a model name or a dict of LM
    settings (``None`` stays ``None``). A model name or dict is completed from the environment
    (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``) and runs at temperature 0."""
    if judge is None or isinstance(judge, Judge):
        return judge
    if isinstance(judge, LM):
        return Judge(judge, **options)
    if isinstance(judge, str):
        judge = {"model": judge}
    if isinstance(judge, dict):
        judge = LMConfig.resolve(arguments={"temperature": 0.0, **judge})
    return Judge(make_lm(judge, member="judge"), **options)
