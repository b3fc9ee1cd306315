"""A person closes the browser tab that held the session panel: with no panel left, the session
ends once the server's grace period has passed, and its log says why.

The shared ``jupyter_lab`` server keeps its long default grace (a reload there takes several
seconds, and other tests must never lose a session to it), so this test starts a lab server of
its own with a grace of a few seconds.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from cogym_lab.nodes.results import read_events
from cogym_lab.runtime.panels import no_panel_reason
from tests.browser.jupyter_lab import JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage

GRACE = 3.0


class ShortGraceLab(JupyterLabServer):
    """The browser tests' lab server, with ``c.CogymLab.panel_grace_seconds`` set to GRACE."""

    def _prepare_home(self) -> dict[str, str]:
        folders = super()._prepare_home()
        path = Path(folders["JUPYTER_CONFIG_DIR"]) / "jupyter_server_config.json"
        config = json.loads(path.read_text(encoding="utf-8"))
        config["CogymLabApp"]["panel_grace_seconds"] = GRACE
        path.write_text(json.dumps(config), encoding="utf-8")
        return folders


@pytest.fixture
def short_grace_lab(lab_root: Path, tmp_path_factory: pytest.TempPathFactory
                    ) -> Iterator[JupyterLabServer]:
    server = ShortGraceLab(lab_root, tmp_path_factory.mktemp("short-grace-lab"))
    try:
        server.start()
        yield server
    finally:
        server.stop()


def test_closing_the_tab_with_the_panel_ends_the_session(browser: Browser,
                                                         short_grace_lab: JupyterLabServer
                                                         ) -> None:
    context = browser.new_context(viewport={"width": 1600, "height": 1200})
    context.set_default_timeout(UI_TIMEOUT_MS)
    try:
        page = context.new_page()
        lab = LabPage(page, short_grace_lab)
        lab.open()
        notebook = lab.new_notebook_from_launcher()
        lab.type_in_cell(notebook, 0, "%load_ext cogym_lab\n%cogym new todo --idle-seconds 60")
        panel = SessionPanelPage.find(page, lab.run_cell(notebook, 0))
        session_id = panel.session_id
        expect(panel.testid("connection-status")).to_have_attribute("data-state", "open",
                                                                    timeout=UI_TIMEOUT_MS)
        panel.send_chat("Please bring a kazoo")
        panel.chat_message("Please bring a kazoo")
        status, snapshot = short_grace_lab.request("GET", f"cogym/api/sessions/{session_id}")
        assert status == 200 and snapshot["status"] == "running", snapshot

        page.close()  # the person closes the tab: the panel's WebSocket goes with it

        deadline = time.monotonic() + 120
        while snapshot["status"] == "running":
            assert time.monotonic() < deadline, "the session did not end"
            time.sleep(0.5)
            status, snapshot = short_grace_lab.request("GET",
                                                       f"cogym/api/sessions/{session_id}")
            assert status == 200, snapshot
    finally:
        context.close()
    expected = no_panel_reason(GRACE, ever_opened=True)
    assert snapshot["end_reason"] == expected
    folder = short_grace_lab.results_dir / session_id
    end = [event for event in read_events(folder) if event.type == "end"]
    assert [event.info["reason"] for event in end] == [expected]
    assert json.loads((folder / "session.json").read_text())["end_reason"] == expected
