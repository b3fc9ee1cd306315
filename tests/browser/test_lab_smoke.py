"""The browser harness itself: JupyterLab loads in Chromium, runs a cell in a real kernel, and
the server has the cogym_lab and real-time collaboration extensions on."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.jupyter_lab import JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.screenshots import StepShots


def test_server_has_the_cogym_and_collaboration_extensions(jupyter_lab: JupyterLabServer) -> None:
    status, listing = jupyter_lab.request("GET", "cogym/api/sessions")
    assert status == 200 and isinstance(listing["sessions"], list), listing
    status, _ = jupyter_lab.request("PUT", "api/contents/probe.txt",
                                    {"type": "file", "format": "text", "content": "hi"})
    assert status in (200, 201)
    status, room = jupyter_lab.request("PUT", "api/collaboration/session/probe.txt",
                                       {"format": "text", "type": "file"})
    assert status in (200, 201), room  # jupyter_server_ydoc hands out a room for the file
    assert room["fileId"]
    status, _ = jupyter_lab.request("GET", "cogym/api/sessions", authenticated=False)
    assert status == 403


def test_a_new_notebook_runs_a_cell(lab: LabPage, shots: StepShots) -> None:
    shots.take("jupyterlab-open")
    panel = lab.new_notebook_from_launcher()
    shots.take("new-notebook")
    lab.type_in_cell(panel, 0, "1+1")
    cell = lab.run_cell(panel, 0)
    expect(lab.outputs(cell)).to_have_text("2", timeout=UI_TIMEOUT_MS)
    shots.take("cell-ran")
