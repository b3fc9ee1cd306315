"""The paper's three agents as member types (Co-Gym §5.1), and the plan-aware agent
(Cocoa's interactive plans)."""

from __future__ import annotations

from cogym_lab.agents.autonomous import AutonomousAgent
from cogym_lab.agents.collaborative import CollaborativeAgent
from cogym_lab.agents.plan_aware import PlanAwareAgent
from cogym_lab.agents.planning import PlanningAgent
from cogym_lab.core.member import lm_agent_type

AUTONOMOUS = lm_agent_type(
    "autonomous", AutonomousAgent,
    "Fully Autonomous Agent: task actions and FINISH only; it never sees the chat.")
COLLABORATIVE = lm_agent_type(
    "collaborative", CollaborativeAgent,
    "Collaborative Agent: task actions and collaboration acts in one ReAct step.")
COLLABORATIVE_PLANNING = lm_agent_type(
    "collaborative-planning", PlanningAgent,
    "Collaborative Agent with Situational Planning: decide the kind of step, then act.")
PLAN_AWARE = lm_agent_type(
    "plan-aware", PlanAwareAgent,
    "Plan-aware agent: the situational-planning agent that also proposes interactive plans, "
    "carries out its steps in every plan, asks for the person's steps, and writes each plan's "
    "output (a task made with plans).")
