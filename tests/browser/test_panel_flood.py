"""A person who sends faster than the server's action rate is told so in the panel: each action
is either applied or refused with a message, the refused chat messages are marked "not sent",
and the connection stays open."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.jupyter_lab import BROWSER_LIMITS, JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import StepShots

MESSAGES = 16  # well past the burst the lab's server allows (BROWSER_LIMITS)
NOT_SENT = '[data-testid="chat-pending"][data-state="failed"]'


def test_typing_faster_than_the_rate_shows_the_refusal(
        lab: LabPage, shots: StepShots, jupyter_lab: JupyterLabServer) -> None:
    assert MESSAGES > 2 * BROWSER_LIMITS["ws_action_burst"]
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, "%load_ext cogym_lab\n%cogym new todo --idle-seconds 60")
    start_cell = lab.run_cell(notebook, 0)
    panel = SessionPanelPage.find(lab.page, start_cell)
    shots.take("panel-connected", focus=start_cell, where="start")

    for index in range(MESSAGES):  # Enter after each, as fast as the keyboard goes
        panel.type_chat(f"quick note {index}")

    error = panel.testid("panel-error")
    expect(error).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(error).to_have_attribute("data-code", "rate_limited")
    expect(panel.testid("panel-error-text")).to_contain_text("Too many actions at once")
    refused = panel.root.locator(NOT_SENT)
    expect(refused.first).to_contain_text("quick note", timeout=UI_TIMEOUT_MS)
    expect(panel.testid("connection-status")).to_have_attribute("data-state", "open")

    # Every message is accounted for: shown in the chat (applied) or marked "not sent".
    lab.page.wait_for_function(
        """([root, total]) => {
            const shown = [...root.querySelectorAll('[data-testid=chat-message][data-sender=user]')]
                .filter((n) => n.textContent.includes('quick note')).length;
            const failed = root.querySelectorAll(
                '[data-testid=chat-pending][data-state=failed]').length;
            return shown + failed === total && shown > 0 && failed > 0;
        }""", arg=[panel.root.element_handle(), MESSAGES], timeout=UI_TIMEOUT_MS)
    shots.take("refused-messages-shown", focus=panel.root, where="start")

    status, snapshot = jupyter_lab.request("GET", f"cogym/api/sessions/{panel.session_id}")
    assert status == 200 and snapshot["status"] == "running", snapshot
    applied = [m["text"] for m in snapshot["state"]["chat"]
               if m["sender"] == "user" and m["text"].startswith("quick note")]
    assert len(applied) + refused.count() == MESSAGES, (applied, refused.count())

    panel.testid("panel-error-dismiss").click()
    expect(error).to_be_hidden()
    # "Send it again in a moment": a person who waits until the burst has refilled is let through
    refill = BROWSER_LIMITS["ws_action_burst"] / BROWSER_LIMITS["ws_actions_per_second"]
    panel.page.wait_for_timeout((refill + 1) * 1000)
    panel.type_chat("one more, calmly")  # the connection carries on
    panel.chat_message("one more, calmly")
    shots.take("after-dismissing", focus=start_cell, where="start")
