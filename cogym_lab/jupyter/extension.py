"""The ``cogym_lab`` Jupyter server extension: hosts sessions under ``/cogym/api``."""

from __future__ import annotations

import tempfile
from pathlib import Path

from jupyter_server.extension.application import ExtensionApp
from traitlets import Unicode, default

from cogym_lab.jupyter.handlers import (
    ActionsHandler,
    SessionHandler,
    SessionsHandler,
    SessionWebSocketHandler,
)
from cogym_lab.jupyter.hosting import SessionHost

_ID = r"(?P<session_id>[A-Za-z0-9_.-]+)"


class CogymLabApp(ExtensionApp):
    """Runs collaboration sessions in the server's event loop, for people in the browser."""

    name = "cogym_lab"
    load_other_extensions = True

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

    def initialize_settings(self) -> None:
        self.host = SessionHost(self.results_dir, redis_url=self.redis_url,
                                default_team=self.default_team)
        self.settings["cogym_lab_host"] = self.host

    def initialize_handlers(self) -> None:
        self.handlers.extend([
            (r"/cogym/api/sessions/?", SessionsHandler),
            (rf"/cogym/api/sessions/{_ID}/?", SessionHandler),
            (rf"/cogym/api/sessions/{_ID}/actions/?", ActionsHandler),
            (rf"/cogym/api/sessions/{_ID}/ws", SessionWebSocketHandler),
        ])

    async def stop_extension(self) -> None:
        host = getattr(self, "host", None)
        if host is not None:
            await host.close()
