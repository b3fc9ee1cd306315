"""Keys typed in the panel stay in the panel: Shift+Enter in the chat box is a new line (it once
ran the `%cogym new` cell again and started a second session), the arrows move the caret, Escape
leaves the field with its text kept, and Enter sends. Typed with the keyboard, at a wide window
and at 800 px."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.jupyter_lab import JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import StepShots


def test_keys_typed_in_the_panel_never_reach_the_notebook(
        lab: LabPage, shots: StepShots, jupyter_lab: JupyterLabServer) -> None:
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, "%load_ext cogym_lab\n%cogym new todo --idle-seconds 60")
    start_cell = lab.run_cell(notebook, 0)
    panel = SessionPanelPage.find(lab.page, start_cell)
    session_id = panel.session_id
    prompt = start_cell.locator(".jp-InputArea-prompt").inner_text()
    cells = lab.cells(notebook).count()

    def sessions() -> list[str]:
        status, listing = jupyter_lab.request("GET", "cogym/api/sessions")
        assert status == 200, listing
        return [summary["session_id"] for summary in listing["sessions"]]

    before = sessions()
    keyboard = lab.page.keyboard
    chat = panel.testid("chat-input")

    def nothing_ran_in_the_notebook() -> None:
        assert start_cell.locator(".jp-InputArea-prompt").inner_text() == prompt
        assert lab.cells(notebook).count() == cells
        assert panel.session_id == session_id and sessions() == before

    for width, height in ((1600, 1200), (800, 700)):
        lab.page.set_viewport_size({"width": width, "height": height})
        _check_layout(panel, one_column=width < 1000, screen_height=height)
        chat.click()
        keyboard.type("Bring snacks")
        keyboard.press("Shift+Enter")  # a new line, as the box says
        keyboard.type("and water")
        expect(chat).to_have_value("Bring snacks\nand water", timeout=UI_TIMEOUT_MS)
        keyboard.press("ArrowUp")  # the caret goes up a line, not the notebook's active cell
        keyboard.press("End")
        keyboard.type("!")
        expect(chat).to_have_value("Bring snacks!\nand water", timeout=UI_TIMEOUT_MS)
        shots.take(f"two-lines-typed-at-{width}px", focus=start_cell, where="start")
        nothing_ran_in_the_notebook()

        keyboard.press("Escape")  # leaves the field; what was typed stays
        assert not chat.evaluate("(field) => field === document.activeElement")
        expect(chat).to_have_value("Bring snacks!\nand water")
        nothing_ran_in_the_notebook()

        chat.click()
        keyboard.press("Enter")  # sends
        expect(chat).to_have_value("", timeout=UI_TIMEOUT_MS)
        sent = panel.chat_message("and water")
        assert "Bring snacks!" in sent.inner_text()
        shots.take(f"message-sent-at-{width}px", focus=start_cell, where="start")
        nothing_ran_in_the_notebook()
        chat.fill("")


def _check_layout(panel: SessionPanelPage, *, one_column: bool, screen_height: int) -> None:
    """The layout follows the panel's own width (in a narrow notebook the workspace takes the
    whole width, not a 100 px strip), and the panel's body is never taller than the screen.
    Waited for: JupyterLab lays its panels out again a few frames after a resize."""
    body = panel.root.locator(".cogym-body")
    expect(body).to_be_visible()
    session = panel.session_id
    panel.page.wait_for_function(
        """([session, oneColumn, screenHeight]) => {
            const root = document.querySelector(
                `[data-testid=cogym-panel][data-session="${session}"]`);
            const workspace = root && root.querySelector("[data-testid=workspace]");
            const body = root && root.querySelector(".cogym-body");
            if (!workspace || !body) return false;
            const share = workspace.getBoundingClientRect().width
                / root.getBoundingClientRect().width;
            const columns = oneColumn ? share > 0.85 : share < 0.75;
            return columns && body.getBoundingClientRect().height <= 0.8 * screenHeight;
        }""", arg=[session, one_column, screen_height], timeout=UI_TIMEOUT_MS)


def test_running_the_start_cell_again_shows_its_running_session_again(
        lab: LabPage, shots: StepShots, jupyter_lab: JupyterLabServer) -> None:
    """Shift+Enter on the `%cogym new` cell a second time (out of habit) shows the session the
    cell started, still running, instead of starting a second one beside it, unseen."""
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, "%load_ext cogym_lab\n%cogym new todo --idle-seconds 60")
    start_cell = lab.run_cell(notebook, 0)
    first = SessionPanelPage.find(lab.page, start_cell).session_id
    status, listing = jupyter_lab.request("GET", "cogym/api/sessions")
    assert status == 200
    known = [summary["session_id"] for summary in listing["sessions"]]

    again = lab.run_cell(notebook, 0)
    expect(lab.outputs(again).first).to_contain_text("is still running: here it is again",
                                                     timeout=UI_TIMEOUT_MS)
    assert SessionPanelPage.find(lab.page, again).session_id == first
    status, listing = jupyter_lab.request("GET", "cogym/api/sessions")
    assert [summary["session_id"] for summary in listing["sessions"]] == known
    shots.take("the-same-session-shown-again", focus=again, where="start")

    lab.type_in_cell(notebook, 0, "%cogym new todo --idle-seconds 60 --again")
    another = lab.run_cell(notebook, 0)
    assert SessionPanelPage.find(lab.page, another).session_id != first
