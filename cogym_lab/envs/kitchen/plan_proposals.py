"""The kitchen agent's plan proposals: divisions of labour between the agent's chef and the
person's, built by rule from the map's recipes and what each chef can reach.

A burger takes four jobs: cooking beef (beef station and pan), chopping lettuce (lettuce
station and board), assembling (plates and bread) and serving (the window). :func:`propose`
gives each job to a side that can reach everything the job uses, tries the divisions in a
fixed order of preference, and writes each feasible one as a plan of steps in the words of
the chef's macros (``plan_bridge.read_step`` reads every one of them as a job). Where the
two chefs share no tool (a split kitchen), a step passes what one side made over the center
counter to the side that uses it next. Pure functions of the view's content, no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cogym_lab.envs.kitchen.plan_bridge import NotAKitchenJob, read_step
from cogym_lab.envs.kitchen.policies.situation import (
    BOARD,
    PAN,
    PLATE_STATION,
    SERVING,
    STATION_OF,
    Situation,
)

#: How many of each job a proposed step asks for: enough to serve an order or two, short
#: enough that the plan ends within a game (the chef then plays by its own rules again).
UNITS = 2
#: The jobs of one burger, in the order they happen.
JOBS = ("beef", "lettuce", "assemble", "serve")
#: Each job's step text and its hand-over text (when the next side cannot reach the thing).
STEP_TEXT = {"beef": f"cook beef {UNITS} times", "lettuce": f"chop lettuce {UNITS} times",
             "assemble": f"assemble {UNITS} burgers", "serve": f"serve {UNITS} burgers"}
PASS_TEXT = {"beef": f"pass the cooked beef over {UNITS} times",
             "lettuce": f"pass the chopped lettuce over {UNITS} times",
             "assemble": f"pass the burgers over {UNITS} times"}
#: Divisions tried in order (who does beef, lettuce, assemble, serve), with their titles from
#: the agent's side: the first feasible ones (at most three) are proposed.
DIVISIONS: tuple[tuple[tuple[str, str, str, str], str], ...] = (
    (("agent", "person", "agent", "person"),
     "I cook the beef and assemble; you chop the lettuce and serve"),
    (("agent", "agent", "person", "person"),
     "I prepare the beef and lettuce; you assemble and serve"),
    (("person", "person", "agent", "agent"),
     "You prepare the beef and lettuce; I assemble and serve"),
    (("person", "agent", "agent", "person"),
     "I chop the lettuce and assemble; you cook the beef and serve"),
    (("agent", "person", "person", "person"),
     "I cook the beef; you do the lettuce, assembling and serving"),
    (("person", "agent", "person", "person"),
     "I chop the lettuce; you do the beef, assembling and serving"),
    (("agent", "person", "person", "agent"),
     "I cook the beef and serve; you chop the lettuce and assemble"),
    (("person", "agent", "person", "agent"),
     "I chop the lettuce and serve; you cook the beef and assemble"),
)
MAX_PROPOSALS = 3


def can_do(situation: Situation, job: str, side: str) -> bool:
    """Whether the chef of ``side`` (``agent``: the situation's own; ``person``: its partner)
    reaches everything ``job`` uses."""
    partner = side == "person"
    if job == "beef":
        return situation.can_prepare("Beef", partner)
    if job == "lettuce":
        return situation.can_prepare("Lettuce", partner)
    if job == "assemble":
        return situation.can_use(PLATE_STATION, partner) and situation.can_use(
            STATION_OF["Bread"], partner)
    return situation.can_use(SERVING, partner)


def _hands_over(situation: Situation, job: str, maker: str, user: str) -> bool:
    """Whether what ``maker`` made for ``job`` must be passed over for ``user``: they differ
    and ``user`` cannot reach where it lies ready (the pan, the board, the window side)."""
    if maker == user:
        return False
    partner = user == "person"
    if job == "beef":
        return not situation.can_use(PAN, partner)
    if job == "lettuce":
        return not situation.can_use(BOARD, partner)
    # a burger lies where it was assembled: by the plates, which the server may not reach
    return not situation.can_use(PLATE_STATION, partner)


def division_steps(situation: Situation, sides: tuple[str, str, str, str]
                   ) -> list[dict[str, str]]:
    """The plan steps of one division (who does beef, lettuce, assemble, serve)."""
    who = dict(zip(JOBS, sides, strict=True))
    steps: list[dict[str, str]] = []
    for job in ("beef", "lettuce"):
        steps.append({"description": STEP_TEXT[job], "assignee": who[job]})
        if _hands_over(situation, job, who[job], who["assemble"]):
            steps.append({"description": PASS_TEXT[job], "assignee": who[job]})
    steps.append({"description": STEP_TEXT["assemble"], "assignee": who["assemble"]})
    if _hands_over(situation, "assemble", who["assemble"], who["serve"]):
        steps.append({"description": PASS_TEXT["assemble"], "assignee": who["assemble"]})
    steps.append({"description": STEP_TEXT["serve"], "assignee": who["serve"]})
    return steps


def propose(content: Mapping[str, Any], role: str) -> list[dict[str, Any]]:
    """One to three divisions of labour for the agent playing ``role`` and its partner, as
    ``PROPOSE_PLANS`` takes them (``[{"title", "steps": [{"description", "assignee"}]}]``);
    empty when the view has no kitchen yet or no division is feasible (a job nobody reaches)."""
    situation = Situation.read(content, role)
    if situation.me is None:
        return []
    plans = []
    for sides, title in DIVISIONS:
        if all(can_do(situation, job, side) for job, side in zip(JOBS, sides, strict=True)):
            plans.append({"title": title, "steps": division_steps(situation, sides)})
        if len(plans) == MAX_PROPOSALS:
            break
    return plans


#: Steps a written proposal may have: a division of labour, not a whole game's script.
MAX_WRITTEN_STEPS = 12


def checked_proposals(plans: Any) -> list[dict[str, Any]] | None:
    """Proposals an LM wrote, as ``PROPOSE_PLANS`` takes them, when they are usable: one to
    three plans, each with a title and steps on both sides, every step one that
    ``read_step`` reads as a kitchen job; ``None`` otherwise (the rule's are used then)."""
    if not isinstance(plans, list) or not 1 <= len(plans) <= MAX_PROPOSALS:
        return None
    usable = []
    for plan in plans:
        steps = plan.get("steps") if isinstance(plan, dict) else None
        title = plan.get("title") if isinstance(plan, dict) else None
        if not isinstance(title, str) or not title.strip() or not isinstance(steps, list) \
                or not 1 <= len(steps) <= MAX_WRITTEN_STEPS:
            return None
        kept = []
        for step in steps:
            text = step.get("description") if isinstance(step, dict) else None
            side = step.get("assignee") if isinstance(step, dict) else None
            if side not in ("agent", "person") or not isinstance(text, str):
                return None
            try:
                read_step(text)
            except NotAKitchenJob:
                return None
            kept.append({"description": " ".join(text.split())[:200], "assignee": side})
        if {step["assignee"] for step in kept} != {"agent", "person"}:
            return None
        usable.append({"title": " ".join(title.split())[:120], "steps": kept})
    return usable


def reach_section(content: Mapping[str, Any], role: str) -> str:
    """What each side reaches, in words, for a prompt that asks for divisions of labour."""
    situation = Situation.read(content, role)
    lines = []
    for side in ("agent", "person"):
        jobs = [job for job in JOBS if can_do(situation, job, side)]
        lines.append(f"- {side}: can {', '.join(jobs) if jobs else 'do none of the jobs'}")
    return "\n".join(lines)


__all__ = ["DIVISIONS", "JOBS", "MAX_PROPOSALS", "MAX_WRITTEN_STEPS", "UNITS", "can_do",
           "checked_proposals", "division_steps", "propose", "reach_section"]
