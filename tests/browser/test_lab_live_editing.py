"""A person and an agent edit one shared text at the same time, in JupyterLab in a real browser.

The person (this test, in Chromium) starts a travel-planning session in a notebook and types
the trip's notes into the panel's shared editor; with no Save button, the text reaches the
session as they type. They ask the agent to fix the title and go on typing further down; the
agent (in the Jupyter server, on the loopback scripted LM) rewrites the title meanwhile. Both
edits show in the panel and in the session within seconds, the person's caret stays where they
left it, and the agent is told of the person's typing once it pauses. The window is resized,
keys that would run the notebook's cell stay in the editor, and a reload brings the whole text
back, ready for more typing.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any

from playwright.sync_api import Locator, Page, expect

from cogym_lab.core import Action
from cogym_lab.core.grammar import format_action
from cogym_lab.core.messages import EventType
from cogym_lab.nodes.results import read_events
from cogym_lab.testing import Reply
from tests.browser.jupyter_lab import JupyterLabServer, ServerSession
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import StepShots
from tests.browser.scripted_lm import ScriptedLM
from tests.browser.test_tabular_flow import wait_for
from tests.support.lm_scripts import classify, system_text

START = ("%load_ext cogym_lab\n"
         "%cogym new travel_planning --instance 0 --role user --idle-seconds 600")
EDITOR = "plan"  # the travel task's shared editor
TITLE = "Trip notes"
NEW_TITLE = "Trip notes (title checked by the agent)"
LINES = [TITLE, "Day 1: fly to the coast", "Day 2: the museum", "Day 3: fly home"]
TYPED_LATER = " and then a long, slow walk by the sea"
#: Within this long, what one side typed shows on the other (the panel sends typing about
#: 0.3 s after it pauses; the session tells the agent about 1.5 s after it pauses).
LIVE_MS = 10_000
PLAN_HEADER = re.compile(r"^## Travel plan \(shared editor\) \(shared with the team\)\n", re.M)


def _editor_text(prompt: str) -> str | None:
    """The shared editor's text as the agent's prompt shows it (``## <title> (...)`` and the
    text, up to the next part of the prompt)."""
    match = PLAN_HEADER.search(prompt)
    if match is None:
        return None
    rest = prompt[match.end():]
    return re.split(r"\n\n## |\n# ", rest, maxsplit=1)[0]


class TitleAgent:
    """The agent's LM: once the person's chat asks for it, rewrite the first line of the shared
    text as the prompt showed it (only that line), else wait. It answers only once ``ready()``
    says so (the person has started typing), so that its edit crosses the person's. It keeps
    every editor text it was shown, so the test can tell when the agent has been told of the
    person's typing."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.wrote: str | None = None
        self.seen: list[str] = []
        self.ready: Callable[[], bool] = lambda: True

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        kind = classify(body)
        if kind == "scratchpad":
            return "Thought: nothing to note.\nAction: DO_NOTHING()"
        if kind != "act":
            return Reply(status=500, error=f"this test scripts no {kind!r} request")
        prompt = system_text(body)
        text = _editor_text(prompt)
        chat = prompt.split("# Chat so far", 1)[-1]
        with self.lock:
            if text is not None:
                self.seen.append(text)
            asked = self.wrote is None and "fix the title" in chat and bool(text) \
                and text.startswith(TITLE)
            if asked:
                self.wrote = text.replace(TITLE, NEW_TITLE, 1)
        if not asked:
            return "Thought: nothing asked of me.\nAction: WAIT_TEAMMATE_CONTINUE()"
        deadline = time.monotonic() + 30
        while not self.ready() and time.monotonic() < deadline:  # a slow thinker
            time.sleep(0.05)
        action = Action(name="EDITOR_UPDATE", args={"text": self.wrote})
        return f"Thought: the title.\nAction: {format_action(action)}"


def _caret(editor: Locator) -> list[int]:
    return editor.evaluate("(field) => [field.selectionStart, field.selectionEnd]")


def _focused(editor: Locator) -> bool:
    return editor.evaluate("(field) => field === document.activeElement")


def _server_text(session: ServerSession) -> str:
    content = session.component(EDITOR)
    assert isinstance(content, str), content
    return content


def _panel(lab: LabPage) -> SessionPanelPage:
    notebook = lab.current_notebook()
    return SessionPanelPage.find(lab.page, lab.cells(notebook).nth(0))


def test_the_person_and_the_agent_edit_the_text_at_once(
        lab: LabPage, shots: StepShots, lm: ScriptedLM, jupyter_lab: JupyterLabServer) -> None:
    agent = TitleAgent()
    lm.use(agent)
    page: Page = lab.page
    keyboard = page.keyboard
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, START)
    start_cell = lab.run_cell(notebook, 0)
    panel = SessionPanelPage.find(page, start_cell)
    session = ServerSession(jupyter_lab, panel.session_id)
    # The agent answers once the session has some of the person's later typing.
    agent.ready = lambda: TYPED_LATER[:6] in _server_text(session)
    editor = panel.editor(EDITOR)
    state = panel.editor_state(EDITOR)
    expect(editor).to_be_editable(timeout=UI_TIMEOUT_MS)
    expect(panel.testid("editor-save")).to_have_count(0)  # nothing to save: it is live

    # 1. The person types the notes, each line ended with Enter: the text reaches the session
    # as they type, with no button.
    editor.click()
    keyboard.press("Control+a")
    keyboard.press("Delete")  # a text the task may have started with
    for line in LINES:
        keyboard.type(line)
        keyboard.press("Enter")
    typed = "\n".join(LINES) + "\n"
    expect(editor).to_have_value(typed)
    expect(state).to_have_attribute("data-state", "synced", timeout=LIVE_MS)
    wait_for(lambda: _server_text(session) == typed, "the typed notes in the session", 10)
    shots.take("notes-typed-and-in-the-session", focus=editor)

    # 2. A narrower window: the editor keeps its text and its place in the panel.
    page.set_viewport_size({"width": 900, "height": 1000})
    expect(editor).to_be_visible()
    expect(editor).to_have_value(typed)
    box = editor.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 900
    shots.take("narrow-window", focus=editor)
    page.set_viewport_size({"width": 1600, "height": 1200})

    # 3. The person asks the agent to fix the title, then at once types on the second day's
    # line, slowly: the agent rewrites the title meanwhile.
    panel.type_chat("Please fix the title")
    editor.click()
    keyboard.press("Control+Home")
    for _ in range(2):
        keyboard.press("ArrowDown")
    keyboard.press("End")  # the end of "Day 2: the museum"
    keyboard.type(TYPED_LATER, delay=100)
    both = typed.replace(TITLE, NEW_TITLE, 1).replace(LINES[2], LINES[2] + TYPED_LATER)
    expect(editor).to_have_value(both, timeout=UI_TIMEOUT_MS)
    assert agent.wrote is not None and agent.wrote.startswith(NEW_TITLE)
    end_of_typing = both.index(TYPED_LATER) + len(TYPED_LATER)
    assert _caret(editor) == [end_of_typing, end_of_typing]  # where the person left it
    assert _focused(editor)
    expect(state).to_have_attribute("data-state", "synced", timeout=LIVE_MS)
    shots.take("both-edits-in-the-panel", focus=editor)
    # ... and in the session, and in what the agent is told once the typing pauses.
    wait_for(lambda: _server_text(session) == both, "both edits in the session", LIVE_MS / 1000)
    wait_for(lambda: both.rstrip("\n") in [seen.rstrip("\n") for seen in agent.seen],
             "the agent told of the person's typing", 30)
    # The two edits crossed, and the session merged them: the agent's edit was made on a
    # text that the person's typing changed before the edit arrived, and the person typed on
    # before and after it.
    events = read_events(jupyter_lab.results_dir / session.session_id)
    [written] = [e for e in events if e.actor == "agent" and e.type is EventType.ACTION
                 and (e.action or "").startswith("EDITOR_UPDATE(")]
    assert written.info.get("merged") == EDITOR, written.info
    typing = [e.seq for e in events if e.type is EventType.EDIT and e.actor == "user"]
    assert any(seq < written.seq for seq in typing) and any(seq > written.seq for seq in typing)

    # 4. Keys stay in the editor: Shift+Enter is a new line (it does not run the notebook's
    # cell again), Enter too; Escape leaves the editor with its text kept.
    cells_before = lab.cells(notebook).count()
    keyboard.press("Shift+Enter")
    keyboard.type("Bring sun cream")
    keyboard.press("Enter")
    keyboard.type("and hats")
    keyboard.press("Escape")
    assert not _focused(editor)
    more = both.replace(TYPED_LATER, TYPED_LATER + "\nBring sun cream\nand hats", 1)
    expect(editor).to_have_value(more)
    assert lab.cells(notebook).count() == cells_before
    expect(state).to_have_attribute("data-state", "synced", timeout=LIVE_MS)
    wait_for(lambda: _server_text(session) == more, "the new lines in the session",
             LIVE_MS / 1000)
    expect(panel.testid("panel-error")).to_be_hidden()
    shots.take("keys-stayed-in-the-editor", focus=editor)

    # 5. A reload: the panel comes back connected, with the whole text, and takes more typing.
    page.reload(wait_until="domcontentloaded")
    lab.wait_until_ready()
    panel = _panel(lab)
    assert panel.session_id == session.session_id
    editor = panel.editor(EDITOR)
    expect(editor).to_have_value(more, timeout=UI_TIMEOUT_MS)
    expect(editor).to_be_editable()
    editor.click()
    keyboard.press("Control+End")
    keyboard.type("\nAfter the reload.")
    expect(panel.editor_state(EDITOR)).to_have_attribute("data-state", "synced",
                                                         timeout=LIVE_MS)
    wait_for(lambda: _server_text(session) == more + "\nAfter the reload.",
             "the typing after the reload in the session", LIVE_MS / 1000)
    shots.take("after-the-reload", focus=editor)
