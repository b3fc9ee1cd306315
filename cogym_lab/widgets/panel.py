"""``SessionPanel``: the notebook panel for one person seat of a session (an anywidget).

Two transports, chosen at construction; the browser code is the same for both:

* ``SessionPanel.for_server(base_url, token, session_id, role)``: the browser opens the session's
  WebSocket on the Jupyter server itself, so the panel stays live while the kernel is busy;
* ``SessionPanel.for_local(host, session_id, role)``: the session runs on a ``SessionHost`` in
  this kernel's event loop, and the kernel relays it through the widget's comm.

Shared texts (the editor) are edited live: the browser keeps a Yjs replica of each, and Yjs
itself travels as the text of one ES module in the ``yjs_module`` trait (the panel imports it;
anywidget sends a widget one module of its own). A read-only panel gets none and edits nothing.

Either may be read-only (``readonly=True``, watch mode): the panel then follows any member of the
session (an agent, a simulated user) as that member sees it, live, and acts in nothing. The
browser code disables its controls and sends no action; the server (or the kernel's bridge)
refuses any that arrives anyway.

A second view of a seat shows only its chat (``part="chat"``): the agents' status, the
confirmations and the chat, for JupyterLab's side area beside the notebook
(:mod:`cogym_lab.widgets.beside`). It follows the same seat of the same session as the panel in
the cell, over its own connection; while it is shown, the cell's panel leaves the chat to it.

Where the panel cannot be shown (no live widget model: the kernel restarted, the notebook is read
as a file), its output says in words which session it is and how to see it again
(:mod:`cogym_lab.widgets.fallback`).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import anywidget
from traitlets import Bool, Enum, Int, Unicode

from cogym_lab.runtime.hosting import SessionHost
from cogym_lab.widgets.assets import CSS_PATH, ESM_PATH, yjs_esm
from cogym_lab.widgets.fallback import Fallback, TextFallback
from cogym_lab.widgets.local_bridge import LocalBridge

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class SessionPanel(TextFallback, anywidget.AnyWidget):
    """Chat, shared workspace, agent status, controls and the final rating, for one seat."""

    _esm = ESM_PATH
    _css = CSS_PATH

    mode = Enum(["server", "local"], default_value="server",
                help="How the browser reaches the session.").tag(sync=True)
    session_id = Unicode("", help="The session followed.").tag(sync=True)
    role = Unicode("", help="The person seat this panel acts for (read-only: the member it "
                            "watches).").tag(sync=True)
    readonly = Bool(False, help="Watch mode: follow the member read-only; every control is "
                                "disabled and no action is sent.").tag(sync=True)
    ws_url = Unicode("", help="Server mode: the seat's WebSocket (absolute, or relative to the "
                              "page).").tag(sync=True)
    api_url = Unicode("", help="Server mode: the session's REST address (ratings go to "
                               "<api_url>/rating).").tag(sync=True)
    token = Unicode("", help="Server mode: the Jupyter token; empty to rely on the page's "
                             "login cookie (JupyterLab).").tag(sync=True)
    connection = Unicode("", help="Set by the browser: connecting, open or closed.").tag(
        sync=True)
    last_seq = Int(0, help="The seq of the last notification shown.").tag(sync=True)
    part = Enum(["all", "chat"], default_value="all",
                help="What the panel shows: all of it, or only the agents' status, the "
                     "confirmations and the chat (the chat beside the notebook).").tag(sync=True)
    yjs_module = Unicode("", help="Yjs as the source text of one ES module, for live editing of "
                                  "shared texts; empty: the editor is read-only.").tag(sync=True)
    data_notice = Unicode("", help="That the task reads the small sample of its data that comes "
                                   "with cogym_lab, and how to get the full data; empty: it "
                                   "does not.").tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        # A watcher edits nothing, and a chat-only view shows no shared text: neither is sent Yjs.
        if ("yjs_module" not in kwargs and not kwargs.get("readonly")
                and kwargs.get("part", "all") == "all"):
            kwargs["yjs_module"] = yjs_esm()
        super().__init__(**kwargs)
        self.bridge: LocalBridge | None = None
        #: The session's summary as last known (task, status, end reason, results folder),
        #: for the words shown where the panel cannot be (see :meth:`describe`).
        self.about: dict[str, Any] = {}
        self._read_about: Callable[[], Mapping[str, Any]] | None = None

    def describe(self, summary: Mapping[str, Any]) -> None:
        """Tell the panel what the session is (its summary: ``task``, ``status``,
        ``end_reason``, ``results_dir``), for its output's words; and, when it reads the sample
        of its task's data (``data_notice``), the notice the panel shows."""
        self.about = dict(summary)
        notice = summary.get("data_notice")
        if isinstance(notice, str) and notice != self.data_notice:
            self.data_notice = notice

    def fallback(self) -> Fallback:
        """Which session this is, whether it was running or had ended when the output was
        made, and the code that shows it again or its results."""
        read_about = getattr(self, "_read_about", None)  # None while __init__ runs
        if read_about is not None:
            # The words must come, even from the last summary known.
            with contextlib.suppress(Exception):
                self.describe(read_about())
        about = getattr(self, "about", {})
        task = f" ({about['task']})" if about.get("task") else ""
        seat = (f"watching {self.role}, read-only" if self.readonly
                else f"your seat: {self.role}")
        what = "Cogym chat of session" if self.part == "chat" else "Cogym session"
        words = Fallback(f"{what} {self.session_id}{task}, {seat}")
        status = about.get("status")
        if (status == "running" or not status) and self.mode == "local":
            words.add("It was running inside the notebook's kernel when this output was made; "
                      "it ends with that kernel.")
        elif status == "running" or not status:
            words.add("It was running when this output was made. The panel shows only while the "
                      "notebook's kernel holds it; the session goes on without it.")
        else:
            reason = f": {about['end_reason']}" if about.get("end_reason") else ""
            words.add(f"It had ended ({status}{reason}) when this output was made.")
        again = f'cogym_lab.attach("{self.session_id}")'
        if self.readonly:
            again += f'.watch("{self.role}")'
        words.add("To see it again, run:", again)
        if not self.readonly:  # the magic attaches to a seat
            words.add("or, with %load_ext cogym_lab:", f"%cogym attach {self.session_id}")
        folder = about.get("results_dir")
        if folder:
            when = "Its results" if status not in ("running", None) else (
                "Its results, once it has ended")
            words.add(f"{when}:", f'cogym_lab.view("{folder}")')
            words.add("or in a terminal:", f"cogym-lab replay {folder}")
        return words

    @classmethod
    def for_server(cls, base_url: str, token: str | None, session_id: str,
                   role: str, *, readonly: bool = False, part: str = "all") -> SessionPanel:
        """A panel whose browser side talks to the server extension directly.

        ``base_url`` is the Jupyter server's base URL: absolute (``http://127.0.0.1:8888/``) or
        a path (``/``, ``/user/me/``) resolved against the page, which is what JupyterLab on the
        same server wants. ``token`` may be empty where the page is logged in already.
        ``readonly``: watch member ``role`` (``...&watch=1``; only the session's creator may).
        ``part``: ``"chat"`` for the chat-only view (see the module docstring).
        """
        _check_name("session_id", session_id)
        _check_name("role", role)
        api_url = f"{base_url.rstrip('/')}/cogym/api/sessions/{quote(session_id, safe='')}"
        ws_url = f"{api_url}/ws?role={quote(role, safe='')}" + ("&watch=1" if readonly else "")
        return cls(mode="server", session_id=session_id, role=role, token=token or "",
                   api_url=api_url, ws_url=ws_url, readonly=readonly, part=part)

    @classmethod
    def for_local(cls, host: SessionHost, session_id: str, role: str, *,
                  loop: asyncio.AbstractEventLoop | None = None,
                  readonly: bool = False, part: str = "all") -> SessionPanel:
        """A panel relayed by this kernel for a session that ``host`` runs in-process.

        ``loop`` is the host's event loop; by default the loop running here (the kernel's).
        ``readonly``: watch member ``role`` (any member); it is not counted as a person's panel.
        ``part``: ``"chat"`` for the chat-only view (see the module docstring).
        Raises ``HostingError`` for an unknown session or a role that is not a person seat (not
        a member, read-only).
        """
        if loop is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                raise ValueError("for_local needs the host's event loop: pass loop=... when no "
                                 "loop runs in this thread.") from None
        panel = cls(mode="local", session_id=session_id, role=role, readonly=readonly,
                    part=part)
        panel._read_about = lambda: host.find(session_id).summary()
        try:
            panel.bridge = LocalBridge(host, session_id, role, panel.send, loop,
                                       observer=panel._shown, readonly=readonly)
        except Exception:
            panel.close()
            raise
        panel.on_msg(panel._from_browser)
        if panel.comm is not None:  # the frontend closing the widget's comm ends this panel too
            panel.comm.on_close(panel._comm_closed)
        return panel

    @property
    def latest(self) -> dict[str, Any] | None:
        """Local mode: what the seat was last shown (its whole view and chat) in JSON."""
        return self.bridge.latest if self.bridge else None

    def _from_browser(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if self.bridge is not None:
            self.bridge.handle(content)

    def _shown(self, notification: dict[str, Any]) -> None:
        seq = notification.get("seq")
        if isinstance(seq, int):
            self.last_seq = seq

    def _comm_closed(self, _message: Any) -> None:
        """The frontend closed the comm: stop relaying, so the host no longer counts this panel
        as open (a session no one is at ends after the host's ``unattended_seconds``)."""
        if self.bridge is not None:
            self.bridge.close()

    def close(self) -> None:
        """Close the widget; in local mode the host stops counting it as an open panel."""
        bridge = getattr(self, "bridge", None)
        if bridge is not None:
            bridge.close()
        super().close()


def _check_name(what: str, value: str) -> None:
    if not isinstance(value, str) or not _NAME.match(value):
        raise ValueError(f"{what} must be letters, digits, '_', '.' or '-', got {value!r}.")
