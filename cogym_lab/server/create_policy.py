"""What a create request may ask of the server, beyond being well formed.

A request comes from anyone the server lets in, so it may not choose the code the server runs
(team files are named, never given by path), the folders it writes (paths stay inside the
server's own folders, and the data it reads comes from folders its administrator allows) or the
hosts it calls (LM endpoints come from an allow-list). Each refusal is a ``HostingError`` (400)
that names the field and what to do instead, from where the request came: a spec made in a
notebook (``origin == "notebook"``) is told about ``%cogym config``.

Where the administrator has chosen the LM (``c.CogymLab.lm_model``, ``lm_base_url``, or
``allow_request_lm = False``), the request's own LM settings are replaced, not refused: a
notebook sends its settings with every request, and the person is told in ``notes`` that they
were not used.
"""

from __future__ import annotations

import ipaddress
import os
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any
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


#: The LM settings that choose which LM is called and how it is reached.
_CHOOSING = ("provider", "model", "base_url", "api_key")


@dataclass
class CheckedRequest:
    """A create request as the server will run it, and what the person should be told about
    the changes the server made to it (settings of theirs it did not use)."""

    request: CreateRequest
    notes: list[str] = field(default_factory=list)


@dataclass
class CreatePolicy:
    """The server's rules for create requests (see the module docstring)."""

    results_root: Path
    data_root: Path | None = None
    teams: Mapping[str, str] = field(default_factory=dict)  # registered through configuration
    lm_base_urls: Sequence[str] = ()
    allow_loopback_lm: bool = True
    limits: ServerLimits = field(default_factory=ServerLimits)
    #: More folders a request's data_dir may name (it, or a folder inside it), beside
    #: ``data_root``: ``c.CogymLab.data_dirs`` and the server's root directory.
    data_dirs: Sequence[Path] = ()
    #: The administrator's LM for every hosted session (``c.CogymLab.lm_model`` and
    #: ``lm_base_url``): they replace whatever a request asks for.
    lm_model: str | None = None
    lm_base_url: str | None = None
    #: Whether a request may choose its LMs at all (``c.CogymLab.allow_request_lm``).
    allow_request_lm: bool = True

    def check(self, request: CreateRequest) -> CheckedRequest:
        """The request as the server will run it (folders made absolute, the administrator's
        LM settings in place of the request's) and notes on what was not used; or
        ``HostingError``."""
        notebook = request.origin == "notebook"
        self._check_seats(request)
        self._check_team(request.team)
        env_args = self._checked_env_args(request.env_args, notebook)
        update: dict[str, Any] = {"env_args": env_args}
        if request.data_dir is not None:
            update["data_dir"] = str(self.data_folder(request.data_dir, "data_dir", notebook))
        lm, notes = self._server_lm(request.lm, notebook)
        for key, settings in lm.items():
            self._check_lm(key, settings, notebook)
        update["lm"] = lm
        return CheckedRequest(request.model_copy(update=update), notes)

    def _check_seats(self, request: CreateRequest) -> None:
        most = self.limits.max_seats_per_session
        if len(request.people) > most:
            raise HostingError(f"people: {len(request.people)} seats asked for; a session here "
                               f"has at most {most} (c.CogymLab.max_seats_per_session).")
        shared = [*request.seat_users, *request.seat_tokens]
        strangers = sorted(set(shared) - {*request.people, *request.outside})
        if strangers:
            raise HostingError(f"seat_users/seat_tokens: {', '.join(strangers)} is not in "
                               "'people' or 'outside': only person seats and outside seats can "
                               "be shared.")

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

    def _checked_env_args(self, env_args: dict[str, object],
                          notebook: bool = False) -> dict[str, object]:
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
                checked[name] = str(self.data_folder(env_args[name], f"env_args.{name}",
                                                     notebook))
        return checked

    # -- task data ------------------------------------------------------------------------------

    def data_roots(self) -> list[Path]:
        """The folders task data may be read from: the server's data folder first, then the
        configured ones."""
        return list(dict.fromkeys([*([self.data_root] if self.data_root else []),
                                   *self.data_dirs]))

    def data_folder(self, value: object, name: str, notebook: bool = False) -> Path:
        """``value`` as a folder inside one of :meth:`data_roots` (a relative path is taken
        from the first), or ``HostingError`` saying which folders are allowed and how to name
        one from where the request came."""
        roots = self.data_roots()
        fix = ("Run `%cogym config data_dir=PATH` in the notebook with a folder inside one of "
               "them" if notebook else "Name a folder inside one of them")
        fix += ", or ask the server's administrator to add yours to c.CogymLab.data_dirs."
        if not roots:
            raise HostingError(f"{name}: this server reads task data from its own data "
                               "folder only." + (" Run `%cogym config data_dir=` (empty) in "
                                                 "the notebook to send none." if notebook
                                                 else ""))
        shown = ", ".join(str(root) for root in roots)
        problems: list[HostingError] = []
        for root in roots:
            try:
                return inside(root, value, name, "the server's data folders")
            except HostingError as error:
                problems.append(error)
            if not isinstance(value, str) or not value.strip() \
                    or not PurePosixPath(value).is_absolute():
                break  # a relative path is taken from the first folder only
        if any("is outside" not in problem.message for problem in problems):
            raise HostingError(f"{problems[0].message} Allowed: {shown}. {fix}")
        text = value if isinstance(value, str) else ""
        raise HostingError(f"{name}: {text[:200]!r} is outside the folders this server reads "
                           f"task data from ({shown}). {fix}")

    # -- LMs ------------------------------------------------------------------------------------

    def _server_lm(self, lm: Mapping[str, LMSettings], notebook: bool
                   ) -> tuple[dict[str, LMSettings], list[str]]:
        """The request's LM settings with the administrator's in their place, and a note for
        each setting of the request's that is therefore not used."""
        lm = dict(lm)
        notes: list[str] = []
        clear = (" (`%cogym config --clear` in the notebook stops sending them)" if notebook
                 else "")
        if not self.allow_request_lm:
            if any(settings.chooses_lm() for settings in lm.values()):
                notes.append("This server chooses its LMs itself (c.CogymLab.allow_request_lm "
                             "= False): the model, endpoint and API key sent with the request "
                             f"are not used{clear}.")
            lm = {key: settings.model_copy(update=dict.fromkeys(_CHOOSING))
                  for key, settings in lm.items()}
        if self.lm_base_url:
            endpoint = self.lm_base_url
            others = sorted({s.base_url for s in lm.values() if s.base_url not in (None, endpoint)})
            if others:
                notes.append(f"This server's LM endpoint is set by its administrator "
                             f"(c.CogymLab.lm_base_url = {endpoint!r}); not used: "
                             f"{', '.join(repr(url[:200]) for url in others)}.")
            if any(s.api_key is not None and s.base_url != endpoint for s in lm.values()):
                notes.append("The API key sent with the request is not used: a key goes only "
                             "to the endpoint it was given for, and this server calls its own "
                             f"(with its own key){clear}.")
            lm = {key: s.model_copy(update={"base_url": None, "api_key": (
                      s.api_key if s.base_url == endpoint else None)})
                  for key, s in lm.items()}
            lm[EVERY_LM] = lm.get(EVERY_LM, LMSettings()).model_copy(
                update={"base_url": endpoint})
        if self.lm_model:
            others = sorted({s.model for s in lm.values() if s.model not in (None,
                                                                            self.lm_model)})
            if others:
                notes.append(f"This server's model is set by its administrator "
                             f"(c.CogymLab.lm_model = {self.lm_model!r}); not used: "
                             f"{', '.join(repr(model[:100]) for model in others)}.")
            lm = {key: s.model_copy(update={"model": None}) for key, s in lm.items()}
            lm[EVERY_LM] = lm.get(EVERY_LM, LMSettings()).model_copy(
                update={"model": self.lm_model})
        return lm, notes

    def _check_lm(self, key: str, lm: LMSettings, notebook: bool = False) -> None:
        where = f"lm.{key}" if key != EVERY_LM else "lm"
        if lm.provider == "local" or (lm.model is not None
                                      and lm.model.lower().endswith(".gguf")):
            fix = (" Run `%cogym config model=NAME` in the notebook with a model an "
                   "OpenAI-compatible server serves." if notebook else "")
            raise HostingError(f"{where}.model: a local model file cannot be named in a "
                               f"request; the server's team files may name one.{fix}")
        if lm.base_url is not None and not self.lm_url_allowed(lm.base_url):
            fix = (" Run `%cogym config base_url=URL` in the notebook with one of these (it "
                   "wins over OPENAI_BASE_URL in the kernel's environment), or ask the "
                   "server's administrator to allow yours." if notebook else "")
            raise HostingError(f"{where}.base_url: {lm.base_url[:200]!r} is not an LM endpoint "
                               "this server may call. Allowed: " + self.describe_lm_urls() + fix)

    # -- LM endpoints -------------------------------------------------------------------------

    def allowed_lm_urls(self) -> list[str]:
        """The configured endpoints (the administrator's own ``lm_base_url`` among them) and
        the server's own ``OPENAI_BASE_URL``."""
        from_env = os.environ.get(ENV_BASE_URL, "").strip()
        return [*([self.lm_base_url] if self.lm_base_url else []), *self.lm_base_urls,
                *([from_env] if from_env else [])]

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
