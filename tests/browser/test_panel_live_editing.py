"""Live co-editing of a shared text in the panel: the real ES module and the real Yjs module in
Chromium, against a real ``Coordinator`` (the session's state machine, with its ``pycrdt``
documents) run by the test in place of the server.

What the panel sends (its live edits, its syncs) is handed to the coordinator as the server
would hand it; what the coordinator sends the person's seat is delivered to the panel, through
the comm (local mode) or a stand-in WebSocket (server mode). The test decides when each side's
messages travel, so it can make edits cross on the wire: the person types while an agent's edit
is on its way, an edit is refused for the rate or lost, the connection drops while the person
types. Each step checks the panel (its text, its caret, its state line, its notices) and the
session's own text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from playwright.sync_api import Page, expect

from cogym_lab.core.coordinator import Coordinator, Transition
from cogym_lab.core.messages import TeamMember, Update
from tests.browser.lab_page import UI_TIMEOUT_MS
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import StepShots
from tests.browser.test_panel_updates import _open
from tests.support.notes_env import NotesEnv

SESSION = "live-1"
TEAM = [TeamMember(role="agent", kind="agent"), TeamMember(role="user", kind="person")]
LOCAL = {"mode": "local", "session_id": SESSION, "role": "user", "ws_url": "", "api_url": "",
         "token": "", "connection": "", "last_seq": 0}
SERVER = LOCAL | {"mode": "server", "ws_url": f"/cogym/api/sessions/{SESSION}/ws?role=user",
                  "api_url": f"/cogym/api/sessions/{SESSION}"}
INITIAL = "Title\nFirst point.\nSecond point.\nThird point.\n"

#: Server mode without a server: a WebSocket whose frames the test reads (window.wsSent) and
#: writes (window.wsDeliver). `window.dropSocket()` closes it as a lost connection does; the
#: panel's next socket opens only when the test calls `window.openSocket()`.
SOCKET = """
window.wsSent = [];
window.sockets = 0;
window.holdSockets = false;
window.WebSocket = class {
  static OPEN = 1;
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    window.socket = this;
    window.sockets += 1;
    if (!window.holdSockets) setTimeout(() => window.openSocket(), 0);
  }
  send(text) {
    if (this.readyState !== 1) throw new Error("not open");
    window.wsSent.push(JSON.parse(text));
  }
  close() { this.readyState = 3; }
};
window.openSocket = () => {
  window.socket.readyState = 1;
  if (window.socket.onopen) window.socket.onopen();
};
window.dropSocket = () => {
  window.holdSockets = true;
  window.socket.readyState = 3;
  if (window.socket.onclose) window.socket.onclose();
};
window.wsDeliver = (message) => window.socket.onmessage({ data: JSON.stringify(message) });
"""


class LiveSession:
    """A coordinator on the test's side of the page, in place of the server: ``pump()`` hands
    it what the panel sent since the last pump and delivers to the panel what it answers."""

    def __init__(self, page: Page, *, server: bool = False) -> None:
        self.page = page
        self.server = server
        self.coordinator = Coordinator(NotesEnv(), TEAM, session_id=SESSION)
        self.clock = 1000.0
        self.read = 0
        self.seat_updates: list[dict[str, Any]] = []
        self.deliver(self.coordinator.start(self.now()))

    @property
    def text(self) -> str:
        """The session's text (the task's own)."""
        return self.coordinator.env.text  # type: ignore[attr-defined]

    def now(self) -> float:
        self.clock += 1.0
        return self.clock

    def sent(self) -> list[dict[str, Any]]:
        return self.page.evaluate("window.wsSent" if self.server else "window.sent")

    def edits(self) -> list[dict[str, Any]]:
        """Every live edit the panel has sent so far."""
        return [frame for frame in self.sent() if _is_edit(frame)]

    def take(self) -> list[dict[str, Any]]:
        """What the panel sent since the last take (it travels no further)."""
        frames = self.sent()[self.read:]
        self.read += len(frames)
        return frames

    def pump(self, frames: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """Hand the coordinator what the panel sent, and the panel its answers."""
        frames = self.take() if frames is None else frames
        for frame in frames:
            if frame.get("type") in ("hello", "sync"):
                self.deliver_update(self.coordinator.sync("user", self.now()))
            elif "action" in frame:
                self.deliver(self.coordinator.handle(
                    "user", frame["action"], self.now(), request_id=str(frame.get("id")),
                    base=frame.get("base"), seen_seq=frame.get("seen_seq")))
        return frames

    def text_seq(self) -> int:
        """The seq of the last update delivered that carried the editor's text (a batch typed
        now is made on it)."""
        return max(update["seq"] for update in self.seat_updates
                   if "editor" in (update.get("texts") or {}))

    def wait_for_edits(self, count: int) -> None:
        """Until the panel has sent ``count`` live edits in all."""
        source = "window.wsSent" if self.server else "window.sent"
        self.page.wait_for_function(
            f"(count) => {source}.filter((f) => f.action && f.action.name === 'EDIT_TEXT')"
            ".length >= count", arg=count, timeout=UI_TIMEOUT_MS)

    def settle(self) -> None:
        """Let the panel's typing leave and be answered until nothing more is on its way."""
        for _ in range(20):
            self.page.wait_for_timeout(400)  # past the panel's pause before it sends
            if not self.pump():
                return
        raise AssertionError("the panel kept sending")

    def announce(self) -> int:
        """The typing paused: the agent is told (as the EnvNode does); the seq it saw."""
        self.deliver(self.coordinator.announce_edits(self.now()))
        return self.coordinator.seq

    def agent_writes(self, text: str, seen_seq: int) -> Transition:
        transition = self.coordinator.handle("agent", {"name": "WRITE", "args": {"text": text}},
                                             self.now(), seen_seq=seen_seq)
        self.deliver(transition)
        return transition

    def deliver(self, transition: Transition) -> None:
        for update in transition.updates:
            if update.recipient == "user":
                self.deliver_update(update)

    def deliver_update(self, update: Update | None) -> None:
        assert update is not None
        self.deliver_raw(update.model_dump(mode="json"))

    def deliver_raw(self, message: dict[str, Any]) -> None:
        if message.get("type") != "error":
            self.seat_updates.append(message)
        if self.server:
            self.page.evaluate("(message) => window.wsDeliver(message)", message)
        elif message.get("type") == "error":
            self.page.evaluate("(message) => window.deliver(message)", message)
        else:
            self.page.evaluate("(message) => window.deliver(message)",
                               {"type": "notification", "data": message})


def _is_edit(frame: dict[str, Any]) -> bool:
    action = frame.get("action")
    return isinstance(action, dict) and action.get("name") == "EDIT_TEXT"


def _caret(editor: Any) -> list[int]:
    return editor.evaluate("(field) => [field.selectionStart, field.selectionEnd]")


def _focused(editor: Any) -> bool:
    return editor.evaluate("(field) => field === document.activeElement")


def _line_end(text: str, line: str) -> int:
    """The offset right after ``line`` (a whole line of ``text``)."""
    return text.index(line + "\n") + len(line)


def _put_caret(editor: Any, offset: int) -> None:
    editor.evaluate("(field, at) => { field.focus(); field.setSelectionRange(at, at); }", offset)


def _open_new_socket(page: Page) -> None:
    """The panel's next socket (after a drop), once it made one, connects."""
    page.wait_for_function("window.socket.readyState === 0", timeout=UI_TIMEOUT_MS)
    page.evaluate("window.openSocket()")
    expect(page.locator('[data-testid="connection-status"]')).to_have_attribute("data-state",
                                                                              "open")


def _open_live(page: Page, state: dict[str, Any], *, server: bool = False
               ) -> tuple[SessionPanelPage, LiveSession]:
    panel = _open(page, state, SOCKET if server else "")
    session = LiveSession(page, server=server)
    session.pump()  # the panel's hello (local) or the server's whole state on opening
    if server:
        session.deliver_update(session.coordinator.sync("user", session.now()))
    return panel, session


def test_typing_is_live_and_the_agents_edits_keep_the_caret(page: Page, shots: StepShots) -> None:
    panel, session = _open_live(page, LOCAL)
    editor = panel.editor("editor")
    state = panel.editor_state("editor")
    session.agent_writes(INITIAL, seen_seq=1)
    expect(editor).to_have_value(INITIAL, timeout=UI_TIMEOUT_MS)
    expect(editor).to_be_editable()
    expect(state).to_have_attribute("data-state", "synced")
    expect(panel.testid("editor-save")).to_have_count(0)  # nothing to save: it is live

    # The person types at the end of a line: the typing leaves a moment later, on its own.
    _put_caret(editor, _line_end(INITIAL, "Second point."))
    page.keyboard.type(" Mine.")
    expect(state).to_have_attribute("data-state", "syncing")
    session.wait_for_edits(1)
    [edit] = session.edits()
    assert edit["action"]["args"]["component"] == "editor"
    assert edit["seen_seq"] == session.text_seq()  # made on the agent's text
    session.pump()
    typed = INITIAL.replace("Second point.", "Second point. Mine.")
    assert session.text == typed
    expect(state).to_have_attribute("data-state", "synced", timeout=UI_TIMEOUT_MS)
    seen = session.announce()  # the typing paused: the agent is told, and sees `typed`
    shots.take("typing-reached-the-session", focus=panel.root, where="start")

    # The agent edits the first line while the person goes on typing on the third: the typing
    # that crossed the agent's edit leaves first, made on the text before it; the caret stays
    # right after what the person typed, in the text that now has both.
    page.keyboard.type(" More.")
    before_agent = session.text_seq()
    session.agent_writes(typed.replace("Title", "Title, by the agent"), seen_seq=seen)
    both = typed.replace("Title", "Title, by the agent").replace("Mine.", "Mine. More.")
    expect(editor).to_have_value(both, timeout=UI_TIMEOUT_MS)
    end_of_typing = _line_end(both, "Second point. Mine. More.")
    assert _caret(editor) == [end_of_typing, end_of_typing]
    assert _focused(editor)
    crossed = session.edits()[1:]  # (one batch, unless the machine typed slower than a pause)
    assert crossed and all(edit["seen_seq"] == before_agent for edit in crossed)
    session.settle()
    assert session.text == both
    expect(editor).to_have_value(both)
    expect(state).to_have_attribute("data-state", "synced", timeout=UI_TIMEOUT_MS)
    assert _caret(editor) == [end_of_typing, end_of_typing]
    shots.take("both-edits-kept-caret-in-place", focus=panel.root, where="start")

    # A selection survives an edit above it, and a change inside the preview shows too.
    start = both.index("Third")
    editor.evaluate("(field, at) => field.setSelectionRange(at, at + 5)", start)
    seen = session.announce()
    with_line = both.replace("Title, by the agent\n", "Title, by the agent\nA new line.\n")
    session.agent_writes(with_line, seen_seq=seen)
    expect(editor).to_have_value(with_line, timeout=UI_TIMEOUT_MS)
    moved = with_line.index("Third")
    assert _caret(editor) == [moved, moved + 5]
    panel.testid("editor-preview-toggle").click()
    expect(panel.testid("editor-preview")).to_contain_text("A new line.")
    panel.testid("editor-preview-toggle").click()

    # Keys: Enter and Shift+Enter are new lines in the editor, Ctrl+S sends at once, Escape
    # leaves the editor with its text kept (and sends what was typed).
    session.settle()
    _put_caret(editor, len(with_line))
    page.keyboard.type("Line A")
    page.keyboard.press("Enter")
    page.keyboard.type("Line B")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("Line C")
    page.keyboard.press("Control+s")
    session.pump()  # at once: not after the pause
    assert session.text == with_line + "Line A\nLine B\nLine C"
    page.keyboard.type(" end")
    page.keyboard.press("Escape")
    assert not _focused(editor)
    session.pump()  # leaving the editor sent the rest
    typed_keys = with_line + "Line A\nLine B\nLine C end"
    assert session.text == typed_keys
    expect(editor).to_have_value(typed_keys)
    session.settle()
    assert session.text == typed_keys
    expect(state).to_have_attribute("data-state", "synced", timeout=UI_TIMEOUT_MS)


def test_an_overlap_is_told_in_plain_words_and_never_takes_the_focus(
        page: Page, shots: StepShots) -> None:
    panel, session = _open_live(page, LOCAL)
    editor = panel.editor("editor")
    session.agent_writes(INITIAL, seen_seq=1)
    expect(editor).to_have_value(INITIAL, timeout=UI_TIMEOUT_MS)
    seen = session.announce()

    # Both rewrite the line "Third point." at once: the agent's edit is applied first, the
    # person's typing (made on the text before it) is merged after it: the two versions of the
    # line are both kept, one after the other, and the person is told where.
    start = INITIAL.index("point.", INITIAL.index("Third"))
    editor.evaluate("(field, at) => { field.focus(); field.setSelectionRange(at, at + 6); }",
                    start)
    page.keyboard.type("item, for the person.")
    session.agent_writes(INITIAL.replace("Third point.", "Point three, by the agent."),
                         seen_seq=seen)
    session.wait_for_edits(1)
    session.settle()
    text = session.text
    assert "Point three, by the agent.\n" in text
    assert "Third item, for the person.\n" in text
    expect(editor).to_have_value(text, timeout=UI_TIMEOUT_MS)
    notice = panel.testid("editor-overlap")
    expect(notice).to_be_visible(timeout=UI_TIMEOUT_MS)
    lines = [number for number, line in enumerate(text.split("\n"), start=1)
             if "three" in line or "Third" in line]
    expect(notice).to_contain_text(re.compile(
        r"^Your edit and the agent's changed the same lines; both versions are kept, one after "
        rf"the other — check lines? {lines[0]}(–{lines[-1]})?\."))
    assert _focused(editor)  # the notice took nothing from the typing
    expect(panel.editor_state("editor")).to_have_attribute("data-state", "synced")
    shots.take("overlap-notice", focus=panel.root, where="start")
    panel.testid("editor-overlap-dismiss").click()
    expect(notice).to_be_hidden()


def test_refused_and_lost_edits_are_sent_again(page: Page) -> None:
    """Server mode: a live edit refused for the rate goes again a moment later; one lost on the
    way makes the next one build on text the session lacks, which asks for a sync, and the
    whole state that answers it makes the panel send what the session lacks. Nothing typed is
    lost, and the person is not bothered."""
    panel, session = _open_live(page, SERVER, server=True)
    editor = panel.editor("editor")
    session.agent_writes(INITIAL, seen_seq=1)
    expect(editor).to_have_value(INITIAL, timeout=UI_TIMEOUT_MS)

    # Refused for the rate: the same edit goes again.
    _put_caret(editor, len(INITIAL))
    page.keyboard.type("one")
    session.wait_for_edits(1)
    [refused] = session.take()
    session.deliver_raw({"type": "error", "code": "rate_limited", "id": refused["id"],
                         "error": "Too many actions at once: this one was not applied."})
    session.wait_for_edits(2)
    again = session.edits()[-1]
    assert again["action"] == refused["action"] and again["seen_seq"] == refused["seen_seq"]
    assert again["id"] != refused["id"]
    session.settle()
    assert session.text == INITIAL + "one"

    # Lost: the next edit builds on it, which the session cannot place: the panel finds the
    # session's text apart from its own, and a sync puts it right.
    page.keyboard.type(" two")
    session.wait_for_edits(3)
    session.take()  # lost on the way
    page.keyboard.type(" three")
    session.wait_for_edits(4)
    session.pump()  # it builds on text the session does not have
    page.wait_for_function("window.wsSent.some((frame) => frame.type === 'sync')",
                           timeout=UI_TIMEOUT_MS)
    session.settle()
    assert session.text == INITIAL + "one two three"
    expect(editor).to_have_value(INITIAL + "one two three")
    expect(panel.editor_state("editor")).to_have_attribute("data-state", "synced",
                                                           timeout=UI_TIMEOUT_MS)
    expect(panel.testid("panel-error")).to_be_hidden()


def test_typing_while_offline_is_kept_and_sent_once_back(page: Page, shots: StepShots) -> None:
    panel, session = _open_live(page, SERVER, server=True)
    editor = panel.editor("editor")
    state = panel.editor_state("editor")
    session.agent_writes(INITIAL, seen_seq=1)
    expect(editor).to_have_value(INITIAL, timeout=UI_TIMEOUT_MS)

    before_drop = session.text_seq()
    page.evaluate("window.dropSocket()")  # the panel tries again in a moment
    expect(panel.testid("connection-status")).to_have_attribute("data-state", "closed")
    _put_caret(editor, len(INITIAL))
    page.keyboard.type("Typed while offline.")
    page.wait_for_timeout(1500)  # well past the pause: nothing can leave
    expect(state).to_have_attribute("data-state", "offline")
    expect(state).to_contain_text("kept")
    assert session.edits() == []
    shots.take("offline-typing-kept", focus=panel.root, where="start")
    # Meanwhile the agent changed the text.
    seen = session.coordinator.seq
    agent_text = INITIAL.replace("Title", "Title, by the agent")
    session.coordinator.handle("agent", {"name": "WRITE", "args": {"text": agent_text}},
                               session.now(), seen_seq=seen)

    # Back: the typing leaves, made on the text before the drop, so the session merges it
    # with the agent's edit as it merges any edit that crossed another; the whole state the
    # server sends on opening asks nothing more of the panel.
    _open_new_socket(page)
    session.wait_for_edits(1)
    session.deliver_update(session.coordinator.sync("user", session.now()))
    session.settle()
    [resent] = session.edits()
    assert resent["seen_seq"] == before_drop
    assert session.text == agent_text + "Typed while offline."
    expect(editor).to_have_value(session.text, timeout=UI_TIMEOUT_MS)
    expect(state).to_have_attribute("data-state", "synced", timeout=UI_TIMEOUT_MS)

    # An edit on its way when the connection drops is lost with it: the whole state sent on
    # opening again lacks it, and the panel sends it, made on that state.
    page.keyboard.type(" And more.")
    session.wait_for_edits(2)
    session.take()  # lost with the connection
    page.evaluate("window.dropSocket()")
    _open_new_socket(page)
    session.deliver_update(session.coordinator.sync("user", session.now()))
    session.wait_for_edits(3)
    assert session.edits()[-1]["seen_seq"] == session.text_seq()  # the whole state's
    session.settle()
    assert session.text == agent_text + "Typed while offline. And more."
    expect(editor).to_have_value(session.text)
    expect(state).to_have_attribute("data-state", "synced", timeout=UI_TIMEOUT_MS)


def test_text_composed_with_an_input_method_is_kept_when_an_edit_comes(page: Page) -> None:
    panel, session = _open_live(page, LOCAL)
    editor = panel.editor("editor")
    session.agent_writes(INITIAL, seen_seq=1)
    expect(editor).to_have_value(INITIAL, timeout=UI_TIMEOUT_MS)
    seen = session.announce()
    _put_caret(editor, _line_end(INITIAL, "Third point."))
    cdp = page.context.new_cdp_session(page)
    cdp.send("Input.imeSetComposition", {"text": "ni", "selectionStart": 2, "selectionEnd": 2})
    session.agent_writes(INITIAL.replace("Title", "Title, by the agent"), seen_seq=seen)
    expect(editor).to_have_value(INITIAL.replace("Third point.", "Third point.ni"))  # as it was
    cdp.send("Input.insertText", {"text": "你"})
    both = INITIAL.replace("Title", "Title, by the agent").replace("Third point.",
                                                                   "Third point.你")
    expect(editor).to_have_value(both, timeout=UI_TIMEOUT_MS)
    end = _line_end(both, "Third point.你")
    assert _caret(editor) == [end, end]
    session.settle()
    assert session.text == both


def test_without_a_live_text_the_editor_is_read_only_and_sends_nothing(page: Page) -> None:
    # A watcher: the text as the member sees it, read-only.
    panel, session = _open_live(page, LOCAL | {"readonly": True})
    editor = panel.editor("editor")
    session.agent_writes(INITIAL, seen_seq=1)
    expect(editor).to_have_value(INITIAL, timeout=UI_TIMEOUT_MS)
    expect(editor).not_to_be_editable()
    editor.click(force=True)
    page.keyboard.type("nothing")
    page.keyboard.press("Control+s")
    assert session.edits() == [] and editor.input_value() == INITIAL

    # No Yjs: the text shows, read-only, and says so.
    panel, session = _open_live(page, LOCAL | {"yjs_module": ""})
    editor = panel.editor("editor")
    session.agent_writes(INITIAL, seen_seq=1)
    expect(editor).to_have_value(INITIAL, timeout=UI_TIMEOUT_MS)
    expect(editor).not_to_be_editable()
    expect(panel.editor_state("editor")).to_have_attribute("data-state", "readonly")

    # The session ended: read-only, nothing sent.
    panel, session = _open_live(page, LOCAL)
    editor = panel.editor("editor")
    session.agent_writes(INITIAL, seen_seq=1)
    expect(editor).to_be_editable(timeout=UI_TIMEOUT_MS)
    session.deliver(session.coordinator.end(session.now(), "finished"))
    expect(editor).not_to_be_editable(timeout=UI_TIMEOUT_MS)
    expect(panel.editor_state("editor")).to_have_attribute("data-state", "ended")
    editor.click(force=True)
    page.keyboard.type("late")
    page.wait_for_timeout(600)
    assert session.edits() == [] and editor.input_value() == INITIAL


def test_the_state_line_and_the_edit_frame_are_plain(page: Page) -> None:
    """What a live edit frame holds, exactly: the replica's own operations and its client."""
    panel, session = _open_live(page, LOCAL)
    editor = panel.editor("editor")
    session.agent_writes(INITIAL, seen_seq=1)
    expect(editor).to_have_value(INITIAL, timeout=UI_TIMEOUT_MS)
    _put_caret(editor, 0)
    page.keyboard.type("> ")
    session.wait_for_edits(1)
    [frame] = session.edits()
    assert set(frame) == {"type", "action", "seen_seq", "id"}
    args = frame["action"]["args"]
    assert set(args) == {"component", "update", "client"}
    assert isinstance(args["client"], int) and 0 <= args["client"] < 2 ** 32
    json.dumps(frame)  # plain JSON
    expect(panel.editor_state("editor")).to_contain_text("Saving")
    session.pump()
    expect(panel.editor_state("editor")).to_have_text("Saved: everyone sees this text",
                                                      timeout=UI_TIMEOUT_MS)
