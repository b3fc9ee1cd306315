"""A session lives in the Jupyter server, not in the page: reloading the browser brings the
panel back, caught up on everything that happened, and the person can go on."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.jupyter_lab import JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import StepShots


def test_a_browser_reload_keeps_the_session(lab: LabPage, shots: StepShots,
                                             jupyter_lab: JupyterLabServer) -> None:
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, "%load_ext cogym_lab\n%cogym new todo --idle-seconds 30")
    start_cell = lab.run_cell(notebook, 0)
    panel = SessionPanelPage.find(lab.page, start_cell)
    session_id = panel.session_id
    panel.send_chat("Please bring a kazoo")
    panel.chat_message("Please bring a kazoo")
    items = panel.testid("checklist-item")
    expect(items.first).to_be_visible(timeout=UI_TIMEOUT_MS)
    shots.take("before-reload", focus=start_cell, where="start")

    lab.page.reload(wait_until="domcontentloaded")
    lab.wait_until_ready()
    notebook = lab.current_notebook()
    start_cell = lab.cells(notebook).nth(0)
    panel = SessionPanelPage.find(lab.page, start_cell)
    assert panel.session_id == session_id
    panel.chat_message("Please bring a kazoo")  # the chat so far came back with the state
    expect(panel.testid("checklist-item").first).to_be_visible(timeout=UI_TIMEOUT_MS)
    shots.take("after-reload", focus=start_cell, where="start")

    panel.send_chat("Still here after the reload")
    panel.chat_message("Still here after the reload")
    status, snapshot = jupyter_lab.request("GET", f"cogym/api/sessions/{session_id}")
    assert status == 200 and snapshot["status"] == "running", snapshot
    texts = [message["text"] for message in snapshot["state"]["chat"]]
    assert "Please bring a kazoo" in texts and "Still here after the reload" in texts
    shots.take("chatting-after-reload", focus=start_cell, where="start")
