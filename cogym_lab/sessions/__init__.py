"""Sessions as data: :class:`SessionSpec` says what a session is, :func:`build_session` builds
it. Every entry point (the command line, the batch runner, the server extension, ``%cogym`` and
``new_session()``) goes through here."""

from cogym_lab.sessions.build import (
    SessionBuildError,
    build_one_member,
    build_session,
    session_config,
)
from cogym_lab.sessions.spec import EVERY_LM, TOOLS, Limits, LMSettings, NotebookRef, SessionSpec

__all__ = ["EVERY_LM", "TOOLS", "LMSettings", "Limits", "NotebookRef", "SessionBuildError",
           "SessionSpec", "build_one_member", "build_session", "session_config"]
