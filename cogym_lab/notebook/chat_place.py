"""Where a seated session handle shows the person's chat when it is displayed.

``"side"``: the chat and the agent's status in JupyterLab's right side area, beside the
notebook, while the workspace stays in the cell's panel (:mod:`cogym_lab.widgets.beside`);
``"cell"``: all of it in the cell's panel. docs/panels.md says why the side is the default. The
kernel's ``COGYM_CHAT`` environment variable (``side`` or ``cell``) changes the default for every
session started or attached there without a place of its own.
"""

from __future__ import annotations

import os

CHAT_PLACES = ("side", "cell")
DEFAULT_CHAT = "side"
#: The environment variable that changes the default place.
CHAT_ENV_VAR = "COGYM_CHAT"


def check_chat_place(chat: str) -> str:
    """``chat`` if it names a place; ``ValueError`` saying the places otherwise."""
    if chat not in CHAT_PLACES:
        raise ValueError(f"chat must be one of {', '.join(CHAT_PLACES)}, not {chat!r}.")
    return chat


def chat_place(chat: str | None = None) -> str:
    """``chat`` checked, or when it is ``None`` the default: ``COGYM_CHAT`` if set, else
    :data:`DEFAULT_CHAT`."""
    if chat is None:
        chat = os.environ.get(CHAT_ENV_VAR, "").strip().lower() or DEFAULT_CHAT
    return check_chat_place(chat)
