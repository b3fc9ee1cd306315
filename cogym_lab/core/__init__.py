"""What a task's author needs: the env base class and its action decorator, what actions and
views are made of, and what a member is told. The coordinator, the grammar and the wire formats
are internals of the protocol: import them from their modules (``cogym_lab.core.coordinator``,
``.grammar``, ``.messages``, ``.actions``).

The names load on first use: a module that needs only ``cogym_lab.core.text`` (the LMs do, in
every process that makes a call) does not pay for the env, the grammar and the wire formats.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time, __getattr__
    from cogym_lab.core.actions import Action, ActionError
    from cogym_lab.core.env import ActionOutcome, CoEnv, Deferred, TickResult, action
    from cogym_lab.core.messages import Notification, SessionContext
    from cogym_lab.core.observation import Component, Observation, RenderType

_EXPORTS = {
    "Action": "cogym_lab.core.actions", "ActionError": "cogym_lab.core.actions",
    "ActionOutcome": "cogym_lab.core.env", "CoEnv": "cogym_lab.core.env",
    "Deferred": "cogym_lab.core.env", "TickResult": "cogym_lab.core.env",
    "action": "cogym_lab.core.env",
    "Notification": "cogym_lab.core.messages", "SessionContext": "cogym_lab.core.messages",
    "Component": "cogym_lab.core.observation", "Observation": "cogym_lab.core.observation",
    "RenderType": "cogym_lab.core.observation",
}

__all__ = ["Action", "ActionError", "ActionOutcome", "CoEnv", "Component", "Deferred",
           "Notification", "Observation", "RenderType", "SessionContext", "TickResult", "action"]


def __getattr__(name: str) -> Any:
    """Load an exported name from its module on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
