"""The kitchen's LM agents as member types (kind ``agent``): each is built with the member's own
LM (``setup.lm``) and the team file's options as keyword arguments."""

from __future__ import annotations

from cogym_lab.core.member import MemberType, lm_builder
from cogym_lab.envs.kitchen.agents.act import ActAgent
from cogym_lab.envs.kitchen.agents.dpt import DPTAgent, DPTNoToMAgent
from cogym_lab.envs.kitchen.agents.react import ReActAgent, ReflexionAgent

ACT = MemberType(
    name="kitchen-act", kind="agent", build=lm_builder(ActAgent),
    summary="Kitchen agent with the LM as System 1: one LM call per macro action.")
REACT = MemberType(
    name="kitchen-react", kind="agent", build=lm_builder(ReActAgent),
    summary="Kitchen agent: ReAct writing assigned tasks that steer the FSM.")
REFLEXION = MemberType(
    name="kitchen-reflexion", kind="agent", build=lm_builder(ReflexionAgent),
    summary="Kitchen agent: Reflexion (ReAct plus reflections after failures) steering the FSM.")
DPT = MemberType(
    name="kitchen-dpt", kind="agent", build=lm_builder(DPTAgent),
    summary="DPT-Agent: the FSM acts at once; code-as-policy, a belief about the partner and "
            "a behaviour guideline are written in the background.")
DPT_NO_TOM = MemberType(
    name="kitchen-dpt-no-tom", kind="agent", build=lm_builder(DPTNoToMAgent),
    summary="DPT-Agent without its Theory-of-Mind module.")

__all__ = ["ACT", "DPT", "DPT_NO_TOM", "REACT", "REFLEXION"]
