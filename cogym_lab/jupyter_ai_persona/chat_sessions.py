"""Sessions a chat persona starts and finds for a person, through the server's own parts.

A session started from the chat is made as ``POST /cogym/api/sessions`` makes it: the same
create policy (allow-lists, the administrator's LM), the same quota, and the person as its
owner, so their notebook's ``%cogym attach`` and the REST API treat it as theirs. The host is
reached on the hosted sessions' own loop, as the handlers reach it.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from cogym_lab.jupyter_ai_persona.commands import Start
from cogym_lab.runtime.access import SessionAccess, identity_of
from cogym_lab.runtime.hosting import HostingError
from cogym_lab.runtime.models import CreateRequest, validation_message
from cogym_lab.server.gate import Gate
from cogym_lab.server.handlers import ServerParts


class ServerMissing(HostingError):
    """The Jupyter server has no cogym_lab extension loaded (no ``SessionHost`` in its
    settings)."""


def outside_seats_supported() -> bool:
    """Whether this cogym_lab's create request takes ``outside`` seats (for outside agents)."""
    return "outside" in CreateRequest.model_fields


class ChatSessions:
    """One person's sessions on one Jupyter server, as the chat persona reaches them."""

    def __init__(self, settings: dict[str, Any], sender: str, identity_provider: Any) -> None:
        """``settings``: the server's web app settings; ``sender``: the chat message's sender
        (a username); ``identity_provider``: the server's, which decides who that is here."""
        if "cogym_lab_host" not in settings:
            raise ServerMissing("This Jupyter server does not run the cogym_lab extension "
                                "(jupyter server extension enable cogym_lab).", status=503)
        self.parts = ServerParts(settings)
        self.who = identity_of(sender, identity_provider)
        self.gate = Gate(self.parts.host, self.who)

    async def start(self, command: Start) -> tuple[dict[str, Any], list[str]]:
        """Create the session ``command`` asks for; its summary (as the person sees it) and the
        create policy's notes. Raises ``HostingError`` with the reason, as the REST API does."""
        body: dict[str, Any] = {"task": command.task, "people": [command.seat]}
        if command.instance is not None:
            body["instance"] = command.instance
        if command.team is not None:
            body["team"] = command.team
        if command.outside:
            if not outside_seats_supported():
                raise HostingError("This cogym_lab cannot leave a seat for an outside agent "
                                   "in a hosted session yet (its create request has no "
                                   "'outside' field).")
            body["outside"] = list(command.outside)
        try:
            request = CreateRequest.model_validate(body)
        except ValidationError as error:
            raise HostingError(validation_message(error)) from None
        checked = self.parts.policy.check(request)

        async def create() -> dict[str, Any]:
            with self.parts.quota.place(self.who):
                hosted = await self.parts.host.create(
                    checked.request.spec(), access=SessionAccess(owner=self.who),
                    created_in=checked.request.created_in)
            return self.gate.summary(hosted)

        return await self.parts.loops.run(create()), list(checked.notes)

    async def find(self, session_id: str) -> dict[str, Any]:
        """The summary of a session the person created or holds a seat of (404 otherwise)."""
        return await self.parts.loops.call(
            lambda: self.gate.summary(self.gate.entry(session_id)))

    async def sessions(self) -> list[dict[str, Any]]:
        return await self.parts.loops.call(self.gate.sessions)
