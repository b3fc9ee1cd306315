"""The panel keeps its own copy of the seat's view and chat from update frames (only what each
event changed): the real ES module in Chromium, fed hand-made frames through a stand-in
anywidget model (local mode) or a stand-in WebSocket (server mode), and a real server's answer
to the sync frame a panel sends when its copy missed an update.

Each step checks the DOM against the test's own model of the seat: the editor's text, the chat
rows in order and without duplicates, and whether the panel waits for a sync.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from tornado.websocket import websocket_connect

from tests.browser.jupyter_lab import BROWSER_LIMITS, JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import StepShots
from tests.support.panel_test_page import page_files

ORIGIN = "http://panel.test"
SESSION = "updates-1"

#: Server mode without a server: a WebSocket that records what the panel sends (window.wsSent)
#: and hands it what the test delivers (window.wsDeliver).
FAKE_SOCKET = """
window.wsSent = [];
window.WebSocket = class {
  static OPEN = 1;
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    window.socket = this;
    setTimeout(() => { this.readyState = 1; if (this.onopen) this.onopen(); }, 0);
  }
  send(text) { window.wsSent.push(JSON.parse(text)); }
  close() { this.readyState = 3; }
};
window.wsDeliver = (message) => window.socket.onmessage({ data: JSON.stringify(message) });
"""

LOCAL = {"mode": "local", "session_id": SESSION, "role": "user", "ws_url": "", "api_url": "",
         "token": "", "connection": "", "last_seq": 0}
SERVER = LOCAL | {"mode": "server", "ws_url": f"/cogym/api/sessions/{SESSION}/ws?role=user",
                  "api_url": f"/cogym/api/sessions/{SESSION}"}

CONTEXT = {
    "session_id": SESSION, "task": "notes", "task_description": "Keep notes together.",
    "role": "user", "kind": "person",
    "team": [{"role": "agent", "kind": "agent"}, {"role": "user", "kind": "person"}],
    "action_specs": [{"name": "EDITOR_UPDATE", "description": "Replace the whole text.",
                      "params": [{"name": "text", "type": "string", "required": True}],
                      "replaces": "editor"}],
    "collaboration_specs": [],
}

HOSTILE_MARKUP = "<img src=x onerror=alert(1)>"
LINE_SEPARATOR = "\u2028"
LONG = "long" + "x" * 6000 + "end"


class Seat:
    """The test's own model of the seat: each component with its version, and the chat. It
    makes the frames the env would send and says what the panel must show."""

    def __init__(self) -> None:
        self.parts: dict[str, tuple[int, dict[str, Any]]] = {}
        self.chat: list[dict[str, Any]] = []
        self.seq = 0

    def frame(self, seq: int, *, prev_seq: int | None, whole: bool = False,
              changed: dict[str, Any] | None = None, said: tuple[str, str] | None = None,
              record: bool = True) -> dict[str, Any]:
        """The update for event ``seq``: ``changed`` components (name -> content) and the
        message ``said`` (sender, text), if any. With ``record`` false the model stays as it
        was (a frame the panel must not apply)."""
        parts = dict(self.parts)
        for name, content in (changed or {}).items():
            render_type = "editor" if name == "editor" else "checklist"
            parts[name] = (seq, {"name": name, "render_type": render_type, "title": name.title(),
                                 "content": content})
        messages = [] if said is None else [
            {"seq": seq, "time": 1000.0 + seq, "sender": said[0], "text": said[1], "to": None}]
        if record:
            self.parts, self.seq = parts, seq
            self.chat = [*self.chat, *messages]
        chat = [*self.chat] if record else [*self.chat, *messages]
        return {
            "session_id": SESSION, "seq": seq, "prev_seq": prev_seq, "recipient": "user",
            "event": {"seq": seq, "time": 1000.0 + seq, "type": "start" if seq == 1 else "action",
                      "actor": "agent", "status": "ok"},
            "whole": whole,
            "components": [c for _, c in parts.values()] if whole
            else [parts[name][1] for name in (changed or {})],
            "versions": {name: version for name, (version, _) in parts.items()},
            "messages": chat if whole else messages,
            "pending_confirmations": [], "step_counts": {"agent": seq}, "step_limits": {},
            "paused": [], "started_at": 1000.0, "time": 1000.0 + seq, "done": False,
            "end_reason": None, "context": CONTEXT if whole else None,
        }

    def whole(self, seq: int) -> dict[str, Any]:
        """A whole update of the seat as it is now (a sync's answer)."""
        return self.frame(seq, prev_seq=self.seq or None, whole=True)

    @property
    def seqs(self) -> list[str]:
        return [str(message["seq"]) for message in self.chat]


def _open(page: Page, state: dict[str, Any], init_script: str = "") -> SessionPanelPage:
    """The panel's module, served to ``page`` from a made-up origin, with ``state`` as its
    widget traits."""
    files = page_files()

    def serve(route: Any) -> None:
        name = route.request.url.split("/cogym-panel-test/")[1].split("?")[0]
        body, kind = files[name]
        route.fulfill(status=200, body=body, content_type=kind)

    page.route(f"{ORIGIN}/cogym-panel-test/**", serve)
    if init_script:
        page.add_init_script(init_script)
    query = urllib.parse.quote(json.dumps(state))
    page.goto(f"{ORIGIN}/cogym-panel-test/index.html?state={query}")
    page.wait_for_function("window.ready === true", timeout=UI_TIMEOUT_MS)
    return SessionPanelPage.find(page, page.locator("#root"))


def _deliver(page: Page, frame: dict[str, Any]) -> None:
    """The kernel relays one update (local mode's custom message)."""
    page.evaluate("(message) => window.deliver(message)", {"type": "notification", "data": frame})


def _rows(panel: SessionPanelPage) -> list[str]:
    return panel.testid("chat-message").evaluate_all("(rows) => rows.map((r) => r.dataset.seq)")


def _shows(panel: SessionPanelPage, seat: Seat, editor: str, sync: str = "ok") -> None:
    """The panel shows the seat as the model has it: the editor's text, every chat row once,
    in order, and whether it waits for a sync."""
    expect(panel.editor("editor")).to_have_value(editor, timeout=UI_TIMEOUT_MS)
    expect(panel.root).to_have_attribute("data-sync", sync, timeout=UI_TIMEOUT_MS)
    rows = _rows(panel)
    assert rows == seat.seqs and len(set(rows)) == len(rows), (rows, seat.seqs)


def _hellos(page: Page) -> int:
    return sum(1 for message in page.evaluate("window.sent") if message.get("type") == "hello")


def test_the_panel_keeps_its_copy_from_update_frames(page: Page, shots: StepShots) -> None:
    panel = _open(page, LOCAL)
    assert page.evaluate("window.sent") == [{"type": "hello"}]  # it asks for the whole state
    expect(panel.root).to_have_attribute("data-sync", "waiting")
    seat = Seat()

    # A whole frame: the whole view and chat.
    _deliver(page, seat.frame(1, prev_seq=None, whole=True, said=("agent", "Hello, user"),
                              changed={"editor": "Draft one", "checklist": [
                                  {"id": 1, "text": "tent", "done": False, "added_by": "agent"}]}))
    _shows(panel, seat, "Draft one")
    expect(panel.testid("checklist-item")).to_have_count(1)

    # A change to one component, and a message: the row already shown is kept, not redrawn.
    page.evaluate("""() => document.querySelectorAll('[data-testid=chat-message]')
        .forEach((row) => { row.dataset.marked = 'kept'; })""")
    _deliver(page, seat.frame(2, prev_seq=1, changed={"editor": "Draft two"},
                              said=("agent", "I rewrote the draft")))
    _shows(panel, seat, "Draft two")
    marks = panel.testid("chat-message").evaluate_all(
        "(rows) => rows.map((r) => r.dataset.marked || '')")
    assert marks == ["kept", ""]
    expect(panel.testid("checklist-item")).to_have_count(1)  # unchanged, kept from the copy

    # Hostile text in the chat stays text: markup, a line separator, a very long string; a
    # message the copy has already is not shown twice.
    hostile = f"Look {HOSTILE_MARKUP} here{LINE_SEPARATOR}next line {LONG}"
    frame = seat.frame(3, prev_seq=2, said=("agent", hostile), changed={"checklist": [
        {"id": 1, "text": "tent", "done": True, "added_by": "agent"},
        {"id": 2, "text": HOSTILE_MARKUP, "done": False, "added_by": "agent"}]})
    frame["messages"] = [seat.chat[1], *frame["messages"]]  # seq 2 again, and seq 3
    _deliver(page, frame)
    _shows(panel, seat, "Draft two")
    expect(panel.testid("checklist-item")).to_have_count(2)
    text = panel.root.locator('[data-testid=chat-message][data-seq="3"] .cogym-message-text')
    shown = text.evaluate("(node) => node.textContent")
    assert HOSTILE_MARKUP in shown and LINE_SEPARATOR in shown and LONG in shown
    assert HOSTILE_MARKUP in panel.testid("checklist-item").nth(1).inner_text()
    assert page.evaluate("""() => ({
        images: document.querySelectorAll('[data-testid=cogym-panel] img').length,
        handlers: document.querySelectorAll('[onerror]').length})""") == {
        "images": 0, "handlers": 0}

    # An old frame again: ignored, no sync asked.
    _deliver(page, seat.frame(2, prev_seq=1, changed={"editor": "Stale"}, record=False))
    _shows(panel, seat, "Draft two")
    assert _hellos(page) == 1

    # A gap (the update of event 4 never came): the panel keeps its last good state and asks
    # for a sync, once, whatever arrives until the whole state does.
    _deliver(page, seat.frame(5, prev_seq=4, changed={"editor": "Draft five"},
                              said=("agent", "lost"), record=False))
    _shows(panel, seat, "Draft two", sync="waiting")
    assert _hellos(page) == 2
    _deliver(page, seat.frame(6, prev_seq=5, said=("agent", "also waiting"), record=False))
    _shows(panel, seat, "Draft two", sync="waiting")
    assert _hellos(page) == 2

    # The sync's answer: the whole state, chat included, replaces the copy.
    seat.frame(5, prev_seq=3, changed={"editor": "Draft five"}, said=("agent", "Five"))
    seat.frame(6, prev_seq=5, said=("agent", "Six"))
    _deliver(page, seat.whole(7))
    _shows(panel, seat, "Draft five")
    assert seat.seqs == ["1", "2", "3", "5", "6"]

    # A change that expects a component at another version than the copy holds: a sync again.
    bad = seat.frame(8, prev_seq=7, changed={"editor": "Draft eight"}, record=False)
    bad["versions"]["checklist"] = 99
    _deliver(page, bad)
    _shows(panel, seat, "Draft five", sync="waiting")
    assert _hellos(page) == 3
    _deliver(page, seat.whole(8))
    _shows(panel, seat, "Draft five")

    # The person types: Shift+Enter is a new line, Escape leaves the box (its text kept),
    # Enter sends; the message waits in the outbox until an update brings it back, once.
    chat = panel.testid("chat-input")
    chat.click()
    page.keyboard.type("Bring snacks")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("and water")
    expect(chat).to_have_value("Bring snacks\nand water")
    page.keyboard.press("Escape")
    assert not chat.evaluate("(field) => field === document.activeElement")
    expect(chat).to_have_value("Bring snacks\nand water")
    chat.click()
    page.keyboard.press("Enter")
    expect(chat).to_have_value("")
    sent = page.evaluate("window.sent")[-1]
    assert sent["action"] == {"name": "SEND_TEAMMATE_MESSAGE",
                              "args": {"message": "Bring snacks\nand water"}}
    expect(panel.testid("chat-pending")).to_have_count(1)
    _deliver(page, seat.frame(9, prev_seq=8, said=("user", "Bring snacks\nand water")))
    _shows(panel, seat, "Draft five")
    expect(panel.testid("chat-pending")).to_have_count(0)
    expect(panel.root.locator('[data-testid=chat-message][data-mine="true"]')).to_have_count(1)
    _deliver(page, seat.frame(10, prev_seq=9, changed={"editor": "Draft ten"},
                              said=("agent", "Snacks and water are on the list.")))
    _shows(panel, seat, "Draft ten")
    assert _hellos(page) == 3
    shots.take("after-updates", focus=panel.root, where="start")

    # A reload: a new panel with an empty copy asks for the whole state; a change before it
    # is not shown; then the whole state, and changes on top of it.
    page.reload()
    page.wait_for_function("window.ready === true", timeout=UI_TIMEOUT_MS)
    panel = SessionPanelPage.find(page, page.locator("#root"))
    assert page.evaluate("window.sent") == [{"type": "hello"}]
    _deliver(page, seat.frame(11, prev_seq=10, said=("agent", "Before the sync"),
                              record=False))
    expect(panel.testid("chat-message")).to_have_count(0)
    expect(panel.root).to_have_attribute("data-sync", "waiting")
    assert page.evaluate("window.sent") == [{"type": "hello"}]  # asked already: not again
    _deliver(page, seat.whole(11))
    _shows(panel, seat, "Draft ten")
    _deliver(page, seat.frame(12, prev_seq=11, said=("agent", "Welcome back")))
    _shows(panel, seat, "Draft ten")
    assert page.evaluate("window.sent") == [{"type": "hello"}]


@pytest.mark.parametrize("readonly", [False, True], ids=["seat", "watcher"])
def test_a_server_mode_panel_asks_its_socket_for_a_sync(page: Page, readonly: bool) -> None:
    """In server mode the panel sends {"type": "sync"} on its WebSocket, once per gap; a
    watcher's panel asks too (the server answers it with the member's state)."""
    panel = _open(page, SERVER | {"readonly": readonly}, FAKE_SOCKET)
    seat = Seat()
    deliver = "(message) => window.wsDeliver(message)"
    page.evaluate(deliver, seat.frame(1, prev_seq=None, whole=True,
                                      changed={"editor": "One"}, said=("agent", "Hi")))
    _shows(panel, seat, "One")
    page.evaluate(deliver, seat.frame(2, prev_seq=1, changed={"editor": "Two"}))
    _shows(panel, seat, "Two")
    for seq in (4, 5):  # a gap, then more while the panel waits
        page.evaluate(deliver, seat.frame(seq, prev_seq=seq - 1, changed={"editor": "Lost"},
                                          record=False))
    _shows(panel, seat, "Two", sync="waiting")
    assert page.evaluate("window.wsSent") == [{"type": "sync"}]
    seat.frame(5, prev_seq=2, changed={"editor": "Five"})
    page.evaluate(deliver, seat.whole(5))
    _shows(panel, seat, "Five")
    page.evaluate(deliver, seat.frame(6, prev_seq=5, said=("agent", "On we go")))
    _shows(panel, seat, "Five")
    assert page.evaluate("window.wsSent") == [{"type": "sync"}]


# -- the server's answer to a sync frame --------------------------------------------------------

async def _next_sync_answer(ws: Any, limit: float = 60.0) -> dict[str, Any]:
    """Read the socket until a whole update of a sync arrives (live changes and the agents'
    statuses pass by); an error frame fails the test."""
    async with asyncio.timeout(limit):
        while True:
            text = await ws.read_message()
            assert text is not None, "the socket closed"
            message = json.loads(text)
            assert message.get("type") != "error", message
            if message.get("whole") is True and message["event"]["type"] == "sync":
                return message


async def _first_error(ws: Any, limit: float = 60.0) -> dict[str, Any]:
    async with asyncio.timeout(limit):
        while True:
            text = await ws.read_message()
            assert text is not None, "the socket closed"
            message = json.loads(text)
            if message.get("type") == "error":
                return message


async def _sync_answers(lab: JupyterLabServer, session_id: str) -> dict[str, Any]:
    base = lab.base_url.replace("http://", "ws://") + f"/cogym/api/sessions/{session_id}/ws"
    answers: dict[str, Any] = {}
    for who, query in (("seat", "role=user"), ("watcher", "role=user&watch=1")):
        ws = await websocket_connect(f"{base}?{query}&token={lab.token}")
        try:
            answers[f"{who} on opening"] = await _next_sync_answer(ws)
            await ws.write_message(json.dumps({"type": "sync"}))
            answers[who] = await _next_sync_answer(ws)
            if who == "watcher":  # sync frames count against the connection's rate too
                for _ in range(2 * BROWSER_LIMITS["ws_action_burst"]):
                    await ws.write_message(json.dumps({"type": "sync"}))
                answers["too many"] = await _first_error(ws)
        finally:
            ws.close()
    return answers


def test_a_sync_frame_brings_a_seat_and_a_watcher_the_whole_state(
        jupyter_lab: JupyterLabServer) -> None:
    status, created = jupyter_lab.request("POST", "cogym/api/sessions", {
        "task": "todo", "team": "example", "people": ["user"], "idle_seconds": 60})
    assert status == 201, created
    # Its own thread and loop: the browser tests' Playwright keeps a loop of its own.
    with ThreadPoolExecutor(1) as pool:
        answers = pool.submit(asyncio.run,
                              _sync_answers(jupyter_lab, created["session_id"])).result()
    for who in ("seat", "watcher"):
        answer = answers[who]
        assert answer["recipient"] == "user" and answer["event"]["type"] == "sync", answer
        assert answer["context"]["role"] == "user"
        assert [c["name"] for c in answer["components"]] == list(answer["versions"])
        assert not {"view", "chat", "new_messages"} & set(answer)
        assert answer["seq"] >= answers[f"{who} on opening"]["seq"]
    assert answers["too many"]["code"] == "rate_limited", answers["too many"]
