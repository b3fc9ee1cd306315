"""The ``cogym_lab`` Jupyter server extension: hosts sessions under ``/cogym/api``."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from jupyter_server.extension.application import ExtensionApp
from tornado.ioloop import IOLoop
from traitlets import Bool, Dict, Float, Int, List, Unicode, default

from cogym_lab.core.loop_lag import LoopLagMonitor
from cogym_lab.runtime.ended import DEFAULT_FINISHED_TTL
from cogym_lab.runtime.hosting import SessionHost
from cogym_lab.runtime.panels import DEFAULT_UNATTENDED_SECONDS
from cogym_lab.server.create_policy import CreatePolicy
from cogym_lab.server.handlers import (
    ActionsHandler,
    InterruptHandler,
    PairwiseHandler,
    RatingHandler,
    ResumeHandler,
    SeatsHandler,
    SessionHandler,
    SessionsHandler,
    SessionWebSocketHandler,
    StatusHandler,
)
from cogym_lab.server.kernel_ends import KernelEnds
from cogym_lab.server.limits import KIB, ServerLimits
from cogym_lab.server.live_notebooks import NotebookOpener
from cogym_lab.server.mcp_handler import SeatMcpHandler
from cogym_lab.server.quota import ActionRates, SessionQuota
from cogym_lab.server.sessions_loop import SessionsLoop

_DEFAULTS = ServerLimits()
T = TypeVar("T")

_ID = r"(?P<session_id>[A-Za-z0-9_.-]+)"
_ROLE = r"(?P<role>[A-Za-z0-9_.-]+)"


class CogymLab(ExtensionApp):
    """The extension's settings, configurable as ``c.CogymLab.<name>`` (or
    ``c.CogymLabApp.<name>``) in ``jupyter_server_config.py``."""

    results_dir = Unicode(help="Folder for the sessions' results (one subfolder per session). "
                               "Default: cogym-results under the server's root directory, or a "
                               "temporary folder when that is not writable.").tag(config=True)
    redis_url = Unicode(None, allow_none=True,
                        help="Bus for hosted sessions: redis://HOST:PORT/DB, or None for an "
                             "in-process bus per session.").tag(config=True)
    default_team = Unicode(None, allow_none=True,
                           help="Team used when a request names none; unset: the task's own "
                                "(CoEnv.default_team).").tag(
        config=True)

    # -- what requests may name -----------------------------------------------------------------
    teams = Dict(key_trait=Unicode(), value_trait=Unicode(),
                 help="Team files requests may name, by name -> path, beside the ready teams. "
                      "A request never gives a path itself.").tag(config=True)
    members = Dict(key_trait=Unicode(), value_trait=Unicode(),
                   help="Member types team files may name, by name -> 'package.module:NAME' of "
                        "a cogym_lab MemberType, "
                        "beside the built-in ones and the 'cogym_lab.members' entry points."
                   ).tag(config=True)
    lm_base_urls = List(Unicode(), help="LM endpoints a request's lm.base_url may point at (a "
                                        "URL under one of them), beside the server's own "
                                        "OPENAI_BASE_URL.").tag(config=True)
    allow_loopback_lm = Bool(True, help="Whether lm.base_url may also be any loopback address "
                                        "(a local LM server).").tag(config=True)
    data_dirs = List(Unicode(), help="Folders a request's data_dir (from a notebook: `%cogym "
                                     "config data_dir=...` or its COGYM_DATA) may name, the "
                                     "folder itself or one inside it, beside the server's own "
                                     "data folder (its COGYM_DATA, else the user cache) and its "
                                     "root directory.").tag(config=True)

    # -- the administrator's LM: it wins over what requests ask for ---------------------------
    lm_model = Unicode(None, allow_none=True,
                       help="The model of every LM of every hosted session. Set, it replaces "
                            "the model a request (%cogym config, --model) or a team file "
                            "names; the create answer's notes say so.").tag(config=True)
    lm_base_url = Unicode(None, allow_none=True,
                          help="The OpenAI-compatible endpoint every hosted session's LMs "
                               "call. Set, it replaces a request's base_url, and a request's "
                               "API key is used only if it was given for this endpoint (the "
                               "server's own OPENAI_API_KEY otherwise).").tag(config=True)
    allow_request_lm = Bool(True, help="Whether a request may choose its LMs (model, base_url, "
                                       "api_key, provider). False: the server's own settings "
                                       "(lm_model, lm_base_url, its environment, the team "
                                       "files) are used, and a request's are not.").tag(
        config=True)

    # -- limits ---------------------------------------------------------------------------------
    max_seats_per_session = Int(_DEFAULTS.max_seats_per_session, min=1,
                                help="Person seats ('people') one session may have.").tag(
        config=True)
    max_sessions_per_user = Int(_DEFAULTS.max_sessions_per_user, min=1,
                                help="Sessions one user may have running at once.").tag(
        config=True)
    max_sessions = Int(_DEFAULTS.max_sessions, min=1,
                       help="Sessions the server runs at once, all users together.").tag(
        config=True)
    max_request_bytes = Int(_DEFAULTS.max_request_bytes, min=KIB,
                            help="Largest REST request body, in bytes.").tag(config=True)
    max_action_bytes = Int(_DEFAULTS.max_action_bytes, min=KIB,
                           help="Largest action: a WebSocket message or an actions request "
                                "body, in bytes.").tag(config=True)
    max_json_depth = Int(_DEFAULTS.max_json_depth, min=2,
                         help="How deeply a body or message may nest objects and arrays.").tag(
        config=True)
    ws_actions_per_second = Float(_DEFAULTS.ws_actions_per_second, min=0.01,
                                  help="Actions one connection may send a second on average "
                                       "(the WebSocket, and REST actions per user and "
                                       "session); more are refused with an error.").tag(
        config=True)
    ws_action_burst = Int(_DEFAULTS.ws_action_burst, min=1,
                          help="Actions one connection may send at once before the rate "
                               "applies.").tag(config=True)

    baseline_dirs = List(Unicode(), help="Folders of fully autonomous runs (`cogym-lab eval "
                                         "run --team autonomous`). The rating form compares a "
                                         "session's outcome with the autonomous agent's on the "
                                         "same task and instance found there (Co-Gym's win "
                                         "rate); without any, it does not ask.").tag(config=True)
    unattended_seconds = Float(DEFAULT_UNATTENDED_SECONDS,
                               help="Seconds a running session with person seats goes on with "
                                    "no one at it (no panel open on any seat, no person's "
                                    "action) before it ends, with that reason in its log. A "
                                    "closed tab or notebook does not end a session before "
                                    "then. 0 or less: never end a session for that.").tag(
        config=True)
    end_with_kernel = Bool(True, help="Whether a session created from a notebook (or running "
                                      "in one) ends when that notebook's kernel is shut down "
                                      "(a restart keeps it).").tag(config=True)
    panel_grace_seconds = Float(None, allow_none=True,
                                help="No longer used: a closed panel does not end a session "
                                     "any more; see unattended_seconds.").tag(config=True)
    finished_session_ttl = Float(DEFAULT_FINISHED_TTL, min=0.0,
                                 help="Seconds an ended session stays hosted (a panel that "
                                      "connects gets its seat's last view and the scores) "
                                      "before the server keeps only its results folder, read "
                                      "like a session of an earlier server. 0: at once. Its "
                                      "agents, env and bus are released at its end "
                                      "either way.").tag(config=True)

    def server_limits(self) -> ServerLimits:
        return ServerLimits(
            max_seats_per_session=self.max_seats_per_session,
            max_sessions_per_user=self.max_sessions_per_user, max_sessions=self.max_sessions,
            max_request_bytes=self.max_request_bytes, max_action_bytes=self.max_action_bytes,
            max_json_depth=self.max_json_depth, ws_actions_per_second=self.ws_actions_per_second,
            ws_action_burst=self.ws_action_burst)

    @default("results_dir")
    def _default_results_dir(self) -> str:
        root = getattr(self.serverapp, "root_dir", None) if self.serverapp else None
        if root:
            folder = Path(root) / "cogym-results"
            try:
                folder.mkdir(parents=True, exist_ok=True)
                return str(folder)
            except OSError:
                pass
        return tempfile.mkdtemp(prefix="cogym-results-")


class CogymLabApp(CogymLab):
    """Runs collaboration sessions for people in the browser, on an event loop of their own
    (a thread: :mod:`cogym_lab.server.sessions_loop`), never on the server's."""

    name = "cogym_lab"
    load_other_extensions = True

    def initialize_settings(self) -> None:
        from cogym_lab.datasets import data_dir
        from cogym_lab.members import register_member

        for name, path in self.members.items():
            register_member(path, name=name)
        # The sessions' loop: the host and all it starts live there, the server's loop stays
        # free for the panels and the REST calls.
        self.sessions_loop = SessionsLoop(IOLoop.current().asyncio_loop)  # type: ignore[attr-defined]
        self.sessions_loop.start()
        IOLoop.current().add_callback(self._note_server_loop)
        # Requests come from others: team names only, never a path to a file.
        self.host = SessionHost(self.results_dir, redis_url=self.redis_url,
                                default_team=self.default_team, teams=self.teams,
                                team_paths=False, unattended_seconds=self.unattended_seconds,
                                finished_session_ttl=self.finished_session_ttl,
                                baselines=[Path(folder).expanduser()
                                           for folder in self.baseline_dirs])
        limits = self.server_limits()
        self.loop_lag = LoopLagMonitor()
        self.settings.update({
            "cogym_lab_host": self.host,
            "cogym_lab_limits": limits,
            "cogym_lab_policy": CreatePolicy(
                results_root=Path(self.results_dir), data_root=data_dir(), teams=self.teams,
                lm_base_urls=list(self.lm_base_urls), allow_loopback_lm=self.allow_loopback_lm,
                limits=limits, data_dirs=self._data_dirs(), lm_model=self.lm_model or None,
                lm_base_url=self.lm_base_url or None,
                allow_request_lm=self.allow_request_lm),
            "cogym_lab_quota": SessionQuota(limits, self.host.running),
            "cogym_lab_rates": ActionRates(limits),
            "cogym_lab_loop_lag": self.loop_lag,
            "cogym_lab_sessions_loop": self.sessions_loop,
            "cogym_lab_mcp_seats": self._mcp_seats(limits),
        })
        IOLoop.current().add_callback(self.loop_lag.start)  # ticks once the server's loop runs
        if self.panel_grace_seconds is not None:
            self.log.warning("cogym_lab: panel_grace_seconds is no longer used (a closed panel "
                             "does not end a session); see CogymLab.unattended_seconds")
        self.kernel_ends: KernelEnds | None = None
        if self.end_with_kernel and self.serverapp is not None:
            self.kernel_ends = KernelEnds(self.host, self.serverapp.kernel_manager)
            self.sessions_loop.soon(self.kernel_ends.start)  # it ends sessions: on their loop
        # Sessions in a notebook's kernel: the notebook is the server's loop's, the session not.
        self.host.notebooks = NotebookOpener(self.serverapp, self.sessions_loop)
        # Sessions an earlier server left, interrupted or finished; on the sessions' loop, which
        # owns the host's registry (and its eviction timers) from here on.
        stored = self.sessions_loop.spawn(_call(self.host.recover)).result()
        if stored:
            interrupted = sum(entry.status == "interrupted" for entry in stored)
            self.log.info("cogym_lab: %d earlier sessions in %s, %d of them interrupted "
                          "(POST /cogym/api/sessions/<id>/resume)", len(stored),
                          self.results_dir, interrupted)

    def _note_server_loop(self) -> None:
        """The loop the server runs, once it runs (the WebSockets' and streams' loop)."""
        self.sessions_loop.server_loop = asyncio.get_running_loop()

    def _mcp_seats(self, limits: ServerLimits) -> Any:
        """The MCP endpoints of the sessions' outside seats; ``None`` without the ``mcp``
        extra (the endpoint then says what to install)."""
        try:
            import mcp.server.streamable_http_manager  # noqa: F401
        except ImportError:
            return None
        from cogym_lab.mcp_seat.hosted_seats import HostedSeats

        self.mcp_seats = HostedSeats(max_body=limits.max_action_bytes)
        return self.mcp_seats

    def _data_dirs(self) -> list[Path]:
        """The configured data folders, then the server's root directory (whoever may create
        sessions reads every file under it through the contents API anyway)."""
        root = getattr(self.serverapp, "root_dir", None) if self.serverapp else None
        return [Path(folder).expanduser() for folder in [*self.data_dirs, *([root] if root
                                                                           else [])]]

    def initialize_handlers(self) -> None:
        self.handlers.extend([
            (r"/cogym/api/status/?", StatusHandler),
            (r"/cogym/api/sessions/?", SessionsHandler),
            (rf"/cogym/api/sessions/{_ID}/?", SessionHandler),
            (rf"/cogym/api/sessions/{_ID}/actions/?", ActionsHandler),
            (rf"/cogym/api/sessions/{_ID}/resume/?", ResumeHandler),
            (rf"/cogym/api/sessions/{_ID}/rating/?", RatingHandler),
            (rf"/cogym/api/sessions/{_ID}/pairwise/?", PairwiseHandler),
            (rf"/cogym/api/sessions/{_ID}/interrupt/?", InterruptHandler),
            (rf"/cogym/api/sessions/{_ID}/seats/?", SeatsHandler),
            (rf"/cogym/api/sessions/{_ID}/ws", SessionWebSocketHandler),
            (rf"/cogym/api/sessions/{_ID}/mcp/{_ROLE}/?", SeatMcpHandler),
        ])

    async def stop_extension(self) -> None:
        monitor = getattr(self, "loop_lag", None)
        if monitor is not None:
            await monitor.stop()
        loops: SessionsLoop | None = getattr(self, "sessions_loop", None)
        if loops is None:
            return
        kernel_ends = getattr(self, "kernel_ends", None)
        if kernel_ends is not None:
            await loops.run(kernel_ends.stop())
        seats = getattr(self, "mcp_seats", None)
        if seats is not None:  # their clients' streams end; the sessions are the host's
            await loops.run(seats.close())
        host = getattr(self, "host", None)
        if host is not None:
            await loops.run(host.close())
        await loops.stop()


async def _call(function: Callable[[], T]) -> T:
    return function()
