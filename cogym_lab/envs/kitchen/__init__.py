"""The real-time kitchen: two chefs cook and serve burger orders against a ticking clock.

``env.py`` is the task (a clocked CoEnv); ``game.py`` the rules; ``layout.py`` and ``layouts/``
the kitchens; ``macros.py`` and ``pathing.py`` turn macro actions into moves; ``view.py`` is
how members read the view. ``policies/`` plays it without an LM (the rule-based partners and
the FSM), ``agents/`` with one (LM as System 1, ReAct, Reflexion, DPT-Agent), and ``teams/``
pairs each agent with a partner.
"""

from cogym_lab.envs.kitchen.env import KitchenEnv
from cogym_lab.envs.kitchen.view import KitchenView

__all__ = ["KitchenEnv", "KitchenView"]
