"""``SessionPanel``: the notebook panel for one person seat of a session (an anywidget).

Two transports, chosen at construction; the browser code is the same for both:

* ``SessionPanel.for_server(base_url, token, session_id, role)``: the browser opens the session's
  WebSocket on the Jupyter server itself, so the panel stays live while the kernel is busy;
* ``SessionPanel.for_local(host, session_id, role)``: the session runs on a ``SessionHost`` in
  this kernel's event loop, and the kernel relays it through the widget's comm.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any
from urllib.parse import quote

import anywidget
from traitlets import Enum, Int, Unicode

from cogym_lab.runtime.hosting import SessionHost
from cogym_lab.widgets.assets import CSS_PATH, ESM_PATH
from cogym_lab.widgets.local_bridge import LocalBridge

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class SessionPanel(anywidget.AnyWidget):
    """Chat, shared workspace, agent status, controls and the final rating, for one seat."""

    _esm = ESM_PATH
    _css = CSS_PATH

    mode = Enum(["server", "local"], default_value="server",
                help="How the browser reaches the session.").tag(sync=True)
    session_id = Unicode("", help="The session followed.").tag(sync=True)
    role = Unicode("", help="The person seat this panel acts for.").tag(sync=True)
    ws_url = Unicode("", help="Server mode: the seat's WebSocket (absolute, or relative to the "
                              "page).").tag(sync=True)
    api_url = Unicode("", help="Server mode: the session's REST address (ratings go to "
                               "<api_url>/rating).").tag(sync=True)
    token = Unicode("", help="Server mode: the Jupyter token; empty to rely on the page's "
                             "login cookie (JupyterLab).").tag(sync=True)
    connection = Unicode("", help="Set by the browser: connecting, open or closed.").tag(
        sync=True)
    last_seq = Int(0, help="The seq of the last notification shown.").tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bridge: LocalBridge | None = None

    @classmethod
    def for_server(cls, base_url: str, token: str | None, session_id: str,
                   role: str) -> SessionPanel:
        """A panel whose browser side talks to the server extension directly.

        ``base_url`` is the Jupyter server's base URL: absolute (``http://127.0.0.1:8888/``) or
        a path (``/``, ``/user/me/``) resolved against the page, which is what JupyterLab on the
        same server wants. ``token`` may be empty where the page is logged in already.
        """
        _check_name("session_id", session_id)
        _check_name("role", role)
        api_url = f"{base_url.rstrip('/')}/cogym/api/sessions/{quote(session_id, safe='')}"
        return cls(mode="server", session_id=session_id, role=role, token=token or "",
                   api_url=api_url, ws_url=f"{api_url}/ws?role={quote(role, safe='')}")

    @classmethod
    def for_local(cls, host: SessionHost, session_id: str, role: str, *,
                  loop: asyncio.AbstractEventLoop | None = None) -> SessionPanel:
        """A panel relayed by this kernel for a session that ``host`` runs in-process.

        ``loop`` is the host's event loop; by default the loop running here (the kernel's).
        Raises ``HostingError`` for an unknown session or a role that is not a person seat.
        """
        if loop is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                raise ValueError("for_local needs the host's event loop: pass loop=... when no "
                                 "loop runs in this thread.") from None
        panel = cls(mode="local", session_id=session_id, role=role)
        try:
            panel.bridge = LocalBridge(host, session_id, role, panel.send, loop,
                                       observer=panel._shown)
        except Exception:
            panel.close()
            raise
        panel.on_msg(panel._from_browser)
        return panel

    @property
    def latest(self) -> dict[str, Any] | None:
        """Local mode: the last notification relayed to the browser."""
        return self.bridge.latest if self.bridge else None

    def _from_browser(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if self.bridge is not None:
            self.bridge.handle(content)

    def _shown(self, notification: dict[str, Any]) -> None:
        seq = notification.get("seq")
        if isinstance(seq, int):
            self.last_seq = seq

    def close(self) -> None:
        bridge = getattr(self, "bridge", None)
        if bridge is not None:
            bridge.close()
        super().close()


def _check_name(what: str, value: str) -> None:
    if not isinstance(value, str) or not _NAME.match(value):
        raise ValueError(f"{what} must be letters, digits, '_', '.' or '-', got {value!r}.")
