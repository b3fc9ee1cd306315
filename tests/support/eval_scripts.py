"""Scripted LMs for batch runs: many sessions of one task at once, each on its own instance.

The loopback server gets requests from every session interleaved, so no fixed queue of replies
can serve them. :class:`RouteByInstance` reads which instance a request belongs to from the
prompt (the task's request appears in every member's system prompt) and hands it to that
instance's role play. :func:`working_alone` adapts a role play to the Fully Autonomous Agent,
which has no messages and no waiting: where the collaborative agent would report back, it
finishes; where it would wait, it gives no action, which the agent takes as waiting.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from cogym_lab.envs import make_env
from cogym_lab.testing import Reply
from tests.support.lm_scripts import classify, system_text
from tests.support.related_scripts import RelatedWorkRolePlay
from tests.support.tabular_scripts import TabularRolePlay
from tests.support.travel_scripts import TravelRolePlay

Responder = Callable[[dict[str, Any]], "str | Reply"]

ALONE = "You work alone on this task"  # from the autonomous agent's system prompt
NO_ACTION = "Thought: nothing to do until the work under way lands."
TABULAR_JUDGE = ('{"context": {"match": true, "reason": "same data"}, "variables": {"gold": '
                 '["a", "b"], "findings": ["a", "b"], "matched": ["a", "b"]}, "relation": '
                 '{"rating": "partial", "reason": "direction only"}, "reasoning": "Right '
                 'variables, vaguer relation."}')


def working_alone(play: Responder) -> Responder:
    """``play`` for a team with an autonomous agent; collaborative prompts pass through."""

    def respond(body: dict[str, Any]) -> str | Reply:
        kind = classify(body)
        if ALONE not in system_text(body) or kind not in ("act", "repair"):
            return play(body)
        if kind == "repair":  # asked again after NO_ACTION: still nothing to do
            return NO_ACTION
        reply = play(body)
        if isinstance(reply, str) and "SEND_TEAMMATE_MESSAGE" in reply:
            return "Thought: the result is complete.\nAction: FINISH()"
        if isinstance(reply, str) and "WAIT_TEAMMATE_CONTINUE" in reply:
            return NO_ACTION
        return reply

    return respond


class RouteByInstance:
    """Answers each request with the role play of the instance whose marker its prompt holds.

    Requests that name no instance (a task tool's prompt, such as a drafting assistant or a
    judge that sees only the outcome) go to the first role play: those tools answer the same
    way for every instance. ``delay`` holds every reply that many seconds (a slow LM).
    """

    def __init__(self, routes: Iterable[tuple[str, Responder]], *, delay: float = 0.0) -> None:
        self.routes = [(marker, working_alone(play)) for marker, play in routes]
        self.delay = delay
        self.served: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        text = "\n".join(str(m.get("content", "")) for m in body["messages"])
        marker, play = next(((m, p) for m, p in self.routes if m in text), self.routes[0])
        self.served[marker] = self.served.get(marker, 0) + 1
        reply = play(body)
        if self.delay:
            reply = reply if isinstance(reply, Reply) else Reply(text=reply)
            reply.delay = self.delay
        return reply


class ReportJudgePlay:
    """The evaluation judges of a report, by the JSON shape each prompt asks for: every chat
    message takes task initiative, every round gets a 4, no failure is found, the simulated
    user made no error, and outcome B wins each comparison. Other requests (a task's own
    grader re-grading a round) go to ``fallback``."""

    def __init__(self, fallback: Responder) -> None:
        self.fallback = fallback
        self.asked: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        text = body["messages"][-1]["content"]
        kind = next((k for k, shape in (("messages", '{"labels"'), ("pairwise", '{"winner"'),
                                        ("progress", '{"ratings"'),
                                        ("failures", '{"communication"'),
                                        ("taxonomy", '{"findings"'),
                                        ("user_audit", '{"errors"')) if shape in text), None)
        if kind is None:
            return self.fallback(body)
        self.asked[kind] = self.asked.get(kind, 0) + 1
        if kind == "messages":
            numbers = sorted({int(n) for n in re.findall(r"\[M(\d+)\]", text)})
            return json.dumps({"labels": [{"n": n, "initiative": True, "kind": "task",
                                           "confirmation": False, "halt": False}
                                          for n in numbers]})
        if kind == "pairwise":
            return json.dumps({"winner": "B", "reason": "B serves the request better."})
        if kind == "progress":
            found = re.search(r"each of the (\d+) rounds", text)
            count = int(found.group(1)) if found else 1
            return json.dumps({"ratings": [{"round": k, "rating": 4}
                                           for k in range(1, count + 1)]})
        if kind in ("taxonomy", "user_audit"):
            return json.dumps({"findings" if kind == "taxonomy" else "errors": []})
        empty = {"present": False, "evidence": []}
        return json.dumps({name: empty for name in ("communication", "situational_awareness",
                                                    "planning", "environment_awareness",
                                                    "personalisation")})


def travel_routes(instances: Iterable[int]) -> list[tuple[str, Responder]]:
    routes = []
    for number in instances:
        env = make_env("travel_planning", instance=number)
        routes.append((env.task_description.split("\n\n")[0], TravelRolePlay(env.task, env.db)))
    return routes


def related_work_routes(instances: Iterable[int]) -> list[tuple[str, Responder]]:
    routes = []
    for number in instances:
        env = make_env("related_work", instance=number)
        routes.append((env.task.query, RelatedWorkRolePlay(env.task.topic)))
    return routes


def tabular_routes(instances: Iterable[int], workdir: Path) -> list[tuple[str, Responder]]:
    routes = []
    for number in instances:
        env = make_env("tabular_analysis", instance=number, workdir=str(workdir / str(number)))
        first_csv = next(name for name in env.task.file_names if name.endswith(".csv"))
        routes.append((env.task.query, TabularRolePlay(first_csv, TABULAR_JUDGE)))
    return routes


ROUTES = {"travel_planning": travel_routes, "related_work": related_work_routes}
