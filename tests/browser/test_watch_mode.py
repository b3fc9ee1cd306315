"""Watch mode in a real JupyterLab: a session with no person seat (an agent and a simulated user)
shows as the session panel, live and read-only, when the cell displays its handle.

The live part runs the `collaborative` team (an LM agent and an LM simulated user) on the todo
task, with the scripted LM answering slowly, so that the session takes a while and the panel can
be seen changing. The todo task's rule-based `example` team is also displayed the same way; it
needs no LM but finishes in a fraction of a second, before any browser connects, so it shows the
end state rather than the work in progress.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from playwright.sync_api import expect

from cogym_lab.testing import Reply
from tests.browser.jupyter_lab import JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import StepShots
from tests.browser.scripted_lm import ScriptedLM
from tests.support.lm_scripts import TodoRolePlay

#: Seconds the scripted LM takes over each answer: the session runs for tens of seconds.
THINK_SECONDS = 1.0


class SlowRolePlay:
    """The todo role play (a helpful agent, a user who wants a rain jacket), answering slowly."""

    def __init__(self) -> None:
        self.play = TodoRolePlay(min_items=6)
        self.release = threading.Event()  # set: answer at once (the test is over)

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        self.release.wait(THINK_SECONDS)
        return self.play(body)


def test_watching_an_agent_and_a_simulated_user_live(
        lab: LabPage, lm: ScriptedLM, shots: StepShots, jupyter_lab: JupyterLabServer) -> None:
    play = SlowRolePlay()
    lm.use(play)
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, 'import cogym_lab\nrun = cogym_lab.new_session("todo", '
                                  'team="collaborative", role=None, idle_seconds=60)\nrun')
    cell = lab.run_cell(notebook, 0)
    panel = SessionPanelPage.find(lab.page, cell)
    prompt = cell.locator(".jp-InputArea-prompt").inner_text()
    cells = lab.cells(notebook).count()

    expect(panel.root).to_have_attribute("data-readonly", "true")
    expect(panel.root).to_have_attribute("data-role", "user")
    expect(panel.testid("your-role")).to_have_text("Watching user (read-only)")
    chat = panel.testid("chat-input")
    expect(chat).to_be_disabled()
    for testid in ("chat-send", "pause-button", "finish-button", "action-submit"):
        expect(panel.testid(testid)).to_be_disabled()

    # Live: the simulated user's message, then the agent's items, appear while it runs.
    first = panel.chat_message("rain jacket")
    expect(first).to_have_attribute("data-sender", "user")
    items = panel.testid("checklist-item")
    expect(items.first).to_be_visible(timeout=UI_TIMEOUT_MS)
    seen = items.count()
    assert _status(jupyter_lab, panel.session_id) == "running"
    shots.take("watching-while-the-agent-works", focus=panel.root, where="start")
    deadline = time.monotonic() + UI_TIMEOUT_MS / 1000
    while items.count() <= seen:  # another item arrives without anything done in the page
        assert time.monotonic() < deadline, "the panel did not change while the session ran"
        lab.page.wait_for_timeout(200)
    assert _status(jupyter_lab, panel.session_id) == "running"
    agent = panel.root.locator('[data-testid="agent-status"][data-role="agent"]')
    expect(agent).to_be_visible()
    expect(agent.locator('[data-testid="agent-status-since"]')).not_to_have_text("")
    shots.take("more-items-arrived", focus=panel.root, where="start")

    # Keys in the disabled chat box: nothing sent, nothing typed, the cell not run again.
    sessions_before = _sessions(jupyter_lab)
    messages = panel.testid("chat-message").count()
    chat.click(force=True)  # a person's click: it focuses the box, inside the panel
    assert chat.evaluate("(field) => field === document.activeElement")
    keyboard = lab.page.keyboard
    keyboard.type("hello")
    keyboard.press("Enter")
    keyboard.press("Shift+Enter")
    expect(chat).to_have_value("")
    keyboard.press("Escape")
    assert not chat.evaluate("(field) => field === document.activeElement")
    assert cell.locator(".jp-InputArea-prompt").inner_text() == prompt
    assert lab.cells(notebook).count() == cells
    assert _sessions(jupyter_lab) == sessions_before
    assert panel.testid("chat-pending").count() == 0
    assert panel.testid("chat-message").filter(has_text="hello").count() == 0
    assert panel.testid("chat-message").count() >= messages
    shots.take("keys-in-the-read-only-chat-box", focus=panel.root, where="start")

    # The end, as the user finishes: the scores card as for a person, and no rating form.
    play.release.set()
    expect(panel.testid("scores-card")).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(panel.testid("rating-form")).to_be_hidden()
    assert _status(jupyter_lab, panel.session_id) != "running"
    shots.take("the-end-with-scores", focus=panel.testid("scores-card"), where="start")


def test_the_example_team_shows_its_end_read_only(
        lab: LabPage, shots: StepShots, jupyter_lab: JupyterLabServer) -> None:
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, 'import cogym_lab\nrun = cogym_lab.new_session("todo", '
                                  'team="example", role=None)\nrun')
    cell = lab.run_cell(notebook, 0)
    panel = SessionPanelPage.find(lab.page, cell)
    expect(panel.testid("your-role")).to_have_text("Watching user (read-only)")
    panel.chat_message("Please bring")
    expect(panel.testid("checklist-item").first).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(panel.testid("scores-card")).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(panel.testid("rating-form")).to_be_hidden()
    expect(panel.testid("chat-input")).to_be_disabled()
    shots.take("example-team-ended", focus=panel.root, where="start")


def _sessions(lab: JupyterLabServer) -> list[str]:
    status, listing = lab.request("GET", "cogym/api/sessions")
    assert status == 200, listing
    return [summary["session_id"] for summary in listing["sessions"]]


def _status(lab: JupyterLabServer, session_id: str) -> str:
    status, summary = lab.request("GET", f"cogym/api/sessions/{session_id}")
    assert status == 200, summary
    return str(summary["status"])
