"""The chat beside the notebook: the chat and the agent's status in JupyterLab's right side area
while the workspace stays in the cell's panel. Typed with the keyboard while the notebook
scrolls under the mouse, at 1280 px and at 800 px, and after a reload of the page.

The keys typed beside the notebook stay there (Enter sends, Shift+Enter is a new line, Escape
leaves the field with its text kept, and the notebook's command-mode keys do nothing to the cell
list after it); the side chat stays in sight and keeps the focus while the notebook scrolls; the
cell's panel gives the chat up while the side shows it and takes it back when the side area is
collapsed or the side chat closed. Screenshots go to the test's tmp folder.

The browser tests' kernels default to the chat in the cell (COGYM_CHAT=cell, see conftest.py):
these tests name the place they want.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.browser.beside_page import (
    LONG_OUTPUT,
    close_the_file_browser,
    execution_counts,
    in_viewport,
    is_focused,
    scroll_the_notebook,
    side_chat,
    side_chats,
)
from tests.browser.jupyter_lab import JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import StepShots


def test_the_chat_beside_the_notebook_stays_in_sight_and_keeps_its_keys(
        lab: LabPage, jupyter_lab: JupyterLabServer, page: Page, tmp_path: Path,
        request) -> None:
    shots = StepShots(page, request.node.name, root=tmp_path / "shots")
    page.set_viewport_size({"width": 1280, "height": 900})
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0,
                     "%load_ext cogym_lab\n%cogym new todo --idle-seconds 90 --chat side")
    start_cell = lab.run_cell(notebook, 0)
    panel = SessionPanelPage.find(page, start_cell)
    session_id = panel.session_id
    chat = side_chat(page, session_id)

    # The cell's panel leaves the chat to the side: the workspace takes its whole width.
    expect(panel.root).to_have_attribute("data-chat", "beside", timeout=UI_TIMEOUT_MS)
    expect(panel.testid("chat-input")).to_be_hidden()
    expect(panel.testid("chat-beside-note")).to_be_visible()
    expect(panel.testid("workspace")).to_be_visible()
    expect(chat.testid("agent-statuses")).to_be_visible()

    # A long notebook around the session: cells of work with long outputs.
    for _ in range(3):
        index = lab.append_cell(notebook, LONG_OUTPUT)
        lab.run_cell(notebook, index)
    cells = lab.cells(notebook).count()
    prompts = execution_counts(notebook)

    def nothing_reached_the_notebook() -> None:
        assert lab.cells(notebook).count() == cells
        now = execution_counts(notebook)
        assert now == prompts, (prompts, now)
        status, listing = jupyter_lab.request("GET", "cogym/api/sessions")
        assert status == 200
        running = [s["session_id"] for s in listing["sessions"] if s["status"] == "running"]
        assert running == [session_id], running

    keyboard = page.keyboard
    field = chat.testid("chat-input")
    for width, height in ((1280, 900), (800, 700)):
        page.set_viewport_size({"width": width, "height": height})
        if width < 1000:  # the file browser, the notebook and the chat do not fit side by side
            close_the_file_browser(page)
        field.click()
        keyboard.type(f"Bring snacks at {width}")
        # The notebook scrolls under the mouse while the person types beside it.
        scroll_the_notebook(page, notebook, 1500)
        keyboard.press("Shift+Enter")  # a new line, as the box says
        keyboard.type("and water")
        expect(field).to_have_value(f"Bring snacks at {width}\nand water")
        assert is_focused(field), "the side chat lost the focus while the notebook scrolled"
        assert in_viewport(page, field), "the side chat left the window"
        shots.take(f"typing-beside-a-scrolled-notebook-at-{width}px")
        nothing_reached_the_notebook()

        keyboard.press("Escape")  # leaves the field; what was typed stays
        assert not is_focused(field)
        expect(field).to_have_value(f"Bring snacks at {width}\nand water")
        for key in ("b", "a", "d", "d", "x"):  # the notebook's command-mode keys: not applied
            keyboard.press(key)
        nothing_reached_the_notebook()

        field.click()
        keyboard.press("End")
        keyboard.press("Enter")  # sends
        expect(field).to_have_value("", timeout=UI_TIMEOUT_MS)
        sent = chat.chat_message(f"Bring snacks at {width}")
        assert "and water" in sent.inner_text()
        nothing_reached_the_notebook()

        # Beside what the agent changes: the workspace in the cell and the chat both in sight.
        start_cell.evaluate("(cell) => cell.scrollIntoView({block: 'start'})")
        workspace = panel.testid("workspace")
        expect(workspace).to_be_in_viewport()
        expect(field).to_be_in_viewport()
        assert chat.root.bounding_box()["x"] >= (  # type: ignore[index]
            workspace.bounding_box()["x"] + workspace.bounding_box()["width"] - 1)  # type: ignore[index]
        shots.take(f"workspace-and-chat-side-by-side-at-{width}px")

    # A reload brings the side chat back, with its messages, beside the workspace.
    page.set_viewport_size({"width": 1280, "height": 900})
    page.reload(wait_until="domcontentloaded")
    lab.wait_until_ready()
    notebook = lab.current_notebook()
    panel = SessionPanelPage.find(page, lab.cells(notebook).nth(0))
    assert panel.session_id == session_id
    chat = side_chat(page, session_id)
    chat.chat_message("Bring snacks at 1280")
    chat.chat_message("Bring snacks at 800")
    expect(panel.root).to_have_attribute("data-chat", "beside", timeout=UI_TIMEOUT_MS)
    chat.type_chat("Still beside after the reload")
    chat.chat_message("Still beside after the reload")
    lab.cells(notebook).nth(0).evaluate("(cell) => cell.scrollIntoView({block: 'start'})")
    shots.take("after-the-reload-at-1280px")

    # Collapsing the side area gives the chat back to the cell's panel, and opening it again
    # takes it beside once more.
    page.set_viewport_size({"width": 800, "height": 700})
    side_tab = page.locator(".jp-SideBar.jp-mod-right .lm-TabBar-tab.lm-mod-current")
    side_tab.click()
    expect(panel.root).to_have_attribute("data-chat", "here", timeout=UI_TIMEOUT_MS)
    expect(panel.testid("chat-input")).to_be_visible()
    panel.chat_message("Still beside after the reload")
    shots.take("side-area-collapsed-chat-back-in-the-cell-at-800px",
               focus=lab.cells(notebook).nth(0), where="start")
    page.locator(".jp-SideBar.jp-mod-right .lm-TabBar-tab", has_text="Chat").first.click()
    expect(panel.root).to_have_attribute("data-chat", "beside", timeout=UI_TIMEOUT_MS)

    # cogym_session.chat_in_cell() closes the side chat: its tab goes, the cell has the chat.
    index = lab.append_cell(notebook, "cogym_session.chat_in_cell()")
    lab.run_cell(notebook, index)
    expect(page.locator('.jupyterlab-sidecar [data-part="chat"]')).to_have_count(
        0, timeout=UI_TIMEOUT_MS)
    expect(panel.root).to_have_attribute("data-chat", "here", timeout=UI_TIMEOUT_MS)


def test_with_the_chat_in_the_cell_nothing_goes_beside(lab: LabPage, page: Page,
                                                       tmp_path: Path, request) -> None:
    """``--chat cell``: the whole panel in the cell, as before, and nothing in the side area.
    At 800 px the chat sits below the workspace (the screenshots compare the two places)."""
    shots = StepShots(page, request.node.name, root=tmp_path / "shots")
    page.set_viewport_size({"width": 1280, "height": 900})
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0,
                     "%load_ext cogym_lab\n%cogym new todo --idle-seconds 60 --chat cell")
    start_cell = lab.run_cell(notebook, 0)
    panel = SessionPanelPage.find(page, start_cell)
    panel.type_chat("All in the cell")
    panel.chat_message("All in the cell")
    expect(panel.root).to_have_attribute("data-chat", "here")
    expect(page.locator('[data-testid="cogym-panel"][data-part="chat"]')).to_have_count(0)
    for width, height in ((1280, 900), (800, 700)):
        page.set_viewport_size({"width": width, "height": height})
        if width < 1000:
            close_the_file_browser(page)
        start_cell.evaluate("(cell) => cell.scrollIntoView({block: 'start'})")
        expect(panel.testid("workspace")).to_be_in_viewport()
        shots.take(f"chat-in-the-cell-at-{width}px")


def test_the_side_chat_goes_with_its_notebook_and_comes_back_once_with_it(
        lab: LabPage, jupyter_lab: JupyterLabServer, page: Page, tmp_path: Path,
        request) -> None:
    """Closing the notebook closes its chat beside it (the side area keeps no chat cut off from
    its kernel); opening the notebook again brings one side chat back, not two, with the
    messages so far, and the cell's panel leaves the chat to it again."""
    shots = StepShots(page, request.node.name, root=tmp_path / "shots")
    page.set_viewport_size({"width": 1280, "height": 900})
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0,
                     "%load_ext cogym_lab\n%cogym new todo --idle-seconds 120 --chat side")
    panel = SessionPanelPage.find(page, lab.run_cell(notebook, 0))
    session_id = panel.session_id
    chat = side_chat(page, session_id)
    chat.type_chat("Before closing")
    chat.chat_message("Before closing")
    status, summary = jupyter_lab.request("GET", f"cogym/api/sessions/{session_id}")
    assert status == 200, summary
    name = Path(summary["created_in"]["path"]).name

    lab.close_notebook(notebook, name)
    expect(page.locator('[data-testid="cogym-panel"]')).to_have_count(0, timeout=UI_TIMEOUT_MS)
    expect(page.locator(".jupyterlab-sidecar")).to_have_count(0)  # its tab went too
    shots.take("notebook-closed-no-side-chat-left")

    notebook = lab.reopen_notebook(name)
    panel = SessionPanelPage.find(page, lab.cells(notebook).nth(0))
    chat = side_chat(page, session_id)
    expect(side_chats(page, session_id)).to_have_count(1)
    chat.chat_message("Before closing")
    expect(panel.root).to_have_attribute("data-chat", "beside", timeout=UI_TIMEOUT_MS)
    chat.type_chat("After reopening")
    chat.chat_message("After reopening")
    shots.take("reopened-one-side-chat")
