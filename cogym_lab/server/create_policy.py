"""What a create request may ask of the server, beyond being well formed.

A request comes from anyone the server lets in, so it may not choose the code the server runs
(team files are named, never given by path), the folders it writes (paths stay inside the
server's own folders) or the hosts it calls (LM endpoints come from an allow-list). Each refusal
is a ``HostingError`` (400) that names the field and what to do instead.
"""

from __future__ import annotations

import ipaddress
import os
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from urllib.parse import urlsplit

from cogym_lab.lm.config import ENV_BASE_URL
from cogym_lab.runtime.hosting import HostingError
from cogym_lab.runtime.models import CreateRequest
from cogym_lab.server.limits import ServerLimits
from cogym_lab.sessions.spec import EVERY_LM, LMSettings
from cogym_lab.teams.config import TeamConfig, registered_teams

#: env_args that name a folder the env writes to; they must stay inside the results folder.
WRITTEN_FOLDERS = ("workdir", "index_cache")
#: env_args that name a folder the env reads data from; they must stay inside the data folder.
READ_FOLDERS = ("data_dir",)
#: env_args that hold live objects, set by the server itself, never by a request.
SERVER_ONLY_ARGS = ("notebook", "executor")


@dataclass
class CreatePolicy:
    """The server's rules for create requests (see the module docstring)."""

    results_root: Path
    data_root: Path | None = None
    teams: Mapping[str, str] = field(default_factory=dict)  # registered through configuration
    lm_base_urls: Sequence[str] = ()
    allow_loopback_lm: bool = True
    limits: ServerLimits = field(default_factory=ServerLimits)

    def check(self, request: CreateRequest) -> CreateRequest:
        """The request as the server will run it (folders made absolute), or ``HostingError``."""
        self._check_seats(request)
        self._check_team(request.team)
        env_args = self._checked_env_args(request.env_args)
        for key, settings in request.lm.items():
            self._check_lm(key, settings)
        return request.model_copy(update={"env_args": env_args})

    def _check_seats(self, request: CreateRequest) -> None:
        most = self.limits.max_seats_per_session
        if len(request.people) > most:
            raise HostingError(f"people: {len(request.people)} seats asked for; a session here "
                               f"has at most {most} (c.CogymLab.max_seats_per_session).")
        shared = [*request.seat_users, *request.seat_tokens]
        strangers = sorted(set(shared) - set(request.people))
        if strangers:
            raise HostingError(f"seat_users/seat_tokens: {', '.join(strangers)} is not in "
                               "'people': only person seats can be shared.")

    def _check_team(self, team: str | TeamConfig | None) -> None:
        if team is None:
            return
        if isinstance(team, TeamConfig):
            raise HostingError("team: name a registered team; a server never runs a team given "
                               "in a request (its administrator registers team files with "
                               "c.CogymLab.teams).")
        known = registered_teams(self.teams)
        if team not in known:
            shown = team if len(team) <= 80 else team[:80] + "…"
            raise HostingError(f"team: {shown!r} is not a registered team. Name one of "
                               f"{', '.join(sorted(known))}; a server never reads a team file "
                               "from a path in a request (its administrator registers team "
                               "files with c.CogymLab.teams).")

    def _checked_env_args(self, env_args: dict[str, object]) -> dict[str, object]:
        checked = dict(env_args)
        for name in SERVER_ONLY_ARGS:
            if name in env_args:
                raise HostingError(f"env_args.{name}: set by the server, not by a request"
                                   + (" (use the 'notebook' field)." if name == "notebook"
                                      else "."))
        for name in env_args:
            if name.endswith("_lm"):
                raise HostingError(f"env_args.{name}: a tool's LM comes from the 'lm' field.")
        for name in WRITTEN_FOLDERS:
            if name in env_args:
                checked[name] = str(inside(self.results_root, env_args[name],
                                           f"env_args.{name}", "the server's results folder"))
        for name in READ_FOLDERS:
            if name in env_args:
                if self.data_root is None:
                    raise HostingError(f"env_args.{name}: this server reads task data from its "
                                       "own data folder only.")
                checked[name] = str(inside(self.data_root, env_args[name], f"env_args.{name}",
                                           "the server's data folder"))
        return checked

    def _check_lm(self, key: str, lm: LMSettings) -> None:
        where = f"lm.{key}" if key != EVERY_LM else "lm"
        if lm.provider == "local" or (lm.model is not None
                                      and lm.model.lower().endswith(".gguf")):
            raise HostingError(f"{where}.model: a local model file cannot be named in a "
                               "request; the server's team files may name one.")
        if lm.base_url is not None and not self.lm_url_allowed(lm.base_url):
            raise HostingError(f"{where}.base_url: {lm.base_url[:200]!r} is not an LM endpoint "
                               "this server may call. Allowed: " + self.describe_lm_urls())

    # -- LM endpoints -------------------------------------------------------------------------

    def allowed_lm_urls(self) -> list[str]:
        """The configured endpoints and the server's own ``OPENAI_BASE_URL``."""
        from_env = os.environ.get(ENV_BASE_URL, "").strip()
        return [*self.lm_base_urls, *([from_env] if from_env else [])]

    def lm_url_allowed(self, url: str) -> bool:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:  # a port that is not a number, brackets that do not close, ...
            return False
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.username \
                or parts.password:
            return False
        if self.allow_loopback_lm and is_loopback(parts.hostname):
            return True
        return any(_same_endpoint(parts.scheme, parts.hostname, port, parts.path, allowed)
                   for allowed in self.allowed_lm_urls())

    def describe_lm_urls(self) -> str:
        allowed = self.allowed_lm_urls()
        parts = (["loopback addresses (localhost, 127.0.0.0/8, ::1)"]
                 if self.allow_loopback_lm else []) + allowed
        return ("; ".join(parts) or "none") + " (c.CogymLab.lm_base_urls, OPENAI_BASE_URL)."


def inside(root: Path, value: object, name: str, what: str) -> Path:
    """``value`` as a path inside ``root`` (relative paths are taken from ``root``), following
    symlinks; ``HostingError`` for anything else: not a string, ``..``, or a way out."""
    if not isinstance(value, str) or not value.strip():
        raise HostingError(f"{name}: expected a folder path inside {what}.")
    if ".." in PurePosixPath(value).parts or ".." in PureWindowsPath(value).parts:
        raise HostingError(f"{name}: '..' is not allowed; name a folder inside {what}.")
    base = root.resolve()
    try:  # an absolute value replaces base; symlinks are followed
        target = (base / value).resolve()
    except (OSError, ValueError) as error:  # a NUL byte, a symlink loop
        raise HostingError(f"{name}: not a usable path ({error}).") from None
    if not target.is_relative_to(base):
        raise HostingError(f"{name}: {value[:200]!r} is outside {what} ({base}).")
    return target


def is_loopback(host: str) -> bool:
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _same_endpoint(scheme: str, host: str, port: int | None, path: str, allowed: str) -> bool:
    """Whether a URL is at the configured endpoint ``allowed``: same scheme, host and port, and
    a path under the endpoint's path."""
    try:
        other = urlsplit(allowed)
        other_port = other.port
    except ValueError:
        return False
    defaults = {"http": 80, "https": 443}
    return (scheme == other.scheme and host.lower() == (other.hostname or "").lower()
            and (port or defaults.get(scheme)) == (other_port or defaults.get(other.scheme))
            and _under(path, other.path))


def _under(path: str, prefix: str) -> bool:
    """Whether URL path ``path`` is ``prefix`` or below it, once ``.`` and ``..`` are gone."""
    normal = posixpath.normpath("/" + path).rstrip("/") + "/"
    return normal.startswith(posixpath.normpath("/" + prefix).rstrip("/") + "/")
