"""A newcomer's first hour in the JupyterLab that ``bash scripts/lab.sh`` starts: the README's
first command, for real. The script installs cogym_lab and JupyterLab into a new environment
(minutes: pip from the configured index), then the person, in Chromium, runs ``!cogym-lab`` in a
cell, starts a session (its chat beside the notebook, the default), closes the notebook for
longer than the old panel grace and comes back to the panel and the side chat attached again,
types in the side chat while the notebook scrolls under the mouse, at 1280 and 800 px, and
reloads the page.

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
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

from cogym_lab.core import Action
from cogym_lab.lm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from tests.browser.agent_script import AgentStep, CueAgent
from tests.browser.beside_page import (
    LONG_OUTPUT,
    close_the_file_browser,
    in_viewport,
    is_focused,
    scroll_the_notebook,
    side_chat,
    side_chats,
)
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
AFTER_RELOAD = "Still here after the reload"


def bring(width: int) -> tuple[str, str, str]:
    """What the person types beside the notebook at ``width`` px: two lines, the first with
    letters that are commands in the notebook's command mode (a, b, dd, m, x, z); and the
    agent's answer."""
    return (f"Bring a drum at {width}, add a bag, dd bed, mmm", "and a box of zx",
            f"A drum for the {width} px window: noted.")


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


# -- what keys leaking into the notebook would change ------------------------------------------

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


def test_a_session_outlives_its_closed_notebook_and_a_reload_and_its_side_chat_keeps_its_keys(
        lab: LabPage, lab_script: LabScriptServer, scripted_lm: ScriptedLM,
        shots: StepShots) -> None:
    scripted_lm.use(CueAgent([
        AgentStep(ASK, Action(name="SEND_TEAMMATE_MESSAGE", args={"message": AGENT_REPLY})),
        AgentStep(ASK, Action(name="ADD_ITEM", args={"text": "kazoo"})),
        *(AgentStep(bring(width)[0].split(",")[0],
                    Action(name="SEND_TEAMMATE_MESSAGE", args={"message": bring(width)[2]}))
          for width, _ in SIZES),
        AgentStep(AFTER_RELOAD, Action(name="SEND_TEAMMATE_MESSAGE",
                                       args={"message": "Still with you."})),
    ]))
    page = lab.page
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, START)
    start_cell = lab.run_cell(notebook, 0)
    panel = SessionPanelPage.find(page, start_cell)
    session = ServerSession(lab_script, panel.session_id)
    # The default: the chat and the agent's status beside the notebook, the workspace in the
    # cell, taking its whole width.
    chat = side_chat(page, session.session_id)
    expect(panel.root).to_have_attribute("data-chat", "beside", timeout=UI_TIMEOUT_MS)
    expect(panel.testid("chat-input")).to_be_hidden()
    chat.type_chat(ASK)
    chat.chat_message(ASK)
    chat.chat_message(AGENT_REPLY)  # the agent answered, through the scripted LM
    expect(panel.testid("checklist-item").filter(has_text="kazoo")).to_be_visible(
        timeout=UI_TIMEOUT_MS)
    # The person's own work around the session: a long notebook.
    for _ in range(2):
        lab.run_cell(notebook, lab.append_cell(notebook, LONG_OUTPUT))
    name = Path(session.snapshot()["created_in"]["path"]).name
    shots.take("session-started-chat-beside", focus=start_cell, where="start")

    # The person saves and closes the notebook's tab: its panel goes with it, and so does the
    # chat beside it.
    lab.close_notebook(notebook, name)
    expect(page.locator('[data-testid="cogym-panel"]')).to_have_count(0, timeout=UI_TIMEOUT_MS)
    shots.take("notebook-closed")
    time.sleep(CLOSED_FOR)  # closed for longer than the old grace
    snapshot = session.snapshot()
    assert snapshot["status"] == "running", snapshot.get("end_reason")

    # Reopened from the file browser: the same session, attached, caught up, beside and in
    # the cell.
    notebook = lab.reopen_notebook(name)
    panel, chat = _attached_again(lab, session, notebook, [ASK])
    shots.take("reopened-after-closing", focus=panel.root, where="start")

    # Typing beside the notebook while it scrolls under the mouse, at both sizes.
    watch = NotebookWatch(lab, notebook)
    said = [ASK]
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        if width < 1000:  # the file browser, the notebook and the chat do not fit side by side
            close_the_file_browser(page)
        first, second, answer = bring(width)
        _type_beside_while_the_notebook_scrolls(
            page, notebook, chat, watch, [first, second],
            partial(shots.take, f"typing-beside-a-scrolled-notebook-at-{width}x{height}"))
        _send_and_see_the_answer(chat, watch, [first, second], answer)
        said.append(first)
        start_cell = lab.cells(notebook).nth(0)
        start_cell.evaluate("(cell) => cell.scrollIntoView({block: 'start'})")
        expect(panel.testid("workspace")).to_be_in_viewport()
        expect(chat.testid("chat-input")).to_be_in_viewport()
        shots.take(f"reopened-answered-at-{width}x{height}")

    # A reload: everything is back once more, and the side chat still keeps its keys.
    page.set_viewport_size({"width": SIZES[0][0], "height": SIZES[0][1]})
    page.reload(wait_until="domcontentloaded")
    lab.wait_until_ready()
    notebook = lab.current_notebook()
    panel, chat = _attached_again(lab, session, notebook, said)
    watch = NotebookWatch(lab, notebook)
    _type_beside_while_the_notebook_scrolls(
        page, notebook, chat, watch, [AFTER_RELOAD],
        partial(shots.take, "typing-beside-a-scrolled-notebook-after-the-reload"))
    _send_and_see_the_answer(chat, watch, [AFTER_RELOAD], "Still with you.")
    texts = [message["text"] for message in session.snapshot()["state"]["chat"]]
    assert ASK in texts and AGENT_REPLY in texts and AFTER_RELOAD in texts, texts
    for width, _ in SIZES:
        first, second, answer = bring(width)
        assert f"{first}\n{second}" in texts and answer in texts, texts
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        if width < 1000:
            close_the_file_browser(page)
        lab.cells(notebook).nth(0).evaluate("(cell) => cell.scrollIntoView({block: 'start'})")
        expect(chat.testid("chat-input")).to_be_in_viewport()
        shots.take(f"after-the-reload-at-{width}x{height}")


def _attached_again(lab: LabPage, session: ServerSession, notebook: Locator,
                    said: list[str]) -> tuple[SessionPanelPage, SessionPanelPage]:
    """The session's panel back in the notebook's first cell, connected, with the agent's work
    and the chat given to the side; the one side chat of the session, connected, with the
    messages so far (``said`` by the person, and the agent's first answer) and the agent's
    status; the session still running."""
    page = lab.page
    panel = SessionPanelPage.find(page, lab.cells(notebook).nth(0))
    assert panel.session_id == session.session_id
    expect(panel.testid("workspace")).to_be_visible()
    expect(panel.testid("checklist-item").filter(has_text="kazoo")).to_be_visible()
    chat = side_chat(page, session.session_id)
    expect(side_chats(page, session.session_id)).to_have_count(1)  # not one per opening
    expect(panel.root).to_have_attribute("data-chat", "beside", timeout=UI_TIMEOUT_MS)
    for text in (*said, AGENT_REPLY):
        chat.chat_message(text)
    expect(chat.testid("agent-status").first).to_be_visible()
    assert session.snapshot()["status"] == "running"
    return panel, chat


def _type_beside_while_the_notebook_scrolls(page: Page, notebook: Locator,
                                            chat: SessionPanelPage, watch: NotebookWatch,
                                            lines: list[str], shoot: Callable[[], object]
                                            ) -> None:
    """Type ``lines`` key by key in the side chat (Shift+Enter between them), the mouse wheel
    scrolling the notebook after the first, and ``shoot`` the page; then Escape: it leaves the
    field, the text kept, and the notebook's command-mode keys pressed after it do nothing. The
    field keeps the focus and stays in sight while the notebook scrolls; nothing reaches the
    notebook."""
    field = chat.testid("chat-input")
    field.click()
    for number, line in enumerate(lines):
        if number:
            page.keyboard.press("Shift+Enter")  # a new line, never "run the cell"
        page.keyboard.type(line)
        if not number:
            scroll_the_notebook(page, notebook, 1500)
            assert is_focused(field), "the side chat lost the focus while the notebook scrolled"
    expect(field).to_have_value("\n".join(lines), timeout=UI_TIMEOUT_MS)
    assert in_viewport(page, field), "the side chat left the window"
    assert is_focused(field)
    watch.assert_untouched()
    shoot()
    page.keyboard.press("Escape")
    assert not is_focused(field)
    expect(field).to_have_value("\n".join(lines))
    for key in ("b", "a", "d", "d", "m", "x", "z"):  # command-mode keys: not for the notebook
        page.keyboard.press(key)
    watch.assert_untouched()


def _send_and_see_the_answer(chat: SessionPanelPage, watch: NotebookWatch, lines: list[str],
                             answer: str) -> None:
    """Back in the side chat, Enter sends (the field empties); the message shows, whole, and
    the agent's answer after it; nothing reached the notebook."""
    field = chat.testid("chat-input")
    field.click()
    chat.page.keyboard.press("End")
    chat.page.keyboard.press("Enter")
    expect(field).to_have_value("", timeout=UI_TIMEOUT_MS)
    sent = chat.chat_message(lines[0])
    assert lines[-1] in sent.inner_text()
    chat.chat_message(answer)
    watch.assert_untouched()
