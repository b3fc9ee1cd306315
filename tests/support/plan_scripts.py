"""A scripted LM for the plan-aware agent on a Related Work instance (the interactive plans
example notebook): it proposes a plan, searches, drafts from the papers the person kept, and
writes the plan output; the drafting assistant and the judge answer as in the other related-work
scripts. It answers from what each prompt shows, so the session runs the same however events
merge."""

from __future__ import annotations

import json
import re
from typing import Any

from cogym_lab.core.plan_env import PLAN_COMPONENT
from cogym_lab.testing import Reply
from tests.support.related_scripts import RelatedWorkRolePlay

PLAN = {"title": "Survey, choose, draft", "steps": [
    {"description": "Search papers on the topic", "assignee": "agent"},
    {"description": "Choose the papers to keep", "assignee": "agent"},
    {"description": "Draft the section from the kept papers", "assignee": "agent"}]}


class RelatedWorkPlanPlay(RelatedWorkRolePlay):
    def __init__(self, topic_query: str) -> None:
        super().__init__(topic_query)
        self.step_calls: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        asked = body["messages"][-1]["content"]
        if "propose how the team could go about the task" in asked:
            return f"Thought: survey, then let the author choose.\nPlans: {json.dumps([PLAN])}"
        if "Every step of the plan is done" in asked:
            return ("Thought: close the section.\nOutput: ### Outlook\nThe kept papers point to "
                    "one open question [1].")
        if "You are carrying out step" in asked:
            return self.step(body, asked)
        first = body["messages"][0]["content"]
        if first.startswith(("You write the Related Work sections", "You grade Related Work")):
            return super().__call__(body)
        # The situational planning step (and any other prompt) hears: wait.
        return "Thought: nothing to add.\nDecision: 3\nAction: WAIT_TEAMMATE_CONTINUE()"

    def step(self, body: dict[str, Any], asked: str) -> str:
        step = asked.split("You are carrying out step ", 1)[1].split(" ", 1)[0]
        calls = self.step_calls[step] = self.step_calls.get(step, 0) + 1
        system = body["messages"][0]["content"]
        if '"Search papers' in asked:
            if calls == 1:
                return f'Action: SEARCH_PAPER(query="{self.topic_query}")'
            found = system.split("## Paper search", 1)[-1]
            ids = re.findall(r'"id": "([^"]+)"', found)[:4]
            titles = re.findall(r'"title": "([^"]*)"', found)[:4]
            items = [{"id": i, "title": t} for i, t in zip(ids, titles, strict=False)]
            return (f'Action: COMPLETE_STEP(step="{step}", text="Four candidate papers.", '
                    f"items={json.dumps(items)})")
        kept = _kept_ids(asked)
        if calls == 1 and kept:
            return f'Action: LIBRARY_ADD_PAPER(ids="{", ".join(kept[-2:])}")'
        if calls <= 2:
            return ('Action: LIBRARY_TO_DRAFT(instructions="Two short subsections citing '
                    'the library.")')
        return f'Action: COMPLETE_STEP(step="{step}", text="The draft is in the editor.")'


def _kept_ids(asked: str) -> list[str]:
    """The ids of the items of the last step that produced some (the person's choice), from the
    plan's context as the step prompt shows it: ``[items: ID - TITLE; ID - TITLE]``."""
    context = asked.split("What the earlier steps produced", 1)[-1].split("Take one action")[0]
    lines = [line for line in context.splitlines() if "[items: " in line]
    if not lines:
        return []
    listed = lines[-1].split("[items: ", 1)[1].rsplit("]", 1)[0]
    return [part.split(" - ", 1)[0] for part in listed.split("; ") if part]


class StepTwoPerson:
    """A scripted person on an interactive plan: picks the first proposal, takes step s2 from
    the agent, works on it (:meth:`work_on`) while it needs their input, and finishes once the
    plan has its output."""

    kind = "user"

    def start(self, context: Any) -> None: ...

    def end(self, final: Any) -> None: ...

    def work_on(self, step: dict[str, Any]) -> str:
        """The action for step s2 while it needs the person's input."""
        raise NotImplementedError

    async def act(self, notification: Any) -> str | None:
        plan = notification.view[PLAN_COMPONENT].content
        if plan["proposals"]:
            return "SELECT_PLAN(index=0)"
        steps = {s["id"]: s for s in (plan["plan"] or {}).get("steps", [])}
        if steps and steps["s2"]["assignee"] == "agent":
            return 'ASSIGN_STEP(step="s2", assignee="person")'
        if steps and steps["s2"]["status"] == "needs_input":
            return self.work_on(steps["s2"])
        if plan["output"]:
            return "FINISH()"
        return None
