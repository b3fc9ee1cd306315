"""Building the sessions a host runs: a :class:`~cogym_lab.sessions.spec.SessionSpec` becomes
a :class:`~cogym_lab.runtime.hosted.HostedSession`, not yet started, with its team loaded the
way the host allows and, for a session in a notebook, its notebook linked and connected."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from cogym_lab.runtime.errors import HostingError
from cogym_lab.runtime.hosted import HostedSession
from cogym_lab.sessions.spec import SessionSpec


class SessionBuilder:
    """Builds sessions from specs.

    ``default_team`` fills a spec without one; ``teams`` registers team files by name beside
    the ready ones; ``team_paths`` says whether a team may also be a file path (yes in a kernel
    or a script, which run their owner's code anyway; never in a server, whose requests come
    from others). ``in_thread``: build in a worker thread, off the loop (a server; a kernel's
    host, whose magics need a session at once, passes False).
    """

    def __init__(self, *, default_team: str | None = None, teams: Mapping[str, str] | None = None,
                 team_paths: bool = True, in_thread: bool = True) -> None:
        self.default_team = default_team
        self.teams = dict(teams or {})
        self.team_paths = team_paths
        self.in_thread = in_thread
        #: Links sessions to a person's notebook (its kernel and live document): a
        #: ``cogym_lab.server.live_notebooks.NotebookOpener``, set by the server extension.
        self.notebooks: Any = None

    async def build(self, spec: SessionSpec, session_id: str | None = None) -> HostedSession:
        """The session ``spec`` describes, not yet started, built off the loop when
        ``in_thread`` (building an env may load a dataset, which must not stall the server's
        other sessions and requests). Raises ``HostingError``."""
        if self.in_thread:
            return await asyncio.to_thread(self._build, spec, session_id)
        return self._build(spec, session_id)

    def _build(self, spec: SessionSpec, session_id: str | None = None) -> HostedSession:
        from cogym_lab.sessions import SessionBuildError, build_session

        if spec.team is None and self.default_team:
            spec = spec.model_copy(update={"team": self.default_team})
        notebook = self._link_notebook(spec) if spec.notebook is not None else None
        try:
            session = build_session(spec, session_id=session_id, guides=True,
                                    notebook=notebook, load_team=self._load_team)
        except SessionBuildError as error:
            raise HostingError(f"{error.field}: {error.message}", status=error.status) from None
        seats = [member.role for member in session.team if member.kind == "person"]
        sample = session.data_sample
        where = "notebook" if spec.origin == "notebook" else "command line"
        return HostedSession(session=session, team=session.spec.team_name, task=spec.task,
                             people=seats, spec=session.spec, data=session.data_source,
                             data_notice=sample.notice(where=where) if sample else None)

    def _load_team(self, team: Any) -> Any:
        from cogym_lab.teams.config import load_registered_team, load_team

        if self.team_paths:
            return load_team(team)
        return load_registered_team(team, self.teams)

    def _link_notebook(self, spec: SessionSpec) -> Any:
        """A (not yet connected) link to the notebook ``spec`` names, for its first seat."""
        if self.notebooks is None or spec.notebook is None:
            raise HostingError("notebook: sessions from a notebook need the cogym_lab server "
                               "extension running in the notebook's Jupyter server.", status=409)
        # The opener refuses a notebook it cannot use with a HostingError of its own.
        return self.notebooks.link(spec.notebook.model_dump(), spec.people[0])

    async def connect_notebook(self, hosted: HostedSession) -> None:
        """Connect a notebook session to its kernel before anyone acts, so that no cell the
        person runs is missed."""
        link = getattr(hosted.live.env, "notebook", None)
        if link is None or not hasattr(link, "start"):
            return
        try:
            await link.start(hosted.session_id)
        except Exception as error:
            await link.close()
            raise HostingError(f"Could not connect to the notebook's kernel: {error}",
                               status=409) from error


__all__ = ["SessionBuilder"]
