"""The person's controls in the panel: rejecting an agent's confirmation request runs nothing, and
pausing the agent holds it (it acts on nothing until resumed, then catches up)."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.jupyter_lab import JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import StepShots


def test_the_person_rejects_a_request_and_pauses_and_resumes_the_agent(
        lab: LabPage, shots: StepShots, jupyter_lab: JupyterLabServer) -> None:
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, "%load_ext cogym_lab\n%cogym new todo --idle-seconds 30")
    start_cell = lab.run_cell(notebook, 0)
    panel = SessionPanelPage.find(lab.page, start_cell)

    def state() -> dict:
        status, snapshot = jupyter_lab.request("GET", f"cogym/api/sessions/{panel.session_id}")
        assert status == 200, snapshot
        return snapshot["state"]

    def checklist() -> list[str]:
        return [item["text"] for item in
                state()["views"]["user"]["components"][0]["content"]]

    # The example agent fills the list, then asks before adding an item beyond the brief.
    confirmation = panel.pending_confirmation()
    proposed = panel.testid("confirmation-preview").first.inner_text()
    shots.take("agent-asks-for-approval", focus=start_cell, where="start")
    confirmation.locator('[data-testid="confirm-reject"]').click()
    expect(panel.testid("confirmation")).to_have_count(0, timeout=UI_TIMEOUT_MS)
    panel.chat_message("The list has")  # the agent carries on without the extra item
    assert state()["pending_confirmations"] == []
    extra = proposed.split('text="')[-1].split('"')[0]
    assert extra and extra not in checklist(), (proposed, checklist())
    shots.take("request-rejected", focus=start_cell, where="start")

    pause = panel.testid("pause-button")
    pause.click()
    expect(pause).to_have_attribute("data-state", "paused", timeout=UI_TIMEOUT_MS)
    expect(panel.testid("agent-status").first).to_have_attribute("data-status", "paused",
                                                                 timeout=UI_TIMEOUT_MS)
    assert state()["paused"] == ["agent"]
    panel.send_chat("Please bring a kazoo")
    panel.chat_message("Please bring a kazoo")
    assert "kazoo" not in checklist()  # a paused agent receives nothing, so it cannot act
    shots.take("agent-paused", focus=start_cell, where="start")

    pause.click()
    expect(pause).to_have_attribute("data-state", "running", timeout=UI_TIMEOUT_MS)
    expect(panel.testid("checklist-item").filter(has_text="kazoo")).to_have_count(
        1, timeout=UI_TIMEOUT_MS)  # resumed, it sees the message it missed and acts on it
    assert state()["paused"] == [] and "kazoo" in checklist()
    shots.take("agent-resumed-and-caught-up", focus=start_cell, where="start")
