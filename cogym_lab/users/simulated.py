"""The LM user simulator (Co-Gym Appendix C.3): a member that plays the human side with hidden
information the agent never sees.

Each time it is notified it picks one of five moves (answer a question, give feedback, take a
task action, do nothing, finish) and then produces that move with a prompt of its own. Persona
switches turn unprompted feedback and task actions on or off, and make it share one piece of its
hidden information per message.

The ``Choice:`` line is read strictly (:func:`~cogym_lab.agents.choice.read_choice`): the whole
number, and it must be on the menu, so ``Choice: 42`` is not option 4 (which may be FINISH). A
choice that names no option, several, or one off the menu gets one repair prompt; a second
unusable one is taken as doing nothing, the cheapest mistake.

When its LM fails (an error, or no answer within ``LMConfig.deadline``) it does nothing that turn
and says nothing: a person's chat is data the session is scored on, so a simulated person does
not speak of its machinery. :attr:`SimulatedUser.lm_failing` tells its node.

With ``rate_progress`` (a persona switch: ``rate_progress = true`` in the team file's options of
the user member) it also gives effort scaling's per-round progress rating (paper 002 §4): it
rates 1-5 how far each round moved the work toward what it wants, and writes the rating to
``progress.jsonl`` in its results folder (:mod:`cogym_lab.users.progress`). A round ends as
:mod:`cogym_lab.eval.metrics.rounds` splits the log: when the human side hands the work back (a
message, a confirmation answer, a pause or a resume) after an agent acted. The user tells this
from the log's own order, when it is notified of its hand-back (the agent may have acted while
the user was still writing, which the log puts before the message), and rates that round then,
before its next move; the last round it rates when the session ends. A rating reply without a
usable ``Rating:`` line gets one repair prompt; a second unusable one, or an LM failure, leaves
that round unrated (the evaluation then falls back to its judge).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from cogym_lab.agents.base import extract_field
from cogym_lab.agents.choice import UnusableChoice, read_choice
from cogym_lab.agents.render import render_chat, render_observation
from cogym_lab.core import Action, ActionError, Notification, SessionContext
from cogym_lab.core.actions import ActionSpec, describe_actions
from cogym_lab.core.grammar import format_action, parse_action
from cogym_lab.core.messages import Event, EventType
from cogym_lab.core.plan_env import is_plan_component
from cogym_lab.core.rounds import ROUND_STARTERS
from cogym_lab.lm import LM, LMError, Messages
from cogym_lab.prompts import render
from cogym_lab.users import progress
from cogym_lab.users.traits import check_traits, traits_prompt

log = logging.getLogger(__name__)


class Move(Enum):
    ANSWER = "answer the agent's question"
    FEEDBACK = "give the agent feedback on the work"
    TASK_ACTION = "make a change in the workspace yourself"
    NOTHING = "do nothing for now and let the agent continue"
    FINISH = "finish: the task is done"


@dataclass(frozen=True)
class Persona:
    """How the simulated person behaves."""

    proactive_feedback: bool = True  # may give feedback without being asked
    proactive_action: bool = False  # may change the workspace itself
    lazy: bool = True  # shares one piece of hidden information per message
    rate_progress: bool = False  # rates each round's progress 1-5 (effort scaling, paper 002)
    #: Named departures from the cooperative default (:mod:`cogym_lab.users.traits`): each
    #: adds its paragraph to the context every call sees.
    traits: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "traits", check_traits(self.traits))  # a list is fine too


def _prompt(name: str, **values: object) -> str:
    return render("cogym_lab.users", name, **values)


class SimulatedUser:
    """An LM playing a person with hidden preferences. Implements start, act, end."""

    def __init__(self, lm: LM, hidden_information: str, *, persona: Persona = Persona(),
                 max_turns: int = 30, history_window: int = 10, chat_window: int = 30) -> None:
        self.lm = lm
        self.hidden_information = hidden_information
        self.persona = persona
        self.max_turns = max_turns
        self.history_window = history_window
        self.chat_window = chat_window
        self.turns = 0
        self.moves: list[Move] = []
        self.own_history: list[str] = []
        self._lm_failed_last_turn = False
        self.round = RoundWatch()

    @property
    def lm_failing(self) -> bool:
        """Its LM failed on its last turn (a member node reports the member as failed)."""
        return self._lm_failed_last_turn

    def start(self, context: SessionContext) -> None:
        self.context = context
        self.role = context.role
        self.task_specs: dict[str, ActionSpec] = {s.name: s for s in context.action_specs}
        if context.results_dir:
            self.lm.log_to(Path(context.results_dir) / "lm_calls.jsonl")

    def options(self) -> list[Move]:
        moves = [Move.ANSWER]
        if self.persona.proactive_feedback:
            moves.append(Move.FEEDBACK)
        if self.persona.proactive_action and self.task_specs:
            moves.append(Move.TASK_ACTION)
        return [*moves, Move.NOTHING, Move.FINISH]

    async def act(self, notification: Notification) -> str | None:
        ended = self.round.observe(notification, self._humans())
        if ended and self.persona.rate_progress:
            context = self._context_prompt(notification)
            for finished in ended:
                await self._rate_round(context, finished, "when the work was handed back to "
                                                          "the agent")
        if self.turns >= self.max_turns:
            return self._record(Move.FINISH, "FINISH()")  # the patience of a person runs out
        self.turns += 1
        context = self._context_prompt(notification)
        if self.persona.proactive_action and any(is_plan_component(c.name)
                                                 for c in notification.view.components):
            context += "\n\n" + _prompt("plan_moves")  # the co-planning moves, on any plan
        try:
            move = await self._choose(context)
            action = await self._produce(move, context)
        except LMError as error:
            log.warning("%s: LM failed, doing nothing this turn: %s", self.role, error)
            self._lm_failed_last_turn = True
            return None
        self._lm_failed_last_turn = False
        return self._record(move, action)

    async def end(self, final: Notification) -> None:
        if self.persona.rate_progress:
            ended = self.round.observe(final, self._humans())
            context = self._context_prompt(final)
            for finished in ended:
                await self._rate_round(context, finished, "when the work was handed back to "
                                                          "the agent")
            await self._rate_round(context, self.round.current(final.seq),
                                   "when the session ended")  # the last round
        self._write_usage()

    def _write_usage(self) -> None:
        """``usage.json``: its turns, moves and LM use (after the last rating, which it counts
        under its own purpose)."""
        if self.context.results_dir:
            folder = Path(self.context.results_dir)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "usage.json").write_text(json.dumps(
                {"member": "simulated-user", "turns": self.turns,
                 "moves": [m.name for m in self.moves], "model": self.lm.config.model,
                 **self.lm.meter.to_dict()}, indent=2))

    # -- the two steps -----------------------------------------------------------------------

    async def _choose(self, context: str) -> Move:
        options = self.options()
        numbered = "\n".join(f"{n}. {move.value}" for n, move in enumerate(options, 1))
        rules = []
        if self.persona.proactive_feedback:
            rules.append("- If the workspace contradicts what you want, give feedback.")
        if self.persona.proactive_action:
            rules.append("- If a change is quicker to make than to explain, make it yourself.")
        instruction = _prompt("decide", options=numbered, persona_rules="\n".join(rules))
        messages = self._messages(context, instruction)
        reply = await self._complete(messages, "decide")
        numbers = range(1, len(options) + 1)
        try:
            return options[read_choice(extract_field(reply, "Choice"), numbers) - 1]
        except UnusableChoice as problem:
            messages += [{"role": "assistant", "content": reply},
                         {"role": "user", "content": _prompt("repair_choice", error=problem)}]
        reply = await self._complete(messages, "decide:repair")
        try:
            return options[read_choice(extract_field(reply, "Choice"), numbers) - 1]
        except UnusableChoice as problem:
            log.info("%s: no usable choice after a repair (%s): doing nothing", self.role,
                     problem)
            return Move.NOTHING  # an unreadable choice is the cheapest mistake as a pause

    async def _produce(self, move: Move, context: str) -> str | None:
        if move is Move.NOTHING:
            return None
        if move is Move.FINISH:
            return "FINISH()"
        if move is Move.TASK_ACTION:
            return await self._task_action(context)
        lazy = _prompt("lazy_rule") if self.persona.lazy else ""
        template = "answer" if move is Move.ANSWER else "feedback"
        reply = await self._ask(context, _prompt(template, lazy_rule=lazy), template)
        text = extract_field(reply, "Message")
        if not text:
            return None
        return format_action(Action(name="SEND_TEAMMATE_MESSAGE", args={"message": text}))

    async def _task_action(self, context: str) -> str | None:
        actions = describe_actions(list(self.task_specs.values()))
        instruction = _prompt("task_action", actions=actions)
        reply = await self._ask(context, instruction, "task_action")
        try:
            action, spec = parse_action(reply, self.task_specs)
        except ActionError as error:
            log.info("%s: task action not used: %s", self.role, error)
            return None
        return format_action(action, spec)

    # -- the progress rating -------------------------------------------------------------------

    async def _rate_round(self, context: str, ended: EndedRound, when: str) -> None:
        """Rate round ``ended`` and write the rating; an unusable reply gets one repair
        prompt, and a second one (or an LM failure) leaves the round unrated."""
        instruction = _prompt("progress_rating", when=when, round_acts=ended.acts_text())
        messages = self._messages(context, instruction)
        try:
            reply = await self._complete(messages, progress.PURPOSE)
            try:
                rating = progress.read_rating(reply)
            except UnusableChoice as problem:
                messages += [{"role": "assistant", "content": reply},
                             {"role": "user", "content": _prompt("repair_rating", error=problem)}]
                reply = await self._complete(messages, f"{progress.PURPOSE}:repair")
                rating = progress.read_rating(reply)
        except UnusableChoice as problem:
            log.info("%s: no usable progress rating for round %d (%s)", self.role,
                     ended.index, problem)
            return
        except LMError as error:
            log.warning("%s: LM failed, round %d is not rated: %s", self.role, ended.index,
                        error)
            return
        if self.context.results_dir:
            progress.append_rating(Path(self.context.results_dir), progress.RoundRating(
                round=ended.index, rating=rating, seq=ended.last_seq))

    def _humans(self) -> set[str]:
        """The human side of the team: people and simulated users (this one included)."""
        return {member.role for member in self.context.team if member.is_human}

    # -- helpers -------------------------------------------------------------------------------

    def _context_prompt(self, notification: Notification) -> str:
        teammates = [m.role for m in self.context.team if m.role != self.role]
        context = _prompt(
            "context", role=self.role, teammates=", ".join(teammates),
            task_description=self.context.task_description,
            hidden_information=self.hidden_information or "(nothing beyond the request)",
            observation=render_observation(notification.view),
            chat=render_chat(notification.chat, self.role, self.chat_window),
            own_history="\n".join(self.own_history[-self.history_window:]) or "(nothing yet)",
        )
        behaviour = traits_prompt(self.persona.traits)
        return f"{context}\n\n{behaviour}" if behaviour else context

    @staticmethod
    def _messages(context: str, instruction: str) -> Messages:
        return [{"role": "system", "content": context}, {"role": "user", "content": instruction}]

    async def _complete(self, messages: Messages, purpose: str) -> str:
        return (await self.lm.complete(messages, purpose=purpose)).text

    async def _ask(self, context: str, instruction: str, purpose: str) -> str:
        return await self._complete(self._messages(context, instruction), purpose)

    def _record(self, move: Move, action: str | None) -> str | None:
        self.moves.append(move)
        self.own_history.append(f"- {move.name.lower()}: {action or 'nothing'}")
        return action


#: The most agent acts a progress rating lists (the latest ones): a long round is summed up.
ROUND_ACTS_SHOWN = 30


@dataclass
class EndedRound:
    """A round as the simulated user saw it: its number (from 1), the agents' acts in words,
    whether agents also took steps it could not see, and the last event in it."""

    index: int
    acts: list[str] = field(default_factory=list)
    hidden_steps: bool = False
    last_seq: int = 0

    def acts_text(self) -> str:
        lines = [f"- {act}" for act in self.acts[-ROUND_ACTS_SHOWN:]]
        if len(self.acts) > ROUND_ACTS_SHOWN:
            lines.insert(0, f"- ({len(self.acts) - ROUND_ACTS_SHOWN} earlier acts not shown)")
        if self.hidden_steps:
            lines.append("- The agent also took steps of its own that you could not see.")
        return "\n".join(lines) or "- The agent did nothing you could see."


class RoundWatch:
    """Splits what the simulated user is notified of into rounds, in the log's order, by the
    rule of :func:`cogym_lab.eval.metrics.rounds.split_rounds`: a hand-back by the human side (its
    :data:`~cogym_lab.core.rounds.ROUND_STARTERS`, taking effect) after an agent acted ends
    the round. An agent acted when the user sees one of its acts take effect (not a wait), or
    when an agent's step count rose with nothing shown: its private acts (a search) reach
    nobody else. A wait or a refused act may raise a count too; the extra round the user then
    counts holds no rating of its own in the log's rounds, where a later one replaces it."""

    def __init__(self) -> None:
        self.round = EndedRound(index=1)
        self.agent_acted = False
        self._seen_seq = -1
        self._counts: dict[str, int] | None = None

    @property
    def index(self) -> int:
        return self.round.index

    def observe(self, notification: Notification, humans: set[str]) -> list[EndedRound]:
        """Take in a notification's events (in order, each once); the rounds they ended."""
        counts = {role: n for role, n in notification.step_counts.items() if role not in humans}
        if self._counts is not None and any(n > self._counts.get(role, 0)
                                            for role, n in counts.items()):
            self.round.hidden_steps = True  # shown acts below clear it again
            self.agent_acted = True
        self._counts = counts
        ended = []
        events = sorted(notification.merged_events or [notification.event], key=lambda e: e.seq)
        for event in events:
            if event.seq <= self._seen_seq:
                continue
            self._seen_seq = event.seq
            if event.status != "ok" or event.actor is None:
                continue
            if event.actor in humans:
                if event.type in ROUND_STARTERS and self.agent_acted:
                    self.round.last_seq = event.seq - 1
                    ended.append(self.round)
                    self.round = EndedRound(index=self.round.index + 1)
                    self.agent_acted = False
            elif event.type is not EventType.WAIT:
                self.agent_acted = True
                self.round.hidden_steps = False  # the count rose for what is shown here
                self.round.acts.append(_act_words(event))
        return ended

    def current(self, last_seq: int) -> EndedRound:
        """The round going on now, as it stands at event ``last_seq`` (the last round)."""
        self.round.last_seq = last_seq
        return self.round


def _act_words(event: Event) -> str:
    action = " ".join((event.action or event.type.value).split())
    return f"{event.actor}: {action if len(action) <= 300 else action[:300] + '…'}"
