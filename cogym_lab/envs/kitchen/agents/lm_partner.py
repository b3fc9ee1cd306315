"""``kitchen-lm-partner``: an LM that plays the person's seat in the kitchen, with hidden
preferences: a Theory-of-Mind target that acts and talks.

It is a simulated person (member kind ``user``): its LM picks its next job, as a person decides
what to do next, from the game, the chat and its own preferences ("only handles beef", "wants
to serve", "dislikes chopping"), which are in its own prompts alone; the agent it plays with is
never told them and has to infer them from what it does and says. It plays by a person's rules:
in the DPT-Agent paper's mode (the default) people have the arrow keys and Space only, so it
presses the keys for its job one a tick (:class:`~cogym_lab.envs.kitchen.keys.KeyPresser`);
with ``person_macros=true`` it sends the job as a macro action. While its LM thinks, its chef
stands still, as a person's does while they make up their mind. Now and then (at most every
``chat_every`` ticks) its reply may carry a ``say`` block: one line in the chat about what it
wants, sent in place of a key press.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, ClassVar

from cogym_lab.core import Notification
from cogym_lab.core.grammar import parse_action
from cogym_lab.core.member import MemberType, lm_builder
from cogym_lab.envs.kitchen.agents.base import KitchenAgent
from cogym_lab.envs.kitchen.agents.chat import without_say
from cogym_lab.envs.kitchen.agents.policy_code import PolicyRejected, checked_macro
from cogym_lab.envs.kitchen.agents.prompting import kitchen_prompt
from cogym_lab.envs.kitchen.keys import KeyPresser
from cogym_lab.envs.kitchen.policies.situation import Situation
from cogym_lab.lm import LMError

#: Ready-made preferences by name; any other text is taken as a preference as written.
PREFERENCES: dict[str, str] = {
    "beef-only": "You only handle beef: you cook it and pass or plate it, and you never touch "
                 "lettuce.",
    "wants-to-serve": "You want to be the one who serves: taking burgers to the window is "
                      "your favourite part, and you would rather your teammate did not.",
    "dislikes-chopping": "You dislike chopping lettuce and leave it to your teammate whenever "
                         "you can.",
    "lettuce-only": "You only handle lettuce: you chop it and pass it on; you never cook beef.",
}
DEFAULT_PREFERENCES = ("beef-only", "wants-to-serve")
#: Characters of one preference kept (a line of a persona, not a document).
MAX_PREFERENCE = 300


def read_preferences(preferences: str | Iterable[str]) -> tuple[str, ...]:
    """The preferences as sentences: preset names (:data:`PREFERENCES`) or texts of one's
    own. Raises ``ValueError`` for none at all or for something that is not text."""
    given = [preferences] if isinstance(preferences, str) else list(preferences)
    if not given or not all(isinstance(p, str) and p.strip() for p in given):
        raise ValueError("preferences are one or more texts, or names of ready ones: "
                         + ", ".join(PREFERENCES))
    return tuple(PREFERENCES.get(p.strip(), " ".join(p.split())[:MAX_PREFERENCE])
                 for p in given)


class LMPartner(KitchenAgent):
    """The LM simulated person (see the module doc)."""

    agent_type: ClassVar[str] = "kitchen-lm-partner"
    #: A simulated person plays as a person would, whose first key starts a waiting clock.
    waits_for_the_clock: ClassVar[bool] = False

    def __init__(self, lm: Any, *, preferences: str | Iterable[str] = DEFAULT_PREFERENCES,
                 chat_every: int = 60, **options: Any) -> None:
        super().__init__(lm, **options)
        self.preferences = read_preferences(preferences)
        if isinstance(chat_every, bool) or not isinstance(chat_every, int) or chat_every < 1:
            raise ValueError(f"chat_every is a whole number of ticks, at least 1, not "
                             f"{chat_every!r}.")
        self.chat_every = chat_every
        self.keys: KeyPresser | None = None
        self.last_job = ""  # the last job and how it ended, for the next prompt
        self.jobs = 0
        self._retry_at = 0
        self._said_at: int | None = None

    def system_prompt(self) -> str:
        seconds = (self.content or {}).get("tick_seconds", 0.25)
        return kitchen_prompt("partner_system", tick_seconds=f"{seconds:g}",
                              preferences="\n".join(f"- {p}" for p in self.preferences))

    async def act(self, notification: Notification) -> str | None:
        content, said = self.opening(notification)
        if content is None or said is not None:
            return said
        moves_only = self.role in (content.get("moves_only") or ())
        if self.keys is not None:
            key = self.keys.press(content)
            if key is not None:
                return self.sent(key)
            if self.keys.outcome is None:
                return None  # waiting within the job (the beef is cooking)
            self.last_job = f"{self.keys.label}: {self.keys.outcome}"
            self.keys = None
        else:
            situation = Situation.read(content, self.role)
            if situation.me is None or situation.busy:
                return None  # a macro of mine still runs (people with macros)
        if self.tick < self._retry_at:
            return None
        return await self._next_job(content, moves_only)

    async def _next_job(self, content: Any, moves_only: bool) -> str | None:
        tick, started = self.tick, time.monotonic()
        may_chat = self._said_at is None or tick - self._said_at >= self.chat_every
        last = f"Your last job was {self.last_job}." if self.last_job else ""
        chat_hint = ("If you want to say something to your teammate now (what you want to do, "
                     "or want them to do), add a `say` code block with one short sentence."
                     if may_chat else "")
        messages = self.messages(kitchen_prompt("partner_output", last_job=last,
                                                chat_hint=chat_hint), assigned=False)
        try:
            reply, seconds = await self.ask(messages, "partner")
        except LMError as error:
            self.lm_failed("partner", tick, error)
            self._retry_at = tick + self.retry_ticks
            return None
        if may_chat:
            before = len(self.to_say)
            self.heard_from_lm(reply)
            if len(self.to_say) > before:
                self._said_at = tick
        try:
            action = checked_macro(without_say(reply), self.specs)
        except PolicyRejected as problem:
            self.reject(tick, problem.reason, reply, kind="job")
            self.records.latency("job", time.monotonic() - started, tick, calls=[seconds],
                                 accepted=False)
            self._retry_at = tick + 1
            return None
        self.records.latency("job", time.monotonic() - started, tick, calls=[seconds])
        self.jobs += 1
        if not moves_only:
            self.last_job = action
            return self.sent(action)
        parsed, _ = parse_action(action, self.specs) if self.specs else (None, None)
        if parsed is None:
            return None
        self.keys = KeyPresser(parsed, self.role)
        key = self.keys.press(content)
        return self.sent(key) if key is not None else None

    def mind(self) -> dict[str, Any]:
        """What it ended with, and its hidden preferences (the experimenter's record: what the
        agent's belief should have found)."""
        return {**super().mind(), "preferences": list(self.preferences), "jobs": self.jobs,
                "last_job": self.last_job}


LM_PARTNER = MemberType(
    name="kitchen-lm-partner", kind="user", build=lm_builder(LMPartner),
    summary="A simulated person in the kitchen, played by an LM with hidden preferences (the "
            "options' preferences) that the agent must infer: presses keys in paper mode, "
            "chats now and then about what it wants.")

__all__ = ["DEFAULT_PREFERENCES", "LM_PARTNER", "PREFERENCES", "LMPartner", "read_preferences"]
