"""A person closes the browser tab that held the session panel, and comes back later: the session
went on meanwhile, and reopening the notebook shows its panel again, attached to the same
running session, caught up.

Closing the tab used to end a session after a grace of 120 s with no panel. This test's lab
server of its own still carries that old setting (``c.CogymLab.panel_grace_seconds``), scaled
down to OLD_GRACE, and keeps the tab closed several times as long: the setting no longer ends
anything, and the session runs on until no one has been at it for hours.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.jupyter_lab import JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import StepShots

OLD_GRACE = 2.0
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class OldGraceLab(JupyterLabServer):
    """The browser tests' lab server, with the old ``panel_grace_seconds`` set to OLD_GRACE."""

    def _prepare_home(self) -> dict[str, str]:
        folders = super()._prepare_home()
        path = Path(folders["JUPYTER_CONFIG_DIR"]) / "jupyter_server_config.json"
        config = json.loads(path.read_text(encoding="utf-8"))
        config["CogymLabApp"]["panel_grace_seconds"] = OLD_GRACE
        path.write_text(json.dumps(config), encoding="utf-8")
        return folders


@pytest.fixture
def old_grace_lab(lab_root: Path, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[JupyterLabServer]:
    server = OldGraceLab(lab_root, tmp_path_factory.mktemp("old-grace-lab"))
    try:
        server.start()
        yield server
    finally:
        server.stop()


def saved_panel_output(notebook_file: Path) -> dict[str, object]:
    """The first cell's output that holds the panel, as the notebook file has it."""
    saved = json.loads(notebook_file.read_text(encoding="utf-8"))
    outputs = saved["cells"][0].get("outputs", [])
    return next((output["data"] for output in outputs
                 if WIDGET_VIEW in output.get("data", {})), {})


def test_closing_the_tab_keeps_the_session_and_reopening_the_notebook_reattaches_it(
        browser: Browser, old_grace_lab: JupyterLabServer,
        request: pytest.FixtureRequest) -> None:
    context = browser.new_context(viewport={"width": 1600, "height": 1200})
    context.set_default_timeout(UI_TIMEOUT_MS)
    try:
        page = context.new_page()
        shots = StepShots(page, request.node.name)
        lab = LabPage(page, old_grace_lab)
        lab.open()
        notebook = lab.new_notebook_from_launcher()
        lab.type_in_cell(notebook, 0, "%load_ext cogym_lab\n%cogym new todo --idle-seconds 600")
        start_cell = lab.run_cell(notebook, 0)
        panel = SessionPanelPage.find(page, start_cell)
        session_id = panel.session_id
        panel.send_chat("Please bring a kazoo")
        panel.chat_message("Please bring a kazoo")
        status, snapshot = old_grace_lab.request("GET", f"cogym/api/sessions/{session_id}")
        assert status == 200 and snapshot["status"] == "running", snapshot
        path = snapshot["created_in"]["path"]  # the server knows the notebook that made it
        assert path.endswith(".ipynb") and snapshot["created_in"]["cell_id"]

        # The person saves (Ctrl+S in command mode): the panel's output is in the file, with
        # words beside the widget view for wherever it cannot be drawn.
        start_cell.locator(".jp-InputArea-prompt").click()
        page.keyboard.press("Control+s")
        notebook_file = old_grace_lab.root_dir / path
        deadline = time.monotonic() + UI_TIMEOUT_MS / 1000
        while not saved_panel_output(notebook_file):
            assert time.monotonic() < deadline, "the panel's output was not saved"
            time.sleep(0.5)
        data = saved_panel_output(notebook_file)
        assert f'cogym_lab.attach("{session_id}")' in str(data["text/plain"])
        assert "object at 0x" not in str(data["text/plain"])
        shots.take("before-closing-the-tab", focus=start_cell, where="start")

        page.close()  # the panel's WebSocket goes with the tab
        time.sleep(3 * OLD_GRACE)  # closed for longer than the old grace
        status, snapshot = old_grace_lab.request("GET", f"cogym/api/sessions/{session_id}")
        assert status == 200 and snapshot["status"] == "running", snapshot["end_reason"]

        page = context.new_page()
        shots.page = page
        lab = LabPage(page, old_grace_lab)
        notebook = lab.open_notebook(path)
        start_cell = lab.cells(notebook).nth(0)
        panel = SessionPanelPage.find(page, start_cell)  # drawn again, and connected
        assert panel.session_id == session_id
        panel.chat_message("Please bring a kazoo")  # the chat so far came back with the state
        shots.take("after-reopening-the-notebook", focus=start_cell, where="start")

        panel.type_chat("Back after closing the tab")
        panel.chat_message("Back after closing the tab")
        status, snapshot = old_grace_lab.request("GET", f"cogym/api/sessions/{session_id}")
        assert status == 200 and snapshot["status"] == "running", snapshot
        texts = [message["text"] for message in snapshot["state"]["chat"]]
        assert "Please bring a kazoo" in texts and "Back after closing the tab" in texts
        expect(panel.testid("connection-status")).to_have_attribute("data-state", "open")
        shots.take("chatting-after-reopening", focus=start_cell, where="start")
    finally:
        context.close()
