"""The paper's three agents as member types (Co-Gym §5.1), and the plan-aware agent
(Cocoa's interactive plans)."""

from __future__ import annotations

from cogym_lab.agents.autonomous import AutonomousAgent
from cogym_lab.agents.collaborative import CollaborativeAgent
from cogym_lab.agents.plan_aware import PlanAwareAgent
from cogym_lab.agents.planning import PlanningAgent
from cogym_lab.core.member import MemberType, lm_builder

AUTONOMOUS = MemberType(
    name="autonomous", kind="agent", build=lm_builder(AutonomousAgent),
    summary="Fully Autonomous Agent: task actions and FINISH only; it never sees the chat.")
COLLABORATIVE = MemberType(
    name="collaborative", kind="agent", build=lm_builder(CollaborativeAgent),
    summary="Collaborative Agent: task actions and collaboration acts in one ReAct step.")
COLLABORATIVE_PLANNING = MemberType(
    name="collaborative-planning", kind="agent", build=lm_builder(PlanningAgent),
    summary="Collaborative Agent with Situational Planning: decide the kind of step, then act.")
PLAN_AWARE = MemberType(
    name="plan-aware", kind="agent", build=lm_builder(PlanAwareAgent),
    summary="Plan-aware agent: the situational-planning agent that also proposes interactive "
            "plans, carries out its steps in every plan, asks for the person's steps, and "
            "writes each plan's output (a task made with plans).")
