"""The panel's notebook box: the real ES module in Chromium, on a stand-in page, fed the status
messages a session in a person's notebook publishes (``{"notebook": {...}}``): how the agent's
cells are written on a server without real-time collaboration, then what was put back after
the browser saved a copy without them. Nothing is shown for a live notebook with nothing to
say, and an older message never replaces a newer one."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from playwright.sync_api import Page, expect

from cogym_lab.server.live_notebooks.link import FILE_MODE_MESSAGE, restored_summary
from tests.browser.lab_page import UI_TIMEOUT_MS
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import StepShots
from tests.support.panel_test_page import page_files

ORIGIN = "http://panel.test"
STATE = {"mode": "local", "session_id": "notice-1", "role": "user", "ws_url": "", "api_url": "",
         "token": "", "connection": "", "last_seq": 0, "yjs_module": ""}


def _open(page: Page) -> SessionPanelPage:
    files = page_files()

    def serve(route: Any) -> None:
        name = route.request.url.split("/cogym-panel-test/")[1].split("?")[0]
        body, kind = files[name]
        route.fulfill(status=200, body=body, content_type=kind)

    page.route(f"{ORIGIN}/cogym-panel-test/**", serve)
    query = urllib.parse.quote(json.dumps(STATE))
    page.goto(f"{ORIGIN}/cogym-panel-test/index.html?state={query}")
    page.wait_for_function("window.ready === true", timeout=UI_TIMEOUT_MS)
    return SessionPanelPage.find(page, page.locator("#root"))


def _status(page: Page, notice: dict[str, Any], ts: float) -> None:
    """The kernel relays one status message (local mode's custom message)."""
    page.evaluate("(message) => window.deliver(message)",
                  {"type": "status", "data": {"notebook": notice, "ts": ts}})


def test_the_notebook_box_says_how_cells_are_written_and_what_was_put_back(
        page: Page, shots: StepShots) -> None:
    panel = _open(page)
    box = panel.testid("notebook-notice")
    expect(box).to_be_hidden()
    _status(page, {"live": True, "message": None, "summary": None, "restored": []}, 1.0)
    expect(box).to_be_hidden()  # a live notebook with nothing put back: nothing to say

    _status(page, {"live": False, "message": FILE_MODE_MESSAGE, "summary": None,
                   "restored": []}, 2.0)
    expect(box).to_be_visible()
    expect(box).to_have_attribute("data-state", "file")
    expect(panel.testid("notebook-mode")).to_have_text(FILE_MODE_MESSAGE)
    expect(panel.testid("notebook-restored-item")).to_have_count(0)
    shots.take("file-mode", focus=box)

    restored = [{"cell_id": "a1", "what": "outputs", "label": "agent cell 1 (6 * 7)",
                 "found_in": "save", "ts": 3.0},
                {"cell_id": "b2", "what": "cell", "label": "agent cell 2 (print(total))",
                 "found_in": "save", "ts": 3.0}]
    summary = restored_summary(restored, live=False)
    _status(page, {"live": False, "message": FILE_MODE_MESSAGE, "summary": summary,
                   "restored": restored}, 3.0)
    expect(box).to_have_attribute("data-state", "restored")
    expect(panel.testid("notebook-summary")).to_have_text(summary)
    items = panel.testid("notebook-restored-item")
    expect(items).to_have_count(2)
    expect(items.nth(0)).to_have_text("the outputs of agent cell 1 (6 * 7): put back (a save of "
                                      "the notebook would have dropped it)")
    expect(items.nth(1)).to_have_attribute("data-what", "cell")
    assert "the outputs of agent cell 1 (6 * 7) and agent cell 2 (print(total))" in summary
    shots.take("put-back", focus=box)

    _status(page, {"live": False, "message": FILE_MODE_MESSAGE, "summary": None,
                   "restored": []}, 2.5)  # older than what it shows: ignored
    expect(items).to_have_count(2)
    _status(page, {"live": False, "message": "<b>not markup</b>", "summary": None,
                   "restored": []}, 4.0)
    expect(panel.testid("notebook-mode")).to_have_text("<b>not markup</b>")
