"""Rule-based kitchen partners (the paper's §5.2): a beef specialist, a lettuce specialist and an
assembler. Each is a policy from the view content to its next macro action, or ``None`` while
its chef is busy or there is nothing of its own to do; none ever uses an LM.

They stand in for the person in experiments: predictable teammates with one habit each, so an
agent that fills the gaps its partner leaves scores better than one that does not.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from cogym_lab.envs.kitchen.layout import load_layout
from cogym_lab.envs.kitchen.policies.choices import (
    assemble_choice,
    clean_choice,
    fire_choice,
    hand_over_choice,
    park_choice,
    prepare_choice,
    serve_choice,
)
from cogym_lab.envs.kitchen.policies.situation import (
    BOARD,
    PAN,
    READY_STATUS,
    RECIPES,
    SERVING,
    Situation,
    macro,
)
from cogym_lab.envs.kitchen.policies.watch import FailedMacros, StuckWatch

Choice = tuple[str, Callable[[Situation], str | None]]


class Partner(abc.ABC):
    """A rule-based partner: its choices, tried in order, give its next macro."""

    #: The partner's habit in a word, for logs and summaries.
    habit: ClassVar[str] = ""

    def __init__(self, role: str) -> None:
        self.role = role
        self.state = "idle"
        self.last_action: str | None = None
        self.failed = FailedMacros(role)
        self.stuck = StuckWatch(role)

    @abc.abstractmethod
    def choices(self) -> tuple[Choice, ...]:
        """The situational choices that make up this partner's habit, tried in order."""

    def note_tick(self, info: Mapping[str, Any]) -> None:
        """A macro of mine that failed rests for a few ticks; moves that went nowhere count
        towards stepping aside."""
        self.failed.note_tick(info)
        self.stuck.note_tick(info)

    def decide(self, content: Mapping[str, Any]) -> str | None:
        situation = Situation.read(content, self.role)
        if situation.me is None or situation.done:
            self.state = "idle"
            return None
        aside = self.stuck.step_aside(situation)
        if aside is not None:
            self.state = "unstick"
            return aside
        if situation.busy:
            self.state = "busy"
            return None
        action, self.state = self.failed.first(situation, self.choices())
        if action is not None:
            self.last_action = action
        return action


class _Specialist(Partner):
    """Prepares one ingredient whenever the open orders lack it, and hands it over (to the
    center counter) once it is ready where it was made, unless a chef is assembling a dish with
    it; puts out fires and cleans overcooked beef it can reach. In a split kitchen it also
    serves what a teammate who cannot reach the window passes over."""

    food: ClassVar[str] = ""
    made_on: ClassVar[str] = ""  # the tile kind the ingredient gets ready on

    def choices(self) -> tuple[Choice, ...]:
        return (("fire", fire_choice), ("clean", clean_choice),
                ("hand_over", self._hand_over), ("prepare", self._prepare),
                ("serve", self._serve_passed), ("park", park_choice))

    def _prepare(self, situation: Situation) -> str | None:
        if situation.shortfall(self.food) <= 0:
            return None
        return prepare_choice(situation, foods=(self.food,))

    def _serve_passed(self, situation: Situation) -> str | None:
        """In a split kitchen, serve the burgers passed over by a teammate who cannot reach
        the serving window."""
        if situation.can_use(SERVING, partner=True):
            return None
        return serve_choice(situation)

    def _hand_over(self, situation: Situation) -> str | None:
        status = READY_STATUS[self.food]
        if not situation.lying(self.food, status, kinds=(self.made_on,)):
            return None
        using = [food for chef in (situation.me, situation.partner)
                 if situation.running(chef)[0] in ("ASSEMBLE", "PASS_ON")
                 for food in (situation.running(chef)[1],)]
        if self.food in using or any(self.food in RECIPES.get(str(f), ()) for f in using):
            return None  # a chef is taking it already
        return macro("PASS_ON", thing=self.food, thing_status=status)


class BeefSpecialist(_Specialist):
    """Cooks beef for the open orders and moves it out of the pan once cooked."""

    habit = "beef"
    food = "Beef"
    made_on = PAN


class LettuceSpecialist(_Specialist):
    """Chops lettuce for the open orders and moves it off the board once chopped."""

    habit = "lettuce"
    food = "Lettuce"
    made_on = BOARD


class Assembler(Partner):
    """Serves made burgers and assembles burgers from ready ingredients; prepares nothing
    itself, so it needs a teammate who does. Puts out fires and cleans overcooked beef."""

    habit = "assembler"

    def choices(self) -> tuple[Choice, ...]:
        return (("fire", fire_choice), ("clean", clean_choice), ("serve", serve_choice),
                ("hand_over", hand_over_choice), ("assemble", assemble_choice),
                ("park", park_choice))


#: The partners by habit, as a layout's ``partner`` names them.
PARTNERS: dict[str, type[Partner]] = {
    partner.habit: partner for partner in (Assembler, BeefSpecialist, LettuceSpecialist)}


class MapPartner:
    """The partner the map asks for: the layout's ``partner`` habit (data in the layout file,
    so each map pairs the agent with a partner that makes every order possible), chosen on the
    first view, which names the layout."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.chosen: Partner | None = None

    @property
    def state(self) -> str:
        return self.chosen.state if self.chosen is not None else "idle"

    def note_tick(self, info: Mapping[str, Any]) -> None:
        if self.chosen is not None:
            self.chosen.note_tick(info)

    def decide(self, content: Mapping[str, Any]) -> str | None:
        if self.chosen is None:
            habit = load_layout(str(content.get("layout"))).partner
            self.chosen = PARTNERS[habit](self.role)
        return self.chosen.decide(content)


__all__ = ["PARTNERS", "Assembler", "BeefSpecialist", "LettuceSpecialist", "MapPartner",
           "Partner"]
