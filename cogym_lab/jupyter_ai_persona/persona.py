"""The Co-Gym persona for jupyter-ai 3.x's chat. jupyter-ai loads it through the
``jupyter_ai.personas`` entry point; it is the only module of cogym_lab that imports jupyter-ai,
and only when ``CoGymPersona`` is first asked for (so the module imports without the extra).

It runs inside the Jupyter server, so it reaches the cogym_lab extension's ``SessionHost``
directly (no HTTP, no token): a person writes ``start todo`` and gets a hosted session of their
own and the notebook cell that opens it.
"""

from __future__ import annotations

import functools
import importlib.metadata
from pathlib import Path
from typing import Any

from cogym_lab.jupyter_ai_persona import replies
from cogym_lab.jupyter_ai_persona.chat_sessions import ChatSessions
from cogym_lab.jupyter_ai_persona.commands import (
    CommandError,
    Help,
    Join,
    ListSessions,
    Start,
    read_command,
    usage,
)
from cogym_lab.runtime.hosting import HostingError

AVATAR = Path(__file__).with_name("avatar.svg")


def _serves_mcp_over_http() -> bool:
    """Whether this server's environment has the ``mcp`` SDK the seat endpoint needs (2.x)."""
    try:
        return int(importlib.metadata.version("mcp").split(".")[0]) >= 2
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False


class CoGymAnswers:
    """What the persona does with a message, apart from jupyter-ai's base class."""

    parent: Any  # the persona's PersonaManager, set by jupyter-ai

    async def answer(self, text: str, sender: str) -> str:
        """The reply to ``text`` from ``sender`` (a username of this server)."""
        try:
            command = read_command(text)
        except CommandError as error:
            return f"{error}\n\n{usage()}"
        if isinstance(command, Help):
            return usage()
        try:
            serverapp = self._serverapp()
            sessions = ChatSessions(serverapp.web_app.settings, sender,
                                    serverapp.identity_provider)
            url = serverapp.connection_url
            http_served = _serves_mcp_over_http()
            if isinstance(command, ListSessions):
                return replies.listing(await sessions.sessions())
            if isinstance(command, Join):
                return replies.found(await sessions.find(command.session_id), command.seat, url,
                                     http_served=http_served)
            assert isinstance(command, Start)
            summary, notes = await sessions.start(command)
            return replies.started(summary, command.seat, notes, list(command.outside), url,
                                   http_served=http_served)
        except HostingError as error:
            return f"I could not do that: {error.message}"

    def _serverapp(self) -> Any:
        """The Jupyter server this persona runs in: its persona manager's extension's, else
        the server singleton (jupyter-ai's one-shot message endpoint builds a manager with no
        extension above it)."""
        node: Any = self.parent
        while node is not None:
            app = getattr(node, "serverapp", None)
            if app is not None:
                return app
            node = getattr(node, "parent", None)
        from jupyter_server.serverapp import ServerApp

        if not ServerApp.initialized():
            raise HostingError("This persona runs only inside a Jupyter server.", status=503)
        return ServerApp.instance()


def __getattr__(name: str) -> Any:
    if name == "CoGymPersona":
        return _persona_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _persona_class() -> type:
    """``CoGymPersona``: jupyter-ai's ``BasePersona`` with :class:`CoGymAnswers`."""
    from jupyter_ai_persona_manager import BasePersona, PersonaDefaults

    class CoGymPersona(CoGymAnswers, BasePersona):
        """Starts, lists and opens Co-Gym sessions hosted by this Jupyter server."""

        @property
        def defaults(self) -> Any:
            return PersonaDefaults(
                name="CoGym",
                description="Starts and joins Co-Gym collaboration sessions hosted by this "
                            "server.",
                avatar_path=str(AVATAR),
                system_prompt="unused: this persona calls no LM",
            )

        async def process_message(self, message: Any) -> None:
            self.send_message(await self.answer(str(message.body or ""), str(message.sender)))

    CoGymPersona.__module__ = __name__  # the persona's id names the package: cogym_lab
    return CoGymPersona
