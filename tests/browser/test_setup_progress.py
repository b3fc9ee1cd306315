"""A session whose task must first build its paper index: the panel shows a progress bar with
the time left while the server goes on answering other requests (the build once ran on the
server's event loop and froze it for about a minute), and hides it when the index is ready."""

from __future__ import annotations

import time
import uuid

from playwright.sync_api import expect

from tests.browser.jupyter_lab import JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import StepShots

# Enough papers that the build lasts several seconds here; a fresh cache folder, so it builds.
INDEX_LIMIT = 120_000


def test_the_index_build_shows_progress_and_never_blocks_the_server(
        lab: LabPage, shots: StepShots, jupyter_lab: JupyterLabServer) -> None:
    notebook = lab.new_notebook_from_launcher()
    cache = f"index-cache-{uuid.uuid4().hex[:8]}"  # inside the server's results folder
    lab.type_in_cell(notebook, 0, "%load_ext cogym_lab\n%cogym new related_work --instance 0 "
                                  f"--env-arg index_limit={INDEX_LIMIT} "
                                  f"--env-arg index_cache={cache}")
    start_cell = lab.run_cell(notebook, 0)
    panel = SessionPanelPage.find(lab.page, start_cell)
    setup = panel.testid("view-setup")
    expect(setup).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(panel.testid("setup-label")).to_contain_text("Building the paper search index",
                                                        timeout=UI_TIMEOUT_MS)
    shots.take("index-build-progress", focus=start_cell, where="start")

    asked = time.monotonic()
    status, listing = jupyter_lab.request("GET", "cogym/api/sessions")
    waited = time.monotonic() - asked
    assert status == 200 and any(s["session_id"] == panel.session_id
                                 for s in listing["sessions"])
    # Answered while the build still runs: a build on the event loop would answer only after.
    assert setup.is_visible(), "the index build ended before the request was answered"
    (shots.folder / "request-during-build.txt").write_text(
        f"GET cogym/api/sessions during the index build answered in {waited * 1000:.0f} ms\n")
    label = panel.testid("setup-label").inner_text()
    assert "%" in label and ("left" in label or "estimating" in label), label
    fraction = float(setup.get_attribute("data-fraction") or "0")
    assert 0.0 <= fraction < 1.0

    expect(setup).to_be_hidden(timeout=240_000)  # the index is ready: the bar goes
    expect(panel.testid("agent-status").first).to_be_visible(timeout=UI_TIMEOUT_MS)
    shots.take("index-ready", focus=start_cell, where="start")
