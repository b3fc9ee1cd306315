"""What a task's author needs: the env base class and its action decorator, what actions and
views are made of, and what a member is told. The coordinator, the grammar and the wire formats
are internals of the protocol: import them from their modules (``cogym_lab.core.coordinator``,
``.grammar``, ``.messages``, ``.actions``)."""

from cogym_lab.core.actions import Action, ActionError
from cogym_lab.core.env import ActionOutcome, CoEnv, Deferred, TickResult, action
from cogym_lab.core.messages import Notification, SessionContext
from cogym_lab.core.observation import Component, Observation, RenderType

__all__ = ["Action", "ActionError", "ActionOutcome", "CoEnv", "Component", "Deferred",
           "Notification", "Observation", "RenderType", "SessionContext", "TickResult", "action"]
