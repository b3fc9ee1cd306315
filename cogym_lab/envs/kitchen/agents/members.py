"""The kitchen's LM agents as member types (kind ``agent``): each is built with the member's own
LM (``setup.lm``) and the team file's options as keyword arguments."""

from __future__ import annotations

from cogym_lab.core.member import lm_agent_type
from cogym_lab.envs.kitchen.agents.act import ActAgent
from cogym_lab.envs.kitchen.agents.dpt import DPTAgent, DPTNoToMAgent
from cogym_lab.envs.kitchen.agents.react import ReActAgent, ReflexionAgent

ACT = lm_agent_type(
    "kitchen-act", ActAgent,
    "Kitchen agent with the LM as System 1: one LM call per macro action.")
REACT = lm_agent_type(
    "kitchen-react", ReActAgent,
    "Kitchen agent: ReAct writing assigned tasks that steer the FSM.")
REFLEXION = lm_agent_type(
    "kitchen-reflexion", ReflexionAgent,
    "Kitchen agent: Reflexion (ReAct plus reflections after failures) steering the FSM.")
DPT = lm_agent_type(
    "kitchen-dpt", DPTAgent,
    "DPT-Agent: the FSM acts at once; code-as-policy, a belief about the partner and a "
    "behaviour guideline are written in the background.")
DPT_NO_TOM = lm_agent_type(
    "kitchen-dpt-no-tom", DPTNoToMAgent, "DPT-Agent without its Theory-of-Mind module.")

__all__ = ["ACT", "DPT", "DPT_NO_TOM", "REACT", "REFLEXION"]
