"""The ``cogym_lab`` Jupyter server extension: hosts sessions under ``/cogym/api``."""

from __future__ import annotations

import tempfile
from pathlib import Path

from jupyter_server.extension.application import ExtensionApp
from traitlets import Unicode, default

from cogym_lab.jupyter.handlers import (
    ActionsHandler,
    InterruptHandler,
    RatingHandler,
    ResumeHandler,
    SessionHandler,
    SessionsHandler,
    SessionWebSocketHandler,
)
from cogym_lab.jupyter.hosting import SessionHost
from cogym_lab.jupyter.notebook import NotebookOpener

_ID = r"(?P<session_id>[A-Za-z0-9_.-]+)"


class CogymLab(ExtensionApp):
    """The extension's settings, configurable as ``c.CogymLab.<name>`` (or
    ``c.CogymLabApp.<name>``) in ``jupyter_server_config.py``."""

    results_dir = Unicode(help="Folder for the sessions' results (one subfolder per session). "
                               "Default: cogym-results under the server's root directory, or a "
                               "temporary folder when that is not writable.").tag(config=True)
    redis_url = Unicode(None, allow_none=True,
                        help="Bus for hosted sessions: redis://HOST:PORT/DB, or None for an "
                             "in-process bus per session.").tag(config=True)
    default_team = Unicode("example", help="Team used when a request names none.").tag(
        config=True)

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
    """Runs collaboration sessions in the server's event loop, for people in the browser."""

    name = "cogym_lab"
    load_other_extensions = True

    def initialize_settings(self) -> None:
        self.host = SessionHost(self.results_dir, redis_url=self.redis_url,
                                default_team=self.default_team)
        self.settings["cogym_lab_host"] = self.host
        self.host.notebooks = NotebookOpener(self.serverapp)  # sessions in a notebook's kernel
        stored = self.host.recover()  # sessions an earlier server left: interrupted or finished
        if stored:
            interrupted = sum(entry.status == "interrupted" for entry in stored)
            self.log.info("cogym_lab: %d earlier sessions in %s, %d of them interrupted "
                          "(POST /cogym/api/sessions/<id>/resume)", len(stored),
                          self.results_dir, interrupted)

    def initialize_handlers(self) -> None:
        self.handlers.extend([
            (r"/cogym/api/sessions/?", SessionsHandler),
            (rf"/cogym/api/sessions/{_ID}/?", SessionHandler),
            (rf"/cogym/api/sessions/{_ID}/actions/?", ActionsHandler),
            (rf"/cogym/api/sessions/{_ID}/resume/?", ResumeHandler),
            (rf"/cogym/api/sessions/{_ID}/rating/?", RatingHandler),
            (rf"/cogym/api/sessions/{_ID}/interrupt/?", InterruptHandler),
            (rf"/cogym/api/sessions/{_ID}/ws", SessionWebSocketHandler),
        ])

    async def stop_extension(self) -> None:
        host = getattr(self, "host", None)
        if host is not None:
            await host.close()
