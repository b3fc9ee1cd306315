"""The environment API, the action grammar, the collaboration acts and the wire formats."""

from cogym_lab.core.actions import Action, ActionError, ActionSpec, ParamSpec, describe_actions
from cogym_lab.core.coordinator import Coordinator, Transition, default_step_limits
from cogym_lab.core.env import ActionOutcome, CoEnv, Deferred, StepResult, action
from cogym_lab.core.grammar import format_action, parse_action, parse_canonical
from cogym_lab.core.messages import (
    ChatMessage,
    Confirmation,
    Event,
    EventType,
    Member,
    Notification,
    SessionContext,
    StepRequest,
    obs_channel,
    step_channel,
)
from cogym_lab.core.observation import Component, Observation, RenderType

__all__ = [
    "Action", "ActionError", "ActionOutcome", "ActionSpec", "ChatMessage", "CoEnv", "Component",
    "Confirmation", "Coordinator", "Deferred", "Event", "EventType", "Member", "Notification",
    "Observation", "ParamSpec", "RenderType", "SessionContext", "StepRequest", "StepResult",
    "Transition", "action", "default_step_limits", "describe_actions", "format_action",
    "obs_channel", "parse_action", "parse_canonical", "step_channel",
]
