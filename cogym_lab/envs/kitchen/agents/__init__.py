"""LM agents of the real-time kitchen (DPT-Agent and its baselines), their restricted
code-as-policy evaluator and their prompts.

* ``kitchen-act``: the LM as System 1, one call per macro action (:class:`ActAgent`);
* ``kitchen-react`` and ``kitchen-reflexion``: an LM that writes assigned tasks steering the
  kitchen FSM, the second with reflections after failures (:class:`ReActAgent`,
  :class:`ReflexionAgent`);
* ``kitchen-dpt`` and ``kitchen-dpt-no-tom``: DPT-Agent, whose FSM acts on every notification
  while background tasks write code-as-policy, a belief about the partner and a behaviour
  guideline (:class:`DPTAgent`, and :class:`DPTNoToMAgent` without the belief).
"""

from cogym_lab.envs.kitchen.agents.act import ActAgent
from cogym_lab.envs.kitchen.agents.dpt import DPTAgent, DPTNoToMAgent
from cogym_lab.envs.kitchen.agents.policy_code import PolicyRejected, parse_assigned_tasks
from cogym_lab.envs.kitchen.agents.react import ReActAgent, ReflexionAgent

__all__ = ["ActAgent", "DPTAgent", "DPTNoToMAgent", "PolicyRejected", "ReActAgent",
           "ReflexionAgent", "parse_assigned_tasks"]
