"""A newcomer's first hour in the JupyterLab that ``bash scripts/lab.sh`` starts: the README's
first command, for real. The script installs cogym_lab and JupyterLab into a new environment
(minutes: pip from the configured index), then the person, in Chromium, runs ``!cogym-lab`` in a
cell, starts a session, closes the notebook for longer than the old panel grace and comes back,
reloads the page, and types in the chat with the keyboard.

tests/project/test_lab_script.py checks what the script asks for with stand-ins; here nothing is
a stand-in but the LM (the scripted loopback server, set as COGYM_MODEL and OPENAI_BASE_URL the
way a person would). The environment is made once per module, in a temporary folder; set
COGYM_LAB_TEST_VENV to a folder of your own to keep it between runs (the script then only
reinstalls cogym_lab). Set COGYM_LAB_SHOTS_DIR to also copy the screenshots there.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

from cogym_lab.core import Action
from cogym_lab.lm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from tests.browser.agent_script import AgentStep, CueAgent
from tests.browser.jupyter_lab import ServerSession
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.lab_script import INSTALL_TIMEOUT, LabScriptServer, copy_checkout
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import ARTIFACTS_DIR, StepShots
from tests.browser.scripted_lm import ScriptedLM

# The first test also waits for the install; each test then takes a minute or two.
pytestmark = pytest.mark.timeout(INSTALL_TIMEOUT + 600)

OLD_GRACE = 5  # seconds: the old panel grace (120 s by default), now ignored, scaled down
CLOSED_FOR = 12  # seconds the notebook stays closed: well past the old grace
SIZES = ((1280, 900), (800, 900))
START = "%load_ext cogym_lab\n%cogym new todo --team collaborative --idle-seconds 600"
ASK = "Please bring a kazoo"
AGENT_REPLY = "A kazoo it is: I put it on the list."


@pytest.fixture(scope="module")
def lab_script(tmp_path_factory: pytest.TempPathFactory, scripted_lm: ScriptedLM
               ) -> Iterator[LabScriptServer]:
    """JupyterLab started by ``scripts/lab.sh`` in a copy of the checkout, for a newcomer (new
    HOME and cache, no COGYM_DATA), its agents on the scripted LM."""
    work = tmp_path_factory.mktemp("lab-script")
    kept_venv = os.environ.get("COGYM_LAB_TEST_VENV")
    server = LabScriptServer(
        copy_checkout(work / "checkout"),
        venv=Path(kept_venv).resolve() if kept_venv else work / "venv",
        home=work / "home", log_path=work / "lab-script.log",
        extra_env={ENV_MODEL: "scripted", ENV_BASE_URL: scripted_lm.base_url,
                   ENV_API_KEY: secrets.token_hex(8)},
        extra_args=[f"--CogymLab.panel_grace_seconds={OLD_GRACE}"])
    try:
        server.start()
        print(f"\nscripts/lab.sh answered after {server.started_in:.0f} s:",
              *server.phase_lines(), sep="\n  ")
        yield server
    finally:
        server.stop()
        ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
        if server.log_path.exists():
            shutil.copyfile(server.log_path, ARTIFACTS_DIR / "lab-script.log")


@pytest.fixture(autouse=True)
def no_session_outlives_its_test(lab_script: LabScriptServer) -> Iterator[None]:
    """In place of the package's fixture of this name, which would start the other harness's
    server: end the sessions a test left running on this one."""
    yield
    status, listing = lab_script.request("GET", "cogym/api/sessions")
    assert status == 200, listing
    for summary in listing["sessions"]:
        if summary.get("status") == "running":
            lab_script.request("DELETE", f"cogym/api/sessions/{summary['session_id']}")


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    context = browser.new_context(viewport={"width": SIZES[0][0], "height": SIZES[0][1]})
    context.set_default_timeout(UI_TIMEOUT_MS)
    yield context
    context.close()


@pytest.fixture
def lab(context: BrowserContext, lab_script: LabScriptServer) -> LabPage:
    lab_page = LabPage(context.new_page(), lab_script)
    lab_page.open()
    return lab_page


@pytest.fixture
def shots(lab: LabPage, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[StepShots]:
    """Screenshots in the test's tmp folder, copied to test-artifacts/browser/<test> (and to
    COGYM_LAB_SHOTS_DIR when it is set); a failed test's last view is one of them."""
    taker = StepShots(lab.page, request.node.name, root=tmp_path / "shots")
    yield taker
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        with contextlib.suppress(Exception):  # a crashed page: the server's log is still kept
            taker.take("failure")
    extra = os.environ.get("COGYM_LAB_SHOTS_DIR")
    for root in (ARTIFACTS_DIR, *([Path(extra)] if extra else [])):
        shutil.rmtree(root / taker.folder.name, ignore_errors=True)  # an earlier run's
        shutil.copytree(taker.folder, root / taker.folder.name)


# -- typing into a chat, wherever it is ---------------------------------------------------------

def type_lines(page: Page, field: Locator, lines: list[str]) -> None:
    """Click ``field`` and type ``lines`` key by key, Shift+Enter between them (a new line in
    the chat, never "run the cell")."""
    field.click()
    for number, line in enumerate(lines):
        if number:
            page.keyboard.press("Shift+Enter")
        page.keyboard.type(line)
    expect(field).to_have_value("\n".join(lines), timeout=UI_TIMEOUT_MS)


def leave_with_escape(page: Page, field: Locator) -> None:
    """Escape leaves the field, and keeps what was typed."""
    typed = field.input_value()
    page.keyboard.press("Escape")
    assert not field.evaluate("(node) => node === document.activeElement")
    expect(field).to_have_value(typed)


def send_with_enter(page: Page, field: Locator) -> None:
    """Back in the field, Enter sends: the field empties."""
    field.click()
    page.keyboard.press("Enter")
    expect(field).to_have_value("", timeout=UI_TIMEOUT_MS)


class NotebookWatch:
    """What keys leaking into the notebook would change: its cells (a, b, dd, m in command
    mode), their sources and prompts (Shift+Enter runs a cell), the active cell, the sessions
    on the server (running the start cell again)."""

    def __init__(self, lab: LabPage, notebook: Locator) -> None:
        self.lab = lab
        self.notebook = notebook
        self.before = self.look()

    def look(self) -> dict[str, object]:
        status, listing = self.lab.lab.request("GET", "cogym/api/sessions")
        assert status == 200, listing
        return {
            "cells": self.notebook.evaluate("""(panel) => [...panel.querySelectorAll(
                '.jp-Notebook .jp-Cell')].map((cell) => ({
                    kind: [...cell.classList].find((name) => /^jp-(Code|Markdown|Raw)Cell$/
                                                    .test(name)),
                    source: cell.querySelector('.jp-InputArea-editor')?.textContent,
                    prompt: cell.querySelector('.jp-InputArea-prompt')?.textContent}))"""),
            "active": self.notebook.evaluate("""(panel) => [...panel.querySelectorAll(
                '.jp-Notebook .jp-Cell')].findIndex((cell) =>
                    cell.classList.contains('jp-mod-active'))"""),
            "sessions": sorted(s["session_id"] for s in listing["sessions"]),
        }

    def assert_untouched(self) -> None:
        assert self.look() == self.before


# -- the tests ----------------------------------------------------------------------------------

def test_the_scripts_lab_shows_the_examples_and_runs_cogym_lab_in_a_cell(
        lab: LabPage, lab_script: LabScriptServer, shots: StepShots) -> None:
    status, listing = lab_script.request("GET", "api/contents")
    assert status == 200, listing
    names = {entry["name"] for entry in listing["content"]}
    assert "01_your_dataframe.ipynb" in names, names  # the script's examples/ folder
    assert "panel_grace_seconds is no longer used" in lab_script.log_tail(lines=10_000)
    shots.take("jupyterlab-opened-by-the-script")

    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, "!cogym-lab --help")
    cell = lab.run_cell(notebook, 0)
    output = lab.outputs(cell).first
    expect(output).to_contain_text("Usage: cogym-lab", timeout=UI_TIMEOUT_MS)
    expect(output).to_contain_text("tasks")
    assert "command not found" not in output.inner_text()
    shots.take("cogym-lab-help-in-a-cell", focus=cell, where="start")


def test_a_session_outlives_closing_its_notebook_and_a_reload(
        lab: LabPage, lab_script: LabScriptServer, scripted_lm: ScriptedLM,
        shots: StepShots) -> None:
    scripted_lm.use(CueAgent([
        AgentStep(ASK, Action(name="SEND_TEAMMATE_MESSAGE", args={"message": AGENT_REPLY})),
        AgentStep(ASK, Action(name="ADD_ITEM", args={"text": "kazoo"})),
    ]))
    page = lab.page
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, START)
    start_cell = lab.run_cell(notebook, 0)
    panel = SessionPanelPage.find(page, start_cell)
    session = ServerSession(lab_script, panel.session_id)
    panel.type_chat(ASK)
    panel.chat_message(ASK)
    panel.chat_message(AGENT_REPLY)  # the agent answered, through the scripted LM
    expect(panel.testid("checklist-item").filter(has_text="kazoo")).to_be_visible(
        timeout=UI_TIMEOUT_MS)
    path = session.snapshot()["created_in"]["path"]
    shots.take("session-started", focus=start_cell, where="start")

    # The person saves and closes the notebook's tab: its panel goes with it.
    start_cell.locator(".jp-InputArea-prompt").click()
    page.keyboard.press("Control+s")
    name = Path(path).name
    tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab").filter(
        has=page.get_by_text(name, exact=True))
    tab.locator(".lm-TabBar-tabCloseIcon").click()
    expect(page.locator('[data-testid="cogym-panel"]')).to_have_count(0, timeout=UI_TIMEOUT_MS)
    time.sleep(CLOSED_FOR)  # closed for longer than the old grace
    snapshot = session.snapshot()
    assert snapshot["status"] == "running", snapshot.get("end_reason")

    # Reopened from the file browser: the same session, attached, caught up.
    page.locator(".jp-DirListing-item").filter(
        has=page.get_by_text(name, exact=True)).dblclick()
    panel = _panel_again(lab, session)
    shots.take("reopened-after-closing", focus=panel.root, where="start")
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        expect(panel.root).to_be_visible()
        shots.take(f"reopened-at-{width}x{height}", focus=panel.root, where="start")
    page.set_viewport_size({"width": SIZES[0][0], "height": SIZES[0][1]})

    page.reload(wait_until="domcontentloaded")
    lab.wait_until_ready()
    panel = _panel_again(lab, session)
    panel.type_chat("Still here after the reload")
    panel.chat_message("Still here after the reload")
    texts = [message["text"] for message in session.snapshot()["state"]["chat"]]
    assert ASK in texts and AGENT_REPLY in texts and "Still here after the reload" in texts
    shots.take("after-the-reload", focus=panel.root, where="start")


def _panel_again(lab: LabPage, session: ServerSession) -> SessionPanelPage:
    """The session's panel, back in the notebook, connected, with the chat so far and the
    agent's work; the session still running."""
    notebook = lab.current_notebook()
    panel = SessionPanelPage.find(lab.page, lab.cells(notebook).nth(0))
    assert panel.session_id == session.session_id
    panel.chat_message(ASK)
    panel.chat_message(AGENT_REPLY)
    expect(panel.testid("checklist-item").filter(has_text="kazoo")).to_be_visible()
    expect(panel.testid("agent-status").first).to_be_visible()
    assert session.snapshot()["status"] == "running"
    return panel


def test_keys_typed_in_the_chat_stay_in_the_chat(
        lab: LabPage, lab_script: LabScriptServer, scripted_lm: ScriptedLM,
        shots: StepShots) -> None:
    scripted_lm.use(CueAgent([]))  # the agent waits
    page = lab.page
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, START)
    start_cell = lab.run_cell(notebook, 0)
    panel = SessionPanelPage.find(page, start_cell)
    chat = panel.testid("chat-input")
    chat.click()  # a click in the cell's output makes that cell the active one: not a key
    watch = NotebookWatch(lab, notebook)

    # Letters that are commands in the notebook's command mode (a, b, dd, m, x, z), Shift+Enter
    # (run the cell) and Enter: none of them may reach the notebook.
    lines = ["add a bag, dd bed, mmm", "and a box of zx"]
    type_lines(page, chat, lines)
    watch.assert_untouched()
    leave_with_escape(page, chat)
    watch.assert_untouched()
    shots.take("typed-two-lines-then-escape", focus=panel.root, where="start")
    send_with_enter(page, chat)
    sent = panel.chat_message(lines[1])
    assert lines[0] in sent.inner_text()
    watch.assert_untouched()
    texts = [message["text"] for message in ServerSession(
        lab_script, panel.session_id).snapshot()["state"]["chat"]]
    assert "\n".join(lines) in texts
    shots.take("sent-with-enter", focus=panel.root, where="start")
