"""cogym_lab: Collaborative Gym (Co-Gym) for notebooks.

The names here are the ones you need to extend and run cogym_lab:

* to write a task: ``CoEnv``, ``action``, ``ActionOutcome``, ``ActionError``, ``Component``,
  ``ScoreReport``, ``check_env``;
* to write a team member: ``Member``, ``MemberType``, ``MemberSetup``, ``Notification``;
* to run a session from code: ``SessionSpec``, ``build_session``;
* in a notebook: ``new_session``, ``attach``, ``list_sessions``, ``configure`` (the model,
  endpoint, key and data folder sent with each new session), and ``view`` (a finished
  session's trajectory, event by event).
* to catch whatever the package raises on purpose: ``CogymError``, the base of every
  exception it defines.

Each loads on first use: ``import cogym_lab`` itself loads only the version, so it stays cheap.
``docs/extending.md`` walks through a new task and a new agent.
"""

import typing as _typing
import warnings as _warnings
from importlib import import_module as _import_module

from cogym_lab._version import __version__

if _typing.TYPE_CHECKING:  # what type checkers and editors see; at run time, __getattr__
    from cogym_lab.api import attach, configure, list_sessions, new_session
    from cogym_lab.core.actions import ActionError
    from cogym_lab.core.check_env import check_env
    from cogym_lab.core.env import ActionOutcome, CoEnv, ScoreReport, action
    from cogym_lab.core.member import Member, MemberSetup, MemberType
    from cogym_lab.core.messages import Notification
    from cogym_lab.core.observation import Component
    from cogym_lab.errors import CogymError
    from cogym_lab.sessions import SessionSpec, build_session
    from cogym_lab.widgets.trajectory_viewer import view

#: Each public name and the module that defines it.
_EXPORTS: dict[str, str] = {
    # writing a task
    "CoEnv": "cogym_lab.core.env",
    "action": "cogym_lab.core.env",
    "ActionOutcome": "cogym_lab.core.env",
    "ActionError": "cogym_lab.core.actions",
    "Component": "cogym_lab.core.observation",
    "ScoreReport": "cogym_lab.core.env",
    "check_env": "cogym_lab.core.check_env",
    # writing a team member
    "Member": "cogym_lab.core.member",
    "MemberType": "cogym_lab.core.member",
    "MemberSetup": "cogym_lab.core.member",
    "Notification": "cogym_lab.core.messages",
    # running a session from code
    "SessionSpec": "cogym_lab.sessions",
    "build_session": "cogym_lab.sessions",
    # the notebook API
    "new_session": "cogym_lab.api",
    "attach": "cogym_lab.api",
    "list_sessions": "cogym_lab.api",
    "configure": "cogym_lab.api",
    "view": "cogym_lab.widgets.trajectory_viewer",
    # catching what the package raises
    "CogymError": "cogym_lab.errors",
}

#: Names the notebook API's errors and handles are known by; they resolve here, unlisted.
_ALSO: dict[str, str] = {
    "SessionError": "cogym_lab.api",
    "SessionHandle": "cogym_lab.api",
}

#: Former top-level names, still found here (with a warning) for one release.
_MOVED: dict[str, str] = {
    "Session": "cogym_lab.nodes",
    "SessionConfig": "cogym_lab.nodes",
    "SessionResult": "cogym_lab.nodes",
    "replay": "cogym_lab.nodes",
}

# The author API: _EXPORTS groups it by use. Checked by tests/notebook/test_author_api.py.
__all__ = [
    "ActionError", "ActionOutcome", "CoEnv", "CogymError", "Component", "Member", "MemberSetup",
    "MemberType", "Notification", "ScoreReport", "SessionSpec", "__version__", "action",
    "attach", "build_session", "check_env", "configure", "list_sessions", "new_session", "view",
]


def __getattr__(name: str) -> object:
    """Load a public name from its module on first use."""
    if name in _EXPORTS or name in _ALSO:
        value = getattr(_import_module(_EXPORTS.get(name) or _ALSO[name]), name)
        globals()[name] = value  # later lookups skip this function
        return value
    if name in _MOVED:
        home = _MOVED[name]
        _warnings.warn(f"cogym_lab.{name} has moved: import it from {home} "
                      f"(`from {home} import {name}`). The old name goes in the next release.",
                      DeprecationWarning, stacklevel=2)
        return getattr(_import_module(home), name)
    raise AttributeError(f"module 'cogym_lab' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's own names and every public name, loaded or not."""
    return sorted({*globals(), *__all__, *_ALSO})


def load_ipython_extension(shell: object) -> None:
    """``%load_ext cogym_lab`` registers the ``%cogym`` magic."""
    from cogym_lab.magics import load_ipython_extension as load

    load(shell)


def _jupyter_server_extension_points() -> list[dict]:
    """Lets ``jpserver_extensions: {"cogym_lab": true}`` find the server extension."""
    from cogym_lab.server import _jupyter_server_extension_points as points

    return points()
