"""The chat beside the notebook: a seat's chat-only view in JupyterLab's right side area.

The session panel in a cell scrolls with the notebook, and in a narrow window its chat sits
below the whole workspace. The side area stays put: there a second view of the same seat
(``SessionPanel(part="chat")``: the agents' status, the confirmations and the chat) stays in
sight while the person scrolls and watches what the agent changes in the workspace. While that
view is shown, the cell's panel leaves the chat to it (the browser code looks; nothing is sent
between the two), and takes it back when the side area is closed or collapsed.

The side area is reached through ``sidecar`` (an output area in JupyterLab's shell). Its
model shows itself whenever the page makes it, and a reloaded page makes again every widget the
kernel holds: the chat comes back beside the notebook, caught up by its own connection.
"""

from __future__ import annotations

import contextlib
from typing import Any

__all__ = ["close_beside", "show_beside", "side_area_available"]

#: The side chat shown for each (session, seat) from this kernel, with the chat view in it: a
#: second call for the same seat replaces it, so the side area never holds two of one chat.
_SHOWN: dict[tuple[str, str], tuple[Any, Any]] = {}


def side_area_available() -> bool:
    """Whether this kernel can place a widget in JupyterLab's side area (``sidecar``)."""
    try:
        import sidecar  # noqa: F401
    except ImportError:
        return False
    return True


def show_beside(chat: Any, title: str) -> bool:
    """Show the widget ``chat`` (a chat-only session panel) in JupyterLab's right side area,
    in a tab named ``title``, in place of the one shown for the same session and seat before.
    Returns False, showing nothing, where the side area cannot be reached (no ``sidecar``)."""
    try:
        from sidecar import Sidecar
    except ImportError:
        return False
    key = (chat.session_id, chat.role)
    close_beside(*key)
    side = Sidecar(title=title, anchor="right")
    # Into the output's state, not captured from this cell's output messages: the side area
    # then holds the chat whatever runs it (a cell, a callback) and gets it back on a reload.
    side.append_display_data(chat)
    _SHOWN[key] = (side, chat)
    return True


def close_beside(session_id: str, role: str) -> bool:
    """Close the side chat of ``role`` in ``session_id``, if this kernel shows one; its tab
    goes, and the panel in the cell takes the chat back. Returns whether there was one."""
    shown = _SHOWN.pop((session_id, role), None)
    if shown is None:
        return False
    side, chat = shown
    for widget in (chat, side):
        with contextlib.suppress(Exception):  # closed already (a comm the front end ended)
            widget.close()
    return True
