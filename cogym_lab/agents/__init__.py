"""The Co-Gym LM agents: fully autonomous, collaborative, and collaborative with situational
planning; and the plan-aware agent, which works through an interactive plan (docs/plans.md).
Each works on any env through its action specs."""

from cogym_lab.agents.autonomous import AutonomousAgent
from cogym_lab.agents.base import LMAgent
from cogym_lab.agents.collaborative import CollaborativeAgent
from cogym_lab.agents.plan_aware import PlanAwareAgent
from cogym_lab.agents.planning import Plan, PlanningAgent

AGENT_TYPES: dict[str, type[LMAgent]] = {
    AutonomousAgent.agent_type: AutonomousAgent,
    CollaborativeAgent.agent_type: CollaborativeAgent,
    PlanningAgent.agent_type: PlanningAgent,
    PlanAwareAgent.agent_type: PlanAwareAgent,
}

__all__ = ["AGENT_TYPES", "AutonomousAgent", "CollaborativeAgent", "LMAgent", "Plan",
           "PlanAwareAgent", "PlanningAgent"]
