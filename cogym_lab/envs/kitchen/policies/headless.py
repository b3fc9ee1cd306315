"""Play a kitchen game straight on the env, with no bus, no clock and no session: for tests and
benchmarks of the rule-based members.

Each tick every role's policy is asked for an action from the view content (as a member would
be, from its notification), the actions are queued with ``env.step`` and the world moves on
with ``env.advance()``; each policy then reads the tick's info (what happened), as a member
reads the ``clock`` event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from cogym_lab.core import CoEnv
from cogym_lab.core.messages import TeamMember

#: The name of the view component the kitchen's content is in.
KITCHEN = "kitchen"


class KitchenPolicy(Protocol):
    """What the headless player drives: a decision from the view content, and the tick info."""

    def decide(self, content: Mapping[str, Any]) -> str | None: ...

    def note_tick(self, info: Mapping[str, Any]) -> None: ...


def play(env: CoEnv, policies: Mapping[str, KitchenPolicy], seed: int | None = None, *,
         max_ticks: int | None = None) -> dict[str, Any]:
    """Play one game to its end (or ``max_ticks`` ticks) and return the final view content.

    The roles are the keys of ``policies``, in order: the first two get chefs. An action the
    env refuses is left out, as a session would log it as an error and go on.
    """
    roles = list(policies)
    env.bind_team([TeamMember(role=role, kind="agent") for role in roles])
    env.reset(seed=seed)
    content = _content(env, roles[0])
    ticks = 0
    while not content.get("done") and (max_ticks is None or ticks < max_ticks):
        for role, policy in policies.items():
            action = policy.decide(content)
            if action is not None:
                env.step(role, action)
        result = env.advance()
        ticks += 1
        content = _content(env, roles[0])
        info = {"tick": content.get("tick"), **result.info}  # as the clock event has it
        for policy in policies.values():
            policy.note_tick(info)
        if result.done:
            break
    return content


def _content(env: CoEnv, role: str) -> dict[str, Any]:
    content = env.view(role)[KITCHEN].content
    assert isinstance(content, dict)  # the kitchen's view content is a JSON object
    return content


__all__ = ["KITCHEN", "KitchenPolicy", "play"]
