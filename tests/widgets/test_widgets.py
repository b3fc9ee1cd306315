"""The session panel (``cogym_lab.widgets.SessionPanel``).

* its browser code ships in the package and loads as text, also from a real wheel;
* server mode: the URLs it hands the browser reach a real Jupyter server's session WebSocket
  (notifications and agent statuses) and rating endpoint;
* local mode: a session hosted in-process is relayed through ipywidgets' real comm code, both
  ways (custom messages), up to the rating at the end;
* the ES module itself, in headless Chromium: every view by render type, safe rendering of
  hostile text, live editing (the editor's Yjs operations), chat in flight, status,
  confirmations, the rating form, and the server transport against a real Jupyter server.

pytest-jupyter's fixtures are imported rather than registered as a plugin (see
tests/server/test_jupyter_server.py).
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import zipfile
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import async_playwright
from pycrdt import Doc, Text
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks
from tornado.httpclient import AsyncHTTPClient
from tornado.websocket import websocket_connect

from cogym_lab.core import CoEnv, Component, RenderType, action
from cogym_lab.core.actions import Action, ItemPick, format_action
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import TeamMember
from cogym_lab.runtime.hosting import HostingError, SessionHost
from cogym_lab.widgets import CSS_PATH, ESM_PATH, SessionPanel, panel_css, panel_esm, yjs_esm
from tests.support.panel_test_page import page_files
from tests.support.paths import REPO_ROOT

REPO = REPO_ROOT
# Debian's Chromium, found on PATH (scripts/test.sh installs it); Playwright downloads nothing.
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
XSS = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'


# -- the shipped browser code ------------------------------------------------------------------

def test_the_esm_and_css_are_package_files_that_load_as_text() -> None:
    assert ESM_PATH.parent.name == "static" and ESM_PATH.parent.parent.name == "widgets"
    assert CSS_PATH.parent == ESM_PATH.parent
    esm, css = panel_esm(), panel_css()
    assert esm == (REPO / "js" / "session_panel.js").read_text(encoding="utf-8")
    assert css == (REPO / "js" / "session_panel.css").read_text(encoding="utf-8")
    assert "export default { render }" in esm
    assert not re.search(r"^\s*import\s", esm, re.M), "the panel must not import anything"
    assert "cdn" not in esm.lower() and "innerHTML = renderMarkdown" in esm
    assert ".cogym-panel" in css
    panel = SessionPanel.for_server("/", "", "s1", "user")
    assert panel._esm == esm and panel._css == css  # what anywidget sends to the browser


def test_a_real_wheel_ships_the_panel_code(tmp_path: Path) -> None:
    source = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for name in ("cogym_lab", "js", "jupyter-config"):
        shutil.copytree(REPO / name, source / name, symlinks=True, ignore=ignore)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps",
                            "-w", str(tmp_path / "dist"), "-q"],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("cogym_lab-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        shipped_js = archive.read("cogym_lab/widgets/static/session_panel.js").decode()
        shipped_css = archive.read("cogym_lab/widgets/static/session_panel.css").decode()
        shipped_yjs = archive.read("cogym_lab/widgets/static/vendor/yjs.mjs").decode()
    assert shipped_js == panel_esm() and shipped_css == panel_css()
    assert shipped_yjs == yjs_esm() and "The MIT License" in shipped_yjs.split("*/")[0]


# -- traitlets ---------------------------------------------------------------------------------

def test_server_mode_traitlets_point_the_browser_at_the_session() -> None:
    panel = SessionPanel.for_server("http://127.0.0.1:8888/lab-base/", "secret", "2024-a.b_c",
                                    "user")
    assert (panel.mode, panel.session_id, panel.role, panel.token) == (
        "server", "2024-a.b_c", "user", "secret")
    assert panel.api_url == "http://127.0.0.1:8888/lab-base/cogym/api/sessions/2024-a.b_c"
    assert panel.ws_url == panel.api_url + "/ws?role=user"
    relative = SessionPanel.for_server("/", None, "s1", "pat")
    assert relative.ws_url == "/cogym/api/sessions/s1/ws?role=pat" and relative.token == ""
    state = relative.get_state()
    assert {key: state[key] for key in ("mode", "session_id", "role", "ws_url", "api_url")} == {
        "mode": "server", "session_id": "s1", "role": "pat",
        "ws_url": "/cogym/api/sessions/s1/ws?role=pat", "api_url": "/cogym/api/sessions/s1"}
    for bad in ("../x", "a/b", "", "a b"):
        with pytest.raises(ValueError):
            SessionPanel.for_server("/", "", bad, "user")
    with pytest.raises(ValueError):
        SessionPanel.for_server("/", "", "s1", "user?x=1")


# -- server mode against a real Jupyter server --------------------------------------------------

@pytest.fixture
def jp_server_config(tmp_path):
    return {"ServerApp": {"jpserver_extensions": {"cogym_lab": True}},
            "CogymLabApp": {"results_dir": str(tmp_path / "results")}}


@pytest.fixture
def server_panel(jp_serverapp, jp_http_port, jp_base_url, jp_auth_header):
    """``make(session_id)``: a server-mode panel for the seat ``user`` of a real server."""
    token = jp_auth_header["Authorization"].split()[-1]
    base = f"http://localhost:{jp_http_port}{jp_base_url}"
    return lambda session_id: SessionPanel.for_server(base, token, session_id, "user")


async def _create(jp_fetch, **body: Any) -> str:
    response = await jp_fetch("cogym", "api", "sessions", method="POST", body=json.dumps(
        {"task": "todo", "team": "example", "people": ["user"], "idle_seconds": 30} | body))
    return json.loads(response.body)["session_id"]


async def _read_until(ws, predicate, timeout: float = 60.0) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    async with asyncio.timeout(timeout):
        while True:
            text = await ws.read_message()
            assert text is not None, f"websocket closed; received {seen}"
            seen.append(json.loads(text))
            if predicate(seen[-1]):
                return seen


def test_the_server_mode_urls_reach_the_seat_statuses_and_rating(run, jp_fetch, server_panel,
                                                                  tmp_path) -> None:
    async def body() -> None:
        session_id = await _create(jp_fetch)
        panel = server_panel(session_id)
        url = panel.ws_url.replace("http://", "ws://") + f"&token={panel.token}"
        ws = await websocket_connect(url)
        first = await _read_until(ws, lambda m: m.get("context") is not None)
        assert first[-1]["recipient"] == "user"
        ws.write_message(json.dumps({"action": {"name": "SEND_TEAMMATE_MESSAGE",
                                                "args": {"message": "Please bring a kazoo"}}}))
        seen = await _read_until(ws, lambda m: m.get("type") == "status"
                                 and m["role"] == "agent" and "kazoo" in (m["last_action"] or ""))
        statuses = [m for m in seen if m.get("type") == "status"]
        assert {m["status"] for m in statuses} <= {"thinking", "acting", "waiting", "failed"}
        assert "acting" in {m["status"] for m in statuses}
        assert all(set(m) == {"type", "role", "status", "waiting_for", "last_action", "ts"}
                   for m in statuses)
        assert {m["waiting_for"] for m in statuses if m["status"] == "waiting"} <= {
            "teammate", "tick"}
        await jp_fetch("cogym", "api", "sessions", session_id, method="DELETE")
        await _read_until(ws, lambda m: m.get("done") is True)
        ws.close()

        rating = {"role": "user", "outcome_rating": 4, "satisfaction": 5, "comment": "nice"}
        response = await AsyncHTTPClient().fetch(
            panel.api_url + "/rating", method="POST", body=json.dumps(rating),
            headers={"Authorization": f"token {panel.token}"})
        assert response.code == 201
        saved = json.loads((tmp_path / "results" / session_id / "ratings.json").read_text())
        assert saved["user"]["outcome_rating"] == 4 and saved["user"]["comment"] == "nice"

    run(body())


# -- local mode: a session hosted in-process, relayed through the widget's comm ----------------

@pytest.fixture
async def host(tmp_path: Path):
    host = SessionHost(tmp_path / "results")
    yield host
    await host.close()


def _notification_with(predicate):
    return lambda m: m.get("type") == "notification" and predicate(m["data"])


def _checklist(update: dict[str, Any]) -> list[str]:
    """The checklist an update frame carries; empty when the event left it as it was."""
    component = next((c for c in update["components"] if c["name"] == "checklist"), None)
    return [item["text"] for item in component["content"]] if component else []


async def test_local_mode_relays_a_hosted_session_both_ways(host, comms, tmp_path) -> None:
    hosted = await host.create("todo", team="example", people=["user"], idle_seconds=30)
    panel = SessionPanel.for_local(host, hosted.session_id, "user")
    channel = next(c for c in comms if c.comm_id == panel.comm.comm_id)  # not its layout's
    opened = channel.sent[0]
    assert opened[0] == "comm_open"
    state = opened[1]["state"]
    assert (state["mode"], state["session_id"], state["role"], state["ws_url"]) == (
        "local", hosted.session_id, "user", "")

    channel.from_browser({"type": "hello"})  # a view opened: it gets the current state
    synced = await channel.until(_notification_with(lambda n: n.get("context") is not None))
    assert synced["data"]["recipient"] == "user"
    assert panel.last_seq >= synced["data"]["seq"] and panel.latest is not None

    channel.from_browser({"type": "action", "action": {
        "name": "SEND_TEAMMATE_MESSAGE", "args": {"message": "Please bring a kazoo"}}})
    await channel.until(_notification_with(lambda n: "kazoo" in _checklist(n)))
    status = await channel.until(lambda m: m.get("type") == "status"
                                 and "kazoo" in (m["data"]["last_action"] or ""))
    assert status["data"]["role"] == "agent" and status["data"]["status"] in (
        "acting", "thinking", "waiting")
    channel.from_browser({"type": "action", "action": 'ADD_ITEM(text="banjo")'})
    await channel.until(_notification_with(lambda n: "banjo" in _checklist(n)))

    channel.from_browser({"type": "action", "action": "NOT AN ACTION ("})
    refused = await channel.until(_notification_with(
        lambda n: n["event"]["status"] == "error" and n["event"]["action"] == "NOT AN ACTION ("))
    assert "Expected" in refused["data"]["event"]["error"]
    channel.from_browser({"type": "launch", "what": "rockets"})
    unreadable = await channel.until(lambda m: m.get("type") == "error")
    assert "cannot read" in unreadable["error"]

    channel.from_browser({"type": "action", "action": {"name": "FINISH", "args": {}}})
    final = await channel.until(_notification_with(lambda n: n["done"]))
    assert final["data"]["end_reason"] == "finished"

    channel.from_browser({"type": "rating", "id": 7, "role": "user", "outcome_rating": 6,
                          "satisfaction": 3, "comment": ""})
    bad = await channel.until(lambda m: m.get("type") == "rating_error" and m["id"] == 7)
    assert "outcome_rating" in bad["error"]
    channel.from_browser({"type": "rating", "id": 8, "role": "user", "outcome_rating": 5,
                          "satisfaction": 4, "comment": "quick and tidy"})
    rated = await channel.until(lambda m: m.get("type") == "rated" and m["id"] == 8)
    assert rated["ratings"]["user"]["satisfaction"] == 4
    ratings = json.loads((tmp_path / "results" / hosted.session_id / "ratings.json").read_text())
    assert ratings["user"] == rated["ratings"]["user"]

    # A view opened after the end still gets the final state, so it can show the rating form.
    before = len(channel.custom())
    channel.from_browser({"type": "hello"})
    again = await channel.until(lambda m: m.get("type") == "notification", since=before)
    assert again["data"]["done"] is True
    panel.close()


async def test_local_mode_refuses_unknown_sessions_and_seats(host, comms) -> None:
    hosted = await host.create("todo", team="example", people=["user"], idle_seconds=30)
    with pytest.raises(HostingError, match="No session"):
        SessionPanel.for_local(host, "nope", "user")
    with pytest.raises(HostingError, match="not a person seat"):
        SessionPanel.for_local(host, hosted.session_id, "agent")
    await host.end(hosted.session_id)


# -- the ES module in headless Chromium --------------------------------------------------------

class Gallery(CoEnv):
    """One component of every render type, plus one no view knows."""

    name = "gallery"

    @property
    def task_description(self) -> str:
        return "Show every view."

    def _reset(self, seed: int | None) -> None:
        self.text = f"# Notes\n\nSome **bold** words.\n\n{XSS}\n"
        self.library = [{"number": 1, "id": "1706.03762", "title": f"Attention {XSS}",
                         "authors": ["A. Vaswani", "N. Shazeer"], "year": 2017,
                         "url": "javascript:alert(1)", "note": "", "added_by": "agent"}]

    def public_components(self) -> list[Component]:
        return [
            Component(name="editor", title="Shared editor", render_type=RenderType.EDITOR,
                      content=self.text),
            Component(name="library", title="Library", render_type=RenderType.LIBRARY,
                      content=self.library),
            Component(name="notebook", render_type=RenderType.NOTEBOOK, content={
                "cells": [{"index": 1, "ran_by": "agent", "source": "print(1)",
                           "execution_count": 1, "status": "ok",
                           "outputs": [{"kind": "stream", "text": "1\n", "html": XSS}]}],
                "running": {}}),
            Component(name="plan", render_type=RenderType.PLAN, content=["Fly", "Hike"]),
            Component(name="table", render_type=RenderType.TABLE, content={
                "title": "Flights", "columns": ["flight", "price"],
                "rows": [{"flight": "F1", "price": 120}], "note": XSS}),
            Component(name="checklist", render_type=RenderType.CHECKLIST, content=[
                {"id": 1, "text": "tent", "done": True, "added_by": "user"}]),
            Component(name="facts", render_type=RenderType.TEXT, content={"words": 7}),
            Component(name="mystery", render_type="hologram", content={"depth": XSS}),
        ]

    def private_components(self, role: str) -> list[Component]:
        return [Component(name="search", render_type=RenderType.SEARCH_RESULTS,
                          content=[{"id": "p1", "title": XSS, "snippet": "about things"}])]

    @action("Replace the whole text.", replaces="editor", text="The full text")
    def editor_update(self, role: str, text: str) -> None:
        self.text = text

    @action("Add a library entry.", title="Its title")
    def add_paper(self, role: str, title: str) -> None:
        self.library.append({"number": len(self.library) + 1, "id": "x", "title": title})

    @action("Add search results to the library.",
            picks=ItemPick(component="search", label="Add to library"), ids="Their ids")
    def pick_paper(self, role: str, ids: str) -> None:
        self.library.append({"number": len(self.library) + 1, "id": ids, "title": ids})


def _for_user(transition) -> dict[str, Any]:
    (update,) = [u for u in transition.updates if u.recipient == "user"]
    return update.model_dump(mode="json")


def _gallery_notifications() -> dict[str, dict[str, Any]]:
    """Real updates to the person, from a real coordinator: one per event, each only what the
    event changed, so a test delivers them all, in order (the panel's copy asks for a sync at a
    gap, which would send a second hello)."""
    coordinator = Coordinator(Gallery(), [TeamMember(role="agent", kind="agent"),
                                          TeamMember(role="user", kind="person")],
                              session_id="gallery-1")
    notes = {"start": _for_user(coordinator.start(1000.0))}
    notes["message"] = _for_user(coordinator.handle("agent", {
        "name": "SEND_TEAMMATE_MESSAGE", "args": {"message": f"Hello **there** {XSS}\n\n"
                                                  "- one\n- two\n[bad](javascript:alert(1))"}},
        1001.0))
    notes["library"] = _for_user(coordinator.handle("agent", 'ADD_PAPER(title="BERT")', 1002.0))
    notes["echo"] = _for_user(coordinator.handle("user", {  # the person's own message, back
        "name": "SEND_TEAMMATE_MESSAGE", "args": {"message": "first question"}}, 1002.2))
    plan = [f"Step {n}" for n in range(1, 31)]
    notes["plan"] = _for_user(coordinator.handle("agent", {
        "name": "EDITOR_UPDATE", "args": {"text": "\n".join(plan)}}, 1002.5))
    plan[14] = "A new line by the agent."  # one line of thirty changes
    notes["confirm"] = _for_user(coordinator.handle("agent", {
        "name": "REQUEST_TEAMMATE_CONFIRM", "args": {"pending_action": format_action(Action(
            name="EDITOR_UPDATE", args={"text": "\n".join(plan)}))}}, 1003.0))
    notes["confirm2"] = _for_user(coordinator.handle("agent", {
        "name": "REQUEST_TEAMMATE_CONFIRM", "args": {
            "pending_action": 'ADD_PAPER(title="GPT")'}}, 1003.5))
    notes["paused"] = _for_user(coordinator.handle("user", "PAUSE_AGENT()", 1004.0))
    notes["end"] = _for_user(coordinator.end(1005.0, "finished"))
    return notes


async def _open_page(browser, origin: str, state: dict[str, Any]):
    """A page at ``origin`` running the panel's ES module with a stand-in anywidget model."""
    page = await browser.new_page()
    files = page_files()

    async def serve(route) -> None:
        name = route.request.url.split("/cogym-panel-test/")[1].split("?")[0]
        body, kind = files[name]
        await route.fulfill(status=200, body=body, content_type=kind)

    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text)
            if message.type == "error" else None)
    await page.route(f"{origin}/cogym-panel-test/**", serve)
    query = urllib.parse.quote(json.dumps(state))
    await page.goto(f"{origin}/cogym-panel-test/index.html?state={query}")
    await page.wait_for_function("window.ready === true", timeout=60_000)
    return page, errors


@pytest.fixture
async def browser():
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                    args=CHROMIUM_ARGS)
        yield chromium
        await chromium.close()


LOCAL_STATE = {"mode": "local", "session_id": "gallery-1", "role": "user", "ws_url": "",
               "api_url": "", "token": "", "connection": "", "last_seq": 0}


def _by(testid: str, **data: str) -> str:
    extra = "".join(f'[data-{key.replace("_", "-")}="{value}"]' for key, value in data.items())
    return f'[data-testid="{testid}"]{extra}'


async def test_the_panel_renders_every_view_safely_and_sends_actions(browser) -> None:
    notes = _gallery_notifications()
    page, errors = await _open_page(browser, "http://panel.test", LOCAL_STATE)
    assert await page.evaluate("window.sent") == [{"type": "hello"}]
    deliver = "(message) => window.deliver(message)"
    await page.evaluate(deliver, {"type": "notification", "data": notes["start"]})

    for render_type in ("editor", "library", "notebook", "plan", "table", "checklist", "text",
                        "search_results", "hologram"):
        await page.wait_for_selector(_by(f"view-{render_type}"), timeout=30_000)
    assert "hologram" not in panel_esm()  # the unknown type falls back to JSON, not a view
    assert "depth" in await page.inner_text(_by("view-hologram"))
    assert await page.inner_text(_by("view-search_results")) and \
        "only you" in await page.inner_text(_by("view-search_results"))
    assert await page.get_attribute(_by("checklist-item"), "data-done") == "true"
    # the panel states the task, in the task's own words, and the person's role
    assert await page.inner_text(f'{_by("task-brief")} summary') == "Task: Show every view."
    assert await page.inner_text(_by("your-role")) == "you are user"
    assert await page.evaluate("window.modelState.last_seq") == 1

    # Hostile text stays text: in the editor, its preview, the library, chat, notebook, table.
    await page.click(_by("editor-preview-toggle"))
    preview = await page.inner_html(_by("editor-preview"))
    assert "<h1>Notes</h1>" in preview and "<strong>bold</strong>" in preview
    assert "&lt;script&gt;" in preview
    await page.evaluate(deliver, {"type": "notification", "data": notes["message"]})
    await page.wait_for_selector(_by("chat-message", sender="agent"), timeout=30_000)
    assert XSS in await page.inner_text(_by("chat-message", sender="agent"))
    # chat renders the same safe markdown as the preview: formatting, never the sender's HTML
    chat_html = await page.inner_html(_by("chat-message", sender="agent"))
    assert "<strong>there</strong>" in chat_html and "<li>two</li>" in chat_html
    assert "&lt;script&gt;" in chat_html and 'href="javascript' not in chat_html
    counts = await page.evaluate("""() => ({
        scripts: document.querySelectorAll('[data-testid=cogym-panel] script').length,
        images: document.querySelectorAll('[data-testid=cogym-panel] img').length,
        handlers: document.querySelectorAll('[onerror]').length,
        javascriptLinks: document.querySelectorAll('a[href^="javascript"]').length,
        pwned: window.pwned ?? null})""")
    assert counts == {"scripts": 0, "images": 0, "handlers": 0, "javascriptLinks": 0,
                      "pwned": None}
    await page.click(_by("editor-preview-toggle"))

    # A change flashes the component it touched.
    await page.evaluate(deliver, {"type": "notification", "data": notes["library"]})
    await page.wait_for_selector(f'{_by("view-library")}.cogym-changed', timeout=30_000)
    assert await page.get_attribute(_by("view-library"), "data-changed-seq") == "3"
    assert "BERT" in await page.inner_text(_by("view-library"))
    assert "cogym-changed" not in (await page.get_attribute(_by("view-editor"), "class") or "")

    # The editor is live: what the person types leaves a moment later, with no Save button,
    # as the replica's own Yjs operations, made on the update whose text the replica had.
    assert notes["start"]["whole"] and not notes["library"]["whole"]
    assert [c["name"] for c in notes["library"]["components"]] == ["library"]  # only the change
    assert set(notes["start"]["texts"]) == {"editor"} and not notes["library"].get("texts")
    assert await page.locator(_by("editor-save")).count() == 0
    original = notes["start"]["components"][0]["content"]
    await page.click(_by("editor-textarea"))
    await page.keyboard.press("Control+End")
    await page.keyboard.type("My own line.")
    await page.keyboard.press("Enter")
    await page.wait_for_function(
        "window.sent.some((m) => m.action && m.action.name === 'EDIT_TEXT')", timeout=30_000)
    edit = (await page.evaluate("window.sent"))[-1]
    assert edit.pop("id").startswith("a")  # the panel's name for the action
    args = edit["action"]["args"]
    assert edit == {"type": "action", "seen_seq": notes["start"]["seq"],
                    "action": {"name": "EDIT_TEXT", "args": args}}
    assert args["component"] == "editor" and isinstance(args["client"], int)
    replica = Doc()  # the session's document, as the start update carried it
    replica.apply_update(base64.b64decode(notes["start"]["texts"]["editor"]))
    replica.apply_update(base64.b64decode(args["update"]))  # and the person's operations
    assert str(replica.get("text", type=Text)) == original + "My own line.\n"
    assert await page.get_attribute(_by("editor-state"), "data-state") == "syncing"

    # Chat: several messages in flight; each leaves the outbox when the chat shows it.
    for text in ("first question", "second question"):
        await page.fill(_by("chat-input"), text)
        await page.press(_by("chat-input"), "Enter")
    pending = await page.query_selector_all(_by("chat-pending", state="sent"))
    assert len(pending) == 2
    await page.evaluate(deliver, {"type": "notification", "data": notes["echo"]})
    await page.wait_for_function(
        "document.querySelectorAll('[data-testid=chat-pending]').length === 1", timeout=30_000)
    assert "first question" in await page.inner_text(_by("chat-message", sender="user"))
    await page.evaluate(deliver, {"type": "notification", "data": notes["plan"]})

    # A search result's own button sends the action that picks it, with its id.
    pick = _by("item-pick", item="p1")
    assert await page.inner_text(pick) == "Add to library"
    await page.click(pick)
    assert (await page.evaluate("window.sent"))[-1]["action"] == {
        "name": "PICK_PAPER", "args": {"ids": "p1"}}
    assert await page.is_disabled(pick)

    # Agent status, then the notification protocol's own word that the agent is paused.
    await page.evaluate(deliver, {"type": "status", "data": {
        "role": "agent", "status": "thinking", "last_action": 'ADD_PAPER(title="BERT")',
        "ts": time.time()}})
    await page.wait_for_selector(_by("agent-status", role="agent", status="thinking"))
    # the action in plain words, from its spec; a click shows it as written
    last_action = _by("agent-last-action")
    assert await page.inner_text(last_action) == 'last action: Add a library entry: title “BERT”'
    await page.click(last_action)
    assert await page.inner_text(last_action) == 'last action: ADD_PAPER(title="BERT")'
    await page.click(last_action)
    assert "Add a library entry" in await page.inner_text(last_action)
    await page.click(_by("pause-button"))
    assert (await page.evaluate("window.sent"))[-1]["action"]["name"] == "PAUSE_AGENT"

    # The status in plain words, with how long ago it changed: acting says on what, waiting
    # says for whom.
    words = _by("agent-status-words")
    await page.evaluate(deliver, {"type": "status", "data": {
        "role": "agent", "status": "acting", "last_action": 'ADD_PAPER(title="BERT")',
        "ts": time.time()}})
    await page.wait_for_selector(_by("agent-status", role="agent", status="acting"))
    assert await page.inner_text(words) == "acting: Add a library entry: title “BERT”"
    assert await page.inner_text(_by("agent-status-since")) == "· just now"
    for waiting_for, said in (("teammate", "waiting for you"),
                              ("tick", "waiting for news from you or the team")):
        await page.evaluate(deliver, {"type": "status", "data": {
            "role": "agent", "status": "waiting", "waiting_for": waiting_for,
            "ts": time.time()}})
        await page.wait_for_function(
            "([selector, said]) => document.querySelector(selector).innerText.startsWith(said)",
            arg=[words, said], timeout=30_000)

    # The session's set-up: a progress bar with the phase and the time left, gone once over.
    setup = {"task": "Building the paper search index", "phase": "tokenizing",
             "fraction": 0.45, "elapsed": 27.0, "seconds_left": 33.0}
    await page.evaluate(deliver, {"type": "status", "data": {"setup": setup, "ts": time.time()}})
    await page.wait_for_selector(_by("view-setup"), state="visible", timeout=30_000)
    assert await page.evaluate(f"document.querySelector('{_by('setup-progress')}').value") == 0.45
    assert await page.inner_text(_by("setup-label")) == (
        "Building the paper search index: tokenizing · 45% · about 33 s left. The agent "
        "starts when it is ready.")
    await page.evaluate(deliver, {"type": "status", "data": {"setup": None, "ts": time.time()}})
    await page.wait_for_selector(_by("view-setup"), state="hidden", timeout=30_000)
    await page.evaluate(deliver, {"type": "status", "data": {  # a set-up that failed says why
        "setup": None, "error": "The session could not be set up: no corpus.",
        "ts": time.time() + 1}})
    await page.wait_for_selector(_by("view-setup", state="failed"), timeout=30_000)
    assert await page.inner_text(_by("setup-label")) == (
        "The session could not be set up: no corpus.")

    # A confirmation: a preview of the change, and accept.
    await page.evaluate(deliver, {"type": "notification", "data": notes["confirm"]})
    await page.wait_for_selector(_by("confirm-accept", request_id="c1"), timeout=30_000)
    preview = await page.inner_text(_by("confirmation-preview"))
    assert "Replace the whole text" in preview and "A new line by the agent." in preview
    # the header says what is asked in words, not as a request wrapping an action string
    last_event = await page.inner_text(_by("last-event"))
    assert "asks for approval: Replace the whole text" in last_event
    assert "REQUEST_TEAMMATE_CONFIRM" not in last_event and "\\n" not in last_event
    # the one changed line leads, with two lines of context; the rest is folded away
    assert "1 line added, 1 removed" in preview
    assert [await f.inner_text() for f in await page.query_selector_all(_by("diff-fold"))] == [
        "… 12 unchanged lines (show)", "… 13 unchanged lines (show)"]
    assert "Step 1\n" not in preview and "Step 13" in preview and "Step 17" in preview
    await page.click(_by("diff-fold"))  # unfolds the first run
    assert "Step 1\n" in await page.inner_text(_by("confirmation-preview"))
    await page.click(_by("confirm-accept", request_id="c1"))
    assert (await page.evaluate("window.sent"))[-1]["action"] == {
        "name": "ACCEPT_CONFIRMATION", "args": {"request_id": "c1"}}
    # Accept all for the session: what the agent asks next is accepted without a click, and
    # what was answered already is not answered twice.
    sent_before = len(await page.evaluate("window.sent"))
    await page.check(_by("confirm-accept-all"))
    assert len(await page.evaluate("window.sent")) == sent_before
    await page.evaluate(deliver, {"type": "notification", "data": notes["confirm2"]})
    await page.wait_for_function(f"window.sent.length === {sent_before + 1}", timeout=30_000)
    assert (await page.evaluate("window.sent"))[-1]["action"] == {
        "name": "ACCEPT_CONFIRMATION", "args": {"request_id": "c2"}}

    await page.evaluate(deliver, {"type": "notification", "data": notes["paused"]})
    await page.wait_for_selector(_by("agent-status", role="agent", status="paused"))
    assert await page.get_attribute(_by("pause-button"), "data-state") == "paused"
    await page.evaluate(deliver, {"type": "status", "data": {  # another agent, 30 s ago
        "role": "scout", "status": "thinking", "ts": time.time() - 30}})
    scout = _by("agent-status", role="scout") + ' [data-testid="agent-status-since"]'
    await page.wait_for_selector(scout)
    assert await page.inner_text(scout) in ("· 30 s ago", "· 31 s ago")

    # The end: the rating form, sent through the transport, confirmed by the kernel.
    await page.evaluate(deliver, {"type": "notification", "data": notes["end"]})
    await page.wait_for_selector(_by("rating-form"), state="visible", timeout=30_000)
    assert await page.is_disabled(_by("finish-button"))
    await page.select_option(_by("rating-outcome"), "4")
    await page.select_option(_by("rating-satisfaction"), "5")
    await page.fill(_by("rating-comment"), "good teammate")
    await page.click(_by("rating-submit"))
    rating = (await page.evaluate("window.sent"))[-1]
    # (the form asked for its comparison with the autonomous agent first, under its own id)
    assert {"type": "pairwise", "id": 1} in await page.evaluate("window.sent")
    assert rating == {"type": "rating", "id": 2, "role": "user", "outcome_rating": 4,
                      "satisfaction": 5, "comment": "good teammate"}
    await page.evaluate(deliver, {"type": "rated", "id": 2, "ratings": {}})
    await page.wait_for_selector(_by("rating-result", state="saved"), timeout=30_000)
    assert errors == []


async def test_a_refused_action_is_shown_and_its_chat_message_marked_not_sent(browser) -> None:
    notes = _gallery_notifications()
    page, errors = await _open_page(browser, "http://panel.test", LOCAL_STATE)
    await page.evaluate("(message) => window.deliver(message)",
                        {"type": "notification", "data": notes["start"]})
    await page.wait_for_selector(_by("chat-input"), timeout=30_000)
    for text in ("one", "two"):
        await page.fill(_by("chat-input"), text)
        await page.press(_by("chat-input"), "Enter")
    first, second = (await page.evaluate("window.sent"))[-2:]
    assert first["id"] != second["id"]
    refusal = "Too many actions at once: this one was not applied."
    await page.evaluate("(message) => window.deliver(message)",
                        {"type": "error", "error": refusal, "id": second["id"]})
    await page.wait_for_selector(_by("panel-error"), state="visible", timeout=30_000)
    assert refusal in await page.inner_text(_by("panel-error-text"))
    assert await page.get_attribute(_by("chat-pending", state="failed"), "data-state") == \
        "failed"
    assert "two" in await page.inner_text(_by("chat-pending", state="failed"))
    assert await page.query_selector(_by("chat-pending", state="sent")) is not None  # "one"
    await page.evaluate("(message) => window.deliver(message)",
                        {"type": "error", "error": refusal, "id": "unknown"})
    await page.wait_for_function("document.querySelector('[data-testid=panel-error-text]')"
                                 ".textContent.includes('2 actions refused')", timeout=30_000)
    await page.click(_by("panel-error-dismiss"))
    assert await page.is_hidden(_by("panel-error"))
    assert errors == []


#: Controls a watcher may still use: they change only what the panel shows.
#: A watcher may still fold a plan (plan-collapse): it only changes what the panel shows.
VIEW_ONLY_CONTROLS = ["editor-preview-toggle", "panel-error-dismiss", "plan-collapse"]

#: Every control of the panel that is not disabled (natively or by aria-disabled), by testid.
ENABLED_CONTROLS = """(root) => [...root.querySelectorAll('button, select, input, textarea')]
    .filter((c) => !c.disabled && c.getAttribute('aria-disabled') !== 'true')
    .map((c) => c.dataset.testid || c.tagName).sort()"""


async def test_a_read_only_panel_shows_everything_and_sends_nothing(browser) -> None:
    """Watch mode: the header says whose view it follows, every control that acts is disabled
    (text fields read-only and aria-disabled, so keys typed there still stay in the panel), and
    nothing the watcher does sends an action, Enter in the chat box included."""
    notes = _gallery_notifications()
    page, errors = await _open_page(browser, "http://panel.test",
                                    LOCAL_STATE | {"readonly": True})
    deliver = "(message) => window.deliver(message)"
    for step in ("start", "message", "library", "echo", "plan", "confirm", "confirm2"):
        await page.evaluate(deliver, {"type": "notification", "data": notes[step]})
    await page.evaluate(deliver, {"type": "status", "data": {
        "role": "agent", "status": "acting", "ts": 1001.0, "last_action": 'ADD_PAPER(title="x")'}})
    await page.wait_for_selector(_by("confirm-accept", request_id="c1"), timeout=30_000)

    root = page.locator(_by("cogym-panel"))
    assert await root.get_attribute("data-readonly") == "true"
    assert await page.inner_text(_by("your-role")) == "Watching user (read-only)"
    # The same views as a person's: workspace, chat, agent status, approvals.
    for testid in ("view-editor", "view-library", "view-checklist", "chat-message",
                   "agent-status", "confirmation-preview"):
        assert await page.locator(_by(testid)).count() > 0, testid
    assert "only user" in await page.inner_text(_by("view-search_results"))  # not "only you"
    assert await root.evaluate(ENABLED_CONTROLS) == VIEW_ONLY_CONTROLS
    for testid in ("chat-input", "chat-send", "editor-textarea", "pause-button",
                   "finish-button", "confirm-accept", "confirm-reject", "confirm-accept-all",
                   "action-select", "action-submit"):
        assert await page.locator(_by(testid)).first.is_disabled(), testid

    chat = page.locator(_by("chat-input"))
    # Playwright will not click what is aria-disabled; a person's click focuses the box, so keys
    # typed there stay in the panel, but nothing can be typed and Enter sends nothing.
    await chat.click(force=True)
    assert await chat.evaluate("(field) => field === document.activeElement")
    await page.keyboard.type("Hello")
    await page.keyboard.press("Enter")
    await page.keyboard.press("Shift+Enter")
    assert await chat.input_value() == ""
    await page.locator(_by("editor-textarea")).click(force=True)
    await page.keyboard.press("Control+s")
    await page.keyboard.press("Escape")
    for testid in ("confirm-accept", "finish-button", "pause-button"):
        await page.locator(_by(testid)).first.click(force=True)  # a click on a disabled button
    assert await page.locator(_by("chat-pending")).count() == 0
    assert await page.evaluate("window.sent") == [{"type": "hello"}]

    # A status update rebuilds the agent box: its buttons stay disabled.
    await page.evaluate(deliver, {"type": "status", "data": {
        "role": "agent", "status": "waiting", "ts": 1002.0}})
    assert await page.locator(_by("pause-button")).is_disabled()
    # The end: the scores card as for a person, no rating form.
    for step in ("paused", "end"):  # every update, in order: none is missed
        await page.evaluate(deliver, {"type": "notification", "data": notes[step]})
    await page.wait_for_selector(_by("scores-card"), state="visible", timeout=30_000)
    assert await page.locator(_by("rating-form")).is_hidden()
    assert await root.evaluate(ENABLED_CONTROLS) == VIEW_ONLY_CONTROLS
    assert await page.evaluate("window.sent") == [{"type": "hello"}]
    assert errors == []


async def test_markdown_preview_escapes_before_formatting(browser) -> None:
    page, errors = await _open_page(browser, "http://panel.test", LOCAL_STATE)
    html = await page.evaluate("(text) => window.mod.renderMarkdown(text)",
                               "## Title\n- **a** `b`\n\n[site](https://example.org) "
                               "[bad](javascript:alert(1))\n" + XSS)
    assert "<h2>Title</h2>" in html and "<li><strong>a</strong> <code>b</code></li>" in html
    assert '<a href="https://example.org"' in html and 'href="javascript' not in html
    assert "<script>" not in html and "<img" not in html and "&lt;img" in html
    parsed = await page.evaluate("(t) => window.mod.parseAction(t)",
                                 'EDITOR_UPDATE(text="a, b)\\n\\"c\\"", n=[1, {"x": ")"}])')
    assert parsed == {"name": "EDITOR_UPDATE", "args": {"text": 'a, b)\n"c"',
                                                        "n": [1, {"x": ")"}]}}
    assert errors == []


async def test_the_data_notice_shows_only_when_the_session_reads_a_sample(browser) -> None:
    """The ``data_notice`` trait (set by the kernel from the session's summary) shows in a box
    of its own; without one the box stays hidden."""
    notice = ("Using the travel_planning sample that comes with cogym_lab (a few queries); "
              "numbers from it are not comparable with the papers'. For the full data, run "
              "`%cogym data download travel_planning`.")
    page, errors = await _open_page(browser, "http://panel.test",
                                    {**LOCAL_STATE, "data_notice": notice})
    box = page.locator(_by("data-notice"))
    assert await box.is_visible() and await box.inner_text() == notice
    assert await box.get_attribute("role") == "note"
    plain, plain_errors = await _open_page(browser, "http://panel.test", LOCAL_STATE)
    assert await plain.locator(_by("data-notice")).is_hidden()
    assert errors == [] and plain_errors == []


def test_the_server_transport_follows_a_real_session(run, jp_fetch, jp_http_port, server_panel,
                                                     tmp_path) -> None:
    """The panel in Chromium opens the seat's WebSocket on a real server, chats with the agent,
    and posts its rating to the server."""

    async def body() -> None:
        session_id = await _create(jp_fetch)
        panel = server_panel(session_id)
        state = {key: getattr(panel, key) for key in ("mode", "session_id", "role", "ws_url",
                                                      "api_url", "token", "connection")}
        async with async_playwright() as playwright:
            # The test page is served by Playwright, not by the server, so Chromium would
            # class it as public and block its calls to a loopback server: allow them.
            chromium = await playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True,
                args=[*CHROMIUM_ARGS, "--disable-features=LocalNetworkAccessChecks"])
            try:
                # Served from the server's own origin, as JupyterLab would be.
                page, errors = await _open_page(chromium, f"http://localhost:{jp_http_port}",
                                                state)
                await page.wait_for_selector(_by("connection-status", state="open"),
                                             timeout=60_000)
                await page.wait_for_selector(_by("view-checklist"), timeout=60_000)
                await page.fill(_by("chat-input"), "Please bring a kazoo")
                await page.click(_by("chat-send"))
                await page.wait_for_function(
                    "document.querySelector('[data-testid=view-checklist]').innerText"
                    ".includes('kazoo')", timeout=60_000)
                await page.wait_for_selector(_by("agent-status", role="agent"),
                                             timeout=60_000)
                await page.click(_by("finish-button"))  # it asks first: end and grade
                await page.click(_by("finish-confirm-yes"))
                await page.wait_for_selector(_by("rating-form"), state="visible",
                                             timeout=60_000)
                await page.select_option(_by("rating-outcome"), "3")
                await page.select_option(_by("rating-satisfaction"), "4")
                await page.click(_by("rating-submit"))
                await page.wait_for_selector(_by("rating-result", state="saved"),
                                             timeout=60_000)
                assert errors == []
            finally:
                await chromium.close()
        ratings = json.loads((tmp_path / "results" / session_id / "ratings.json").read_text())
        assert (ratings["user"]["outcome_rating"], ratings["user"]["satisfaction"]) == (3, 4)

    run(body())


# -- local mode in a real kernel: the session runs in the kernel's loop between cells ----------

class KernelRunner:
    """Runs cells in a real IPython kernel and returns what they printed."""

    def __init__(self, client) -> None:
        self.client = client

    def __call__(self, code: str) -> str:
        msg_id = self.client.execute(code)
        out: list[str] = []
        while True:
            message = self.client.get_iopub_msg(timeout=60)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                out.append(content["text"])
            elif kind == "error":
                raise AssertionError("\n".join(content["traceback"]))
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(out)

    def until(self, code: str, expected: str, timeout: float = 60.0) -> None:
        """Run ``code`` (between cells the kernel's loop runs) until it prints ``expected``."""
        deadline = time.monotonic() + timeout
        while (printed := self(code).strip()) != expected:
            assert time.monotonic() < deadline, f"still {printed!r}"


@pytest.fixture
def kernel():
    from jupyter_client import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        yield KernelRunner(client)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_local_mode_in_a_real_kernel_runs_between_cells(kernel, tmp_path) -> None:
    kernel(f"""
import asyncio
from cogym_lab.runtime.hosting import SessionHost
from cogym_lab.widgets import SessionPanel
host = SessionHost({str(tmp_path)!r})
creating = asyncio.ensure_future(host.create("todo", team="example", people=["user"],
                                             idle_seconds=30))
""")
    kernel.until("print(creating.done())", "True")
    assert kernel("""
panel = SessionPanel.for_local(host, creating.result().session_id, "user")
panel.bridge.handle({"type": "hello"})
panel.bridge.handle({"type": "action", "action": {"name": "SEND_TEAMMATE_MESSAGE",
                                                   "args": {"message": "Please bring a kazoo"}}})
print(panel.mode, panel.role)
""").strip() == "local user"
    kernel.until("""
items = [i["text"] for i in (panel.latest or {"view": {"components": [{"content": []}]}})
         ["view"]["components"][0]["content"]]
print("kazoo" in items and "agent" in panel.bridge.statuses and panel.last_seq > 0)
""", "True")
