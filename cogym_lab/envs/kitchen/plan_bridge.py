"""Plan steps as kitchen jobs: the bridge between an interactive plan (``docs/plans.md``) and the
rule-based chef's task list.

A person and the agent can co-plan the kitchen's division of labour as a plan whose steps are
assigned to the agent side or the person side. :func:`read_step` turns a step's text into the
kitchen job it names, using the words of the chef's own macro actions::

    read_step("prepare lettuce")          # KitchenJob(macro="PREPARE", food="Lettuce")
    read_step("chop lettuce twice")       # ... count=2
    read_step("Serve the beef burgers")   # KitchenJob(macro="SERVE", food="BeefBurger")
    read_step("keep chopping lettuce")    # standing=True: works until the step is completed
    read_step("make a BeefLettuceBurger") # KitchenJob(macro="ORDER", ...): the whole dish

A step that names no kitchen job raises :class:`NotAKitchenJob`, whose message says what a
step may say; the chef then fails the step, so the person is asked to do it (the plan's own
fallback for an agent step the agent cannot do). Pure functions, no state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cogym_lab.errors import CogymError

#: The burgers, longest name first so "beef lettuce burger" is not read as a beef burger.
DISHES = ("BeefLettuceBurger", "LettuceBurger", "BeefBurger")
FOODS = ("Beef", "Lettuce", "Bread")
#: Things a step may pass over the center counter.
PASSABLE = (*DISHES, "Beef", "Lettuce", "Bread", "Plate")
#: The most units one step may ask for: a step is a share of one game, not a standing order.
MAX_COUNT = 9

_NUMBERS = {"one": 1, "a": 1, "an": 1, "once": 1, "two": 2, "twice": 2, "three": 3,
            "thrice": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}
_STANDING = re.compile(r"\b(keep|keeps|keeping|all|every|always|whole game|throughout|"
                       r"until the end)\b")
_VERBS: tuple[tuple[str, str], ...] = (
    # (macro, verbs) in the order they are tried: the most specific first
    ("PUT_OUT_FIRE", r"put(?:s|ting)? out|extinguish\w*|fight\w* fires?|fires?"),
    ("CLEAN_A_COUNTER", r"clean\w*|clear\w*|throw\w* away|trash\w*|bin\w*"),
    ("PASS_ON", r"pass\w*|hand(?:s|ing)?|give\w*|bring\w*"),
    ("SERVE", r"serv\w*|deliver\w*"),
    ("ASSEMBLE", r"assembl\w*|plate up|plating|put\w* together|build\w*"),
    ("ORDER", r"make\w*|making|do(?:es|ing)?|fill\w*|complet\w*|finish\w*"),
    ("PREPARE", r"prepar\w*|prep\w*|cook\w*|chop\w*|cut\w*|fry\w*|grill\w*|fetch\w*|get\w*"),
)


class NotAKitchenJob(CogymError, ValueError):
    """A plan step whose text names no job of the kitchen's chef."""


@dataclass(frozen=True)
class KitchenJob:
    """What a plan step asks of a chef.

    ``macro`` is one of the chef's macro actions (``PREPARE``, ``ASSEMBLE``, ``SERVE``,
    ``PASS_ON``, ``PUT_OUT_FIRE``, ``CLEAN_A_COUNTER``) or ``ORDER`` (make and serve a whole
    dish, as the FSM's order tasks do); ``food`` the food, dish or thing (``""``: whichever an
    order needs); ``count`` how many times it is done before the step is; ``standing`` a job
    that goes on until the step is completed by hand (``keep chopping lettuce``)."""

    macro: str
    food: str = ""
    count: int = 1
    standing: bool = False

    def describe(self) -> str:
        """The job in words, for step outputs and prompts."""
        what = {"PUT_OUT_FIRE": "put out fires", "CLEAN_A_COUNTER": "clean a counter",
                "ORDER": "make and serve"}.get(self.macro, self.macro.lower().replace("_", " "))
        food = f" {self.food}" if self.food else (" whatever the orders need"
                                                  if self.macro in ("PREPARE", "ASSEMBLE", "SERVE",
                                                                    "ORDER", "PASS_ON") else "")
        times = " (until the step is completed)" if self.standing else (
            f" x{self.count}" if self.count > 1 else "")
        return f"{what}{food}{times}"


#: What a step may say, for the refusal.
WHAT_A_STEP_MAY_SAY = (
    "a kitchen step names one job of the chef: prepare, cook or chop Beef, Lettuce or Bread; "
    "assemble a dish; serve a dish; make a dish (prepare, assemble and serve it); pass on a "
    "thing over the center counter; put out fires; clean a counter. A dish is a BeefBurger, a "
    "LettuceBurger or a BeefLettuceBurger; 'twice' or a number does it more than once, "
    "'keep ...' until the step is completed")


def read_step(text: str) -> KitchenJob:
    """The kitchen job a plan step's text names. Raises :class:`NotAKitchenJob` (saying what a
    step may say) when it names none."""
    if not isinstance(text, str):
        raise NotAKitchenJob(f"A step is text, not {type(text).__name__}; {WHAT_A_STEP_MAY_SAY}.")
    words = " ".join(re.sub(r"[^\w\s&-]", " ", text).split()).lower()
    for macro, verbs in _VERBS:
        if re.search(rf"\b(?:{verbs})\b", words):
            job = _job(macro, words)
            if job is not None:
                return job
    raise NotAKitchenJob(f"{text.strip()[:80]!r} names no kitchen job: {WHAT_A_STEP_MAY_SAY}.")


def _job(macro: str, words: str) -> KitchenJob | None:
    dish = _dish(words)
    food = next((f for f in FOODS if re.search(rf"\b{f.lower()}\b", words)), "")
    count, standing = _count(words), bool(_STANDING.search(words))
    if macro in ("PUT_OUT_FIRE", "CLEAN_A_COUNTER"):
        return KitchenJob(macro, count=count, standing=standing)
    if macro == "PASS_ON":
        thing = dish or food or ("Plate" if re.search(r"\bplates?\b", words) else "")
        if not thing and re.search(r"\b(?:burgers?|dish\w*)\b", words):
            return KitchenJob(macro, "", count, standing)  # a made burger the orders want
        return KitchenJob(macro, thing, count, standing) if thing else None
    if macro in ("SERVE", "ASSEMBLE", "ORDER"):
        if macro == "ORDER" and not dish and not re.search(r"\b(?:orders?|burgers?|dish\w*)\b",
                                                           words):
            return KitchenJob("PREPARE", food, count, standing) if food else None
        return KitchenJob(macro, dish, count, standing)
    # PREPARE: a food, or (with no food named) the ingredient of a named dish is not enough
    if dish and not food:
        return KitchenJob("ORDER", dish, count, standing)
    return KitchenJob(macro, food, count, standing) if food else None


def _dish(words: str) -> str:
    """The burger a step names (any spacing, "beef and lettuce burger" too), or ``""``."""
    squashed = re.sub(r"\s+|-|&|\band\b", "", words)
    return next((dish for dish in DISHES if dish.lower() in squashed), "")


def _count(words: str) -> int:
    found = re.search(r"\b(\d+)\s*(?:x|times)?\b", words)
    if found:
        return max(1, min(MAX_COUNT, int(found.group(1))))
    for word in words.split():
        if word in ("twice", "thrice", "once"):
            return _NUMBERS[word]
    for word, value in _NUMBERS.items():
        if word not in ("a", "an", "once") and re.search(rf"\b{word}\b", words):
            return value
    return 1


__all__ = ["DISHES", "FOODS", "MAX_COUNT", "WHAT_A_STEP_MAY_SAY", "KitchenJob",
           "NotAKitchenJob", "read_step"]
