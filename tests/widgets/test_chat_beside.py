"""The chat beside the notebook, on the kernel's side: the chat-only panel, the place a handle
shows its chat in, and the side area (a real ``sidecar`` widget over recorded comms). The browser
side is tests/browser/test_panel_chat_beside.py."""

from __future__ import annotations

import pytest

from cogym_lab.notebook.chat_place import CHAT_ENV_VAR, DEFAULT_CHAT, chat_place
from cogym_lab.widgets import SessionPanel
from cogym_lab.widgets.beside import close_beside, show_beside, side_area_available
from cogym_lab.widgets.fallback import WIDGET_VIEW_MIME


def test_a_chat_only_panel_follows_the_same_seat_without_yjs() -> None:
    whole = SessionPanel.for_server("/base/", "", "s1", "user")
    chat = SessionPanel.for_server("/base/", "", "s1", "user", part="chat")
    try:
        assert (whole.part, chat.part) == ("all", "chat")
        assert chat.ws_url == whole.ws_url  # the same seat of the same session
        assert whole.yjs_module and not chat.yjs_module  # it shows no shared text
        assert chat.get_state()["part"] == "chat"
        assert chat.fallback().title == "Cogym chat of session s1, your seat: user"
    finally:
        whole.close()
        chat.close()


def test_the_chat_place_defaults_to_the_side_unless_the_kernel_says(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CHAT_ENV_VAR, raising=False)
    assert DEFAULT_CHAT == "side" and chat_place() == "side"
    assert chat_place("cell") == "cell"
    monkeypatch.setenv(CHAT_ENV_VAR, "Cell")
    assert chat_place() == "cell" and chat_place("side") == "side"
    with pytest.raises(ValueError, match="side, cell"):
        chat_place("window")


def test_the_side_area_holds_one_chat_per_seat(comms) -> None:
    assert side_area_available()
    first = SessionPanel.for_server("/base/", "", "s1", "user", part="chat")
    again = SessionPanel.for_server("/base/", "", "s1", "user", part="chat")
    assert show_beside(first, title="Chat · todo")
    sides = [c for c in comms if c.sent and c.sent[0][1].get("state", {}).get("_model_name")
             == "SidecarModel"]
    assert len(sides) == 1
    side_state = sides[0].sent[0][1]["state"]
    assert (side_state["anchor"], side_state["title"]) == ("right", "Chat · todo")

    assert show_beside(again, title="Chat · todo")  # replaces the first, never a second tab
    assert first.comm is None  # closed with its side area
    assert close_beside("s1", "user") and again.comm is None
    assert not close_beside("s1", "user")


def test_the_side_area_shows_the_chat_view_in_its_output(comms) -> None:
    chat = SessionPanel.for_server("/base/", "", "s2", "user", part="chat")
    assert show_beside(chat, title="Chat · todo")
    try:
        side = next(c for c in comms if c.sent and c.sent[0][1].get("state", {}).get(
            "_model_name") == "SidecarModel")
        updates = [data for kind, data in side.sent if kind == "comm_msg"
                   and data.get("method") == "update" and "outputs" in data.get("state", {})]
        outputs = updates[-1]["state"]["outputs"]
        assert outputs[0]["data"][WIDGET_VIEW_MIME]["model_id"] == chat.model_id
    finally:
        close_beside("s2", "user")


def test_the_magics_take_the_chat_place() -> None:
    from cogym_lab.magics import UsageError, build_parser

    parser = build_parser()
    assert parser.parse_args(["new", "todo", "--chat", "cell"]).chat == "cell"
    assert parser.parse_args(["new", "todo"]).chat is None  # the kernel's default, see above
    assert parser.parse_args(["attach", "s1", "--chat", "side"]).chat == "side"
    with pytest.raises(UsageError):
        parser.parse_args(["new", "todo", "--chat", "window"])
