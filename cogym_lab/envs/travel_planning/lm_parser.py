"""Reading a free-text travel plan with an LM.

A plan written as prose or in a layout :func:`~cogym_lab.envs.travel_planning.plan.parse_plan`
cannot read is handed to the LM, which rewrites it into the day-by-day form; the rewrite is then
read by ``parse_plan`` like any other plan. The LM only changes the layout: it is told to copy
names as the plan writes them and to invent nothing, so the grade stays a grade of the plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogym_lab.envs.travel_planning.plan import ParsedPlan, parse_plan

if TYPE_CHECKING:
    from cogym_lab.lm import LM

__all__ = ["REWRITE_PROMPT", "parse_with_lm"]

PURPOSE = "plan_parser"

REWRITE_PROMPT = """\
You convert travel plans into a fixed day-by-day layout. You change the layout only: keep every \
flight number, city, restaurant, attraction and accommodation exactly as the plan spells it, add \
nothing the plan does not say, and put "-" in a field the plan leaves empty.

The trip lasts {days} days. Write exactly one block per day the plan describes, numbered from \
Day 1, each with these seven lines and nothing else:

Day <n>:
Current City: <the city of the day, or "from <city> to <city>" on a day that travels>
Transportation: <"Flight Number: <number>, from <city> to <city>", or "Self-driving, from <city> \
to <city>", or "Taxi, from <city> to <city>", or "-">
Breakfast: <restaurant>, <city>
Attraction: <attraction>, <city>; <attraction>, <city>
Lunch: <restaurant>, <city>
Dinner: <restaurant>, <city>
Accommodation: <accommodation>, <city>

Answer with the blocks only: no introduction, no comments, no markdown.

The plan:
<<<
{plan}
>>>"""


async def parse_with_lm(text: str, lm: LM, *, days: int) -> ParsedPlan:
    """The plan in ``text``, rewritten by ``lm`` into the day-by-day form and parsed.

    Raises :class:`~cogym_lab.lm.LMError` when the LM gives no answer. An answer that still has
    no readable day gives a plan with no days and a problem that says so.
    """
    messages = [{"role": "user",
                 "content": REWRITE_PROMPT.format(days=days, plan=(text or "").strip())}]
    configured = getattr(getattr(lm, "config", None), "max_tokens", None) or 0
    completion = await lm.complete(messages, purpose=PURPOSE,
                                   max_tokens=max(configured, 200 + 250 * max(days, 1)))
    parsed = parse_plan(completion.text)
    if not parsed.days:
        parsed.problems.insert(0, "The LM's rewrite of the plan has no day in the day-by-day "
                                  "form.")
    return parsed
