"""Scripted LMs for the ready study designs run by ``cogym-lab study simulate --scripted``.

:func:`responder_for` builds one responder for a whole design, from the instances its first
participants meet (:func:`plan_steps`), so the loopback server can serve every session of the
run: the agents (model ``agent-lm``), the LM simulated user where a task has no rule-based one
(model ``user-lm``), and the tasks' tools (drafting assistant, judges).

* ``cogym-real``: the collaborative agent with situational planning on travel planning and
  related work (the collaborative role plays, asked through the three-way decision), the
  autonomous baseline on the same instance (:func:`working_alone`);
* ``cocoa``: related work with the plan-aware agent and a simulated user who picks the proposed
  plan, runs it and finishes once the plan output is written; or the chat-only collaborative
  agent and its user;
* ``dpt-agent``: the kitchen agents' LM calls (a policy that assigns no task, a belief, a
  guideline, a reflection); the person's seat is the rule-based partner.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from cogym_lab.envs import make_env
from cogym_lab.studies import plan_steps, sequence_for
from cogym_lab.studies.designs import load_design
from cogym_lab.testing import Reply
from tests.support.eval_scripts import RouteByInstance, travel_routes
from tests.support.lm_scripts import classify, system_text, user_choice
from tests.support.plan_scripts import RelatedWorkPlanPlay
from tests.support.related_scripts import RelatedWorkRolePlay

Responder = Callable[[dict[str, Any]], "str | Reply"]


def _as_act(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with its last prompt turned into the act prompt the role plays answer."""
    messages = [*body["messages"][:-1], {"role": "user", "content": "Choose your next action"}]
    return {**body, "messages": messages}


def planning(play: Responder) -> Responder:
    """A collaborative agent's role play, answering the situational-planning agent: its decision
    (task action, message or wait) and its message follow from what the play would do next."""

    def respond(body: dict[str, Any]) -> str | Reply:
        kind = classify(body)
        if kind not in ("plan", "message"):
            return play(body)
        reply = play(_as_act(body))
        text = reply if isinstance(reply, str) else reply.text
        if kind == "plan":
            decision = 2 if "SEND_TEAMMATE_MESSAGE" in text else \
                3 if "WAIT_TEAMMATE_CONTINUE" in text else 1
            return f"Thought: the next step follows the work.\nDecision: {decision}"
        found = re.search(r'message="([^"]*)"', text)
        return f"Thought: report.\nMessage: {found.group(1) if found else 'On it.'}"

    return respond


def kitchen(body: dict[str, Any]) -> str:
    """Every kitchen agent's LM: no task assigned (the FSM plays on), a belief, a guideline."""
    asked = body["messages"][-1]["content"]
    if "# Your teammate" in asked:
        return "```text\nThey assemble and serve.\n```"
    if "# Behaviour guideline" in asked:
        return "```text\nCook ahead for beef orders.\n```"
    if "# Look back" in asked:
        return "```text\nStart the oldest order first.\n```"
    return "```text\nKeep cooking.\n```\n\n```json\n[]\n```"


def _plans_shown(body: dict[str, Any]) -> bool:
    seen = system_text(body)
    return any(mark in seen for mark in ("(no plan yet)", "Proposed plan 0", "The plan: "))


class CoPlanningUser:
    """The simulated user of a plans session: picks the proposed plan, runs it, and finishes
    once the plan output is written."""

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        kind, seen = classify(body), system_text(body)
        proposed = "Proposed plan 0" in seen and "The plan: " not in seen
        not_started = "The plan: " in seen and "step by step" in seen and ", done]" not in seen
        if kind == "user-decide":
            return user_choice(body, "task_action" if proposed or not_started else
                               "finish" if "Plan output:" in seen else "nothing")
        if kind == "user-action":
            return "Action: SELECT_PLAN(index=0)" if proposed else "Action: RUN_ALL()"
        if kind in ("user-answer", "user-feedback"):
            return "Message: Sounds good."
        return Reply(status=500, error=f"no scripted reply for {kind}")


class CocoaPlay:
    """Related work, per instance: plans (plan-aware agent, co-planning user) or chat."""

    def __init__(self, instances: list[int]) -> None:
        self.routes = []
        for number in instances:
            env = make_env("related_work", instance=number)
            self.routes.append((env.task.query, RelatedWorkPlanPlay(env.task.topic),
                                RelatedWorkRolePlay(env.task.topic)))
        self.user = CoPlanningUser()

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        text = "\n".join(str(m.get("content", "")) for m in body["messages"])
        _, plans, chat = next((r for r in self.routes if r[0] in text), self.routes[0])
        if not _plans_shown(body):
            return chat(body)
        if "propose how the team could go about the task" in body["messages"][-1]["content"]:
            plans.step_calls.clear()  # a new session on this instance: its steps start afresh
        return self.user(body) if body["model"] == "user-lm" else plans(body)


def _instances(design_name: str, participants: int) -> dict[str, list[int]]:
    """Task -> the instances the first ``participants`` participants meet (baselines too)."""
    design = load_design(design_name)
    met: dict[str, list[int]] = {}
    for number in range(participants):
        for step in plan_steps(design, sequence_for(design, number), number):
            if step.session is not None and step.instance is not None:
                met.setdefault(step.session.task, [])
                if step.instance not in met[step.session.task]:
                    met[step.session.task].append(step.instance)
    return met


def responder_for(design_name: str, participants: int = 2) -> Responder:
    """One responder for every LM call of a scripted simulation of a ready design."""
    met = _instances(design_name, participants)
    if design_name == "dpt-agent":
        return kitchen
    if design_name == "cocoa":
        return CocoaPlay(met["related_work"])
    if design_name == "cogym-real":
        # Related work first: its tools' prompts (drafting, grading) name no instance and go to
        # the first route; travel planning has no LM tools.
        routes: list[tuple[str, Responder]] = []
        for number in met.get("related_work", []):
            env = make_env("related_work", instance=number)
            routes.append((env.task.query, planning(RelatedWorkRolePlay(env.task.topic))))
        routes += [(marker, planning(play)) for marker, play in
                   travel_routes(met.get("travel_planning", []))]
        if "tabular_analysis" in met:
            raise ValueError("no scripted tabular participant here: simulate two participants")
        return RouteByInstance(routes)
    raise ValueError(f"no scripted LM for design {design_name!r}")
