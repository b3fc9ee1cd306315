"""Whose session is it: identities, ownership, shared seats, and what each caller may read.

A session belongs to the identity that created it. Other identities reach it only through a share
the creator made: a seat given to them by name (``seat_users``) or a seat token they claim. Each
caller sees only the views of the seats it holds, never another role's private components.

Identities come from jupyter_server's ``IdentityProvider``. Its stock providers (token or
password) do not identify anyone: every request carrying the server's one token (or its
password's cookie) gets a fresh anonymous user, and that token already opens kernels and files.
So all of their users are one identity, :data:`TOKEN_HOLDER`. Any other provider (JupyterHub's,
or one of your own) names users, and each username is an identity of its own.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

from pydantic import BaseModel, Field

#: The one identity of a server whose identity provider does not tell users apart.
TOKEN_HOLDER = "(the server's token)"


def identity_of(user: Any, identity_provider: Any) -> str:
    """The identity a request acts as: its username, or :data:`TOKEN_HOLDER` under jupyter_server's
    stock identity providers (see the module docstring)."""
    from jupyter_server.auth.identity import IdentityProvider, PasswordIdentityProvider

    if type(identity_provider) in (IdentityProvider, PasswordIdentityProvider):
        return TOKEN_HOLDER
    username = getattr(user, "username", None) or (user if isinstance(user, str) else None)
    if not username:
        raise ValueError("The identity provider gave a user without a username.")
    return str(username)


class SessionAccess(BaseModel):
    """Who may do what with one session; saved in ``hosting.json``.

    ``seat_users`` maps a person seat to the identity it was given to; ``seat_tokens`` maps a
    seat to the SHA-256 of its token while nobody has claimed it (the token itself is shown to
    the creator once and never stored). The owner holds every other person seat.
    """

    owner: str
    seat_users: dict[str, str] = Field(default_factory=dict)
    seat_tokens: dict[str, str] = Field(default_factory=dict)

    def is_owner(self, who: str) -> bool:
        return who == self.owner

    def seats_of(self, who: str, people: list[str]) -> list[str]:
        """The person seats ``who`` holds, in the session's order."""
        if who == self.owner:  # every seat not given to someone else
            return [role for role in people if role not in self.seat_tokens
                    and self.seat_users.get(role, who) == who]
        return [role for role in people if self.seat_users.get(role) == who]

    def can_see(self, who: str, people: list[str]) -> bool:
        return self.is_owner(who) or bool(self.seats_of(who, people))

    def claim(self, token: str, who: str) -> str | None:
        """Give ``who`` the seat ``token`` opens (once); its role, or ``None`` for a token that
        opens no seat here."""
        digest = token_digest(token)
        for role, expected in list(self.seat_tokens.items()):
            if hmac.compare_digest(digest, expected):
                del self.seat_tokens[role]
                self.seat_users[role] = who
                return role
        return None


def new_seat_token() -> tuple[str, str]:
    """A fresh seat token and the digest to keep of it."""
    token = secrets.token_urlsafe(24)
    return token, token_digest(token)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def visible_state(state: dict[str, Any] | None, seats: list[str]) -> dict[str, Any] | None:
    """A session's state (``Coordinator.snapshot()``) as the holder of ``seats`` may read it: the
    views of those seats only, and the chat messages they could see."""
    if not isinstance(state, dict):
        return state
    shown = dict(state)
    if isinstance(state.get("views"), dict):
        shown["views"] = {role: view for role, view in state["views"].items() if role in seats}
    if isinstance(state.get("chat"), list):
        shown["chat"] = [message for message in state["chat"] if _readable(message, seats)]
    return shown


def _readable(message: Any, seats: list[str]) -> bool:
    if not isinstance(message, dict):
        return False
    to = message.get("to")
    return to is None or to in seats or message.get("sender") in seats
