"""The kitchen's rule-based members as member types (no LM): the three specialist partners of
the paper's experiments and the FSM agent.

Each wraps a policy (view content -> macro or ``None``) in the member interface: it reads the
kitchen component of each notification, tells the policy what happened in every tick the
notification stands for, and sends at most one action per tick.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cogym_lab.core import Notification, SessionContext
from cogym_lab.core.member import MemberSetup, MemberType
from cogym_lab.core.messages import EventType
from cogym_lab.envs.kitchen.policies.fsm import KitchenFSM
from cogym_lab.envs.kitchen.policies.headless import KITCHEN, KitchenPolicy
from cogym_lab.envs.kitchen.policies.partners import (
    Assembler,
    BeefSpecialist,
    LettuceSpecialist,
    MapPartner,
)
from cogym_lab.envs.kitchen.policies.plan_follower import (
    PLAN,
    PlanFollower,
    before_the_clock,
    is_plan_action,
    plan_is_on,
)


def clock_infos(notification: Notification) -> list[Mapping[str, Any]]:
    """The info of every tick (``clock`` event) a notification stands for, oldest first."""
    return [event.info for event in notification.merged_events or [notification.event]
            if event.type is EventType.CLOCK]


def kitchen_content(notification: Notification) -> Mapping[str, Any] | None:
    """The kitchen view's content, or ``None`` when the view has none (not started yet)."""
    if KITCHEN not in notification.view:
        return None
    content = notification.view[KITCHEN].content
    return content if isinstance(content, Mapping) else None


def plan_content(notification: Notification) -> Mapping[str, Any] | None:
    """The interactive plan's content in a planned kitchen (``None`` without a plan)."""
    if PLAN not in notification.view:
        return None
    content = notification.view[PLAN].content
    return content if isinstance(content, Mapping) else None


class PolicyMember:
    """A member that plays the kitchen by a rule-based policy, built for its role at start.

    With ``follows_plans`` (the FSM chef), a planned kitchen's plan comes first: while a plan
    is picked and not finished, the chef works its agent steps (:mod:`.plan_follower`)."""

    def __init__(self, make_policy: Callable[..., KitchenPolicy], follows_plans: bool = False,
                 **options: Any) -> None:
        self.make_policy = make_policy
        self.options = options
        self.follows_plans = follows_plans
        self.follower: PlanFollower | None = None
        self.policy: KitchenPolicy | None = None
        self.role = ""
        self._sent_at = -1  # the tick of the last action sent: one per tick at most
        self.final: Notification | None = None

    def start(self, context: SessionContext) -> None:
        self.role = context.role
        self.policy = self.make_policy(context.role, **self.options)
        self.follower = PlanFollower(context.role) if self.follows_plans else None
        self._sent_at = -1

    async def act(self, notification: Notification) -> str | None:
        if self.policy is None:
            return None
        for info in clock_infos(notification):
            self.policy.note_tick(info)
            if self.follower is not None:
                self.follower.note_tick(info)
        content = kitchen_content(notification)
        if content is None or content.get("done"):
            return None
        plan = plan_content(notification)
        if self.follower is not None:
            proposal = self.follower.propose(content, plan)
            if proposal is not None:
                return proposal  # a plan action: it takes no tick of the chef's
            if before_the_clock(content, plan):
                return None  # the division of labour may still change: no move yet
        if self.follower is not None and plan_is_on(plan):
            return self._follow(content, plan)
        tick = int(content.get("tick", 0))
        if tick <= self._sent_at:
            return None  # the world has not moved since the last action: it shows it next tick
        action = self.policy.decide(content)
        if action is not None:
            self._sent_at = tick
        return action

    def _follow(self, content: Mapping[str, Any], plan: Mapping[str, Any] | None) -> str | None:
        """The plan's next action: a plan action at any time, a chef's once a tick."""
        assert self.follower is not None
        tick = int(content.get("tick", 0))
        if tick <= self._sent_at:
            # the chef's last action shows next tick; a step it finished may be completed now
            action = self.follower.decide(content, plan)
            return action if is_plan_action(action) else None
        action = self.follower.decide(content, plan)
        if action is not None and not is_plan_action(action):
            self._sent_at = tick
        return action

    def end(self, final: Notification) -> None:
        self.final = final


def _type(name: str, policy: Callable[..., KitchenPolicy], summary: str,
          follows_plans: bool = False) -> MemberType:
    def build(setup: MemberSetup) -> PolicyMember:
        return PolicyMember(policy, follows_plans, **setup.options)

    return MemberType(name=name, kind="agent", uses_lm=False, build=build, summary=summary)


BEEF = _type("kitchen-beef", BeefSpecialist,
             "Rule-based kitchen partner that cooks beef and hands it over; puts out fires.")
LETTUCE = _type("kitchen-lettuce", LettuceSpecialist,
                "Rule-based kitchen partner that chops lettuce and hands it over.")
ASSEMBLER = _type("kitchen-assembler", Assembler,
                  "Rule-based kitchen partner that assembles and serves burgers from ready "
                  "ingredients; puts out fires.")
MAP_PARTNER = _type("kitchen-partner", MapPartner,
                    "Rule-based kitchen partner chosen by the map (its layout's partner): the "
                    "assembler on Map 1, the lettuce specialist on Map 2.")
FSM = _type("kitchen-fsm", KitchenFSM,
            "The kitchen FSM agent: puts out fires, serves, assembles, prepares for the most "
            "urgent order; no LM. In a planned kitchen it works the plan's agent steps.",
            follows_plans=True)

__all__ = ["ASSEMBLER", "BEEF", "FSM", "LETTUCE", "MAP_PARTNER", "PolicyMember", "clock_infos",
           "kitchen_content", "plan_content"]
