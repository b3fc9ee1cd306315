"""A person plays the kitchen with the arrows and Space only and chats while playing, in
JupyterLab in a real browser.

The person (this test, in Chromium) starts a ``kitchen`` session of the ``kitchen-dpt`` team
(DPT-Agent on the loopback LM) in the seat ``user`` (paper mode: a person plays with moves and interact only, so no macro button
is shown), walks with an arrow and interacts with Space, then types in the chat: Shift+Enter is
a new line, Enter sends, Escape leaves the field and gives the keys back to the chef, so the
next arrow moves it again. The message is in the chat and in the session's log; DPT's next
belief and policy prompts hold it, and the agent's answer shows in the person's chat. The window is
resized and the page reloaded once: the kitchen and the chat come back, and the arrows still
move the chef.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from cogym_lab.core.messages import EventType
from cogym_lab.nodes.results import read_events
from tests.browser.jupyter_lab import JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import StepShots
from tests.browser.scripted_lm import ScriptedLM
from tests.browser.test_lab_kitchen import (
    KEYS,
    PACE,
    STEPS,
    KitchenSession,
    _a_free_step,
    _in_kitchen,
    _tick,
    _wait_tick,
)
from tests.browser.test_tabular_flow import wait_for

TICK_SECONDS = 0.1
TICKS = 3000  # 5 minutes: the game outlasts the test; the fixture ends the session
START = ("%load_ext cogym_lab\n"
         f"%cogym new kitchen --team kitchen-dpt --role user --env-arg tick_seconds={TICK_SECONDS}"
         f" --env-arg ticks={TICKS} --idle-seconds 600")
BACK = {"up": "down", "down": "up", "left": "right", "right": "left"}
FIRST, SECOND = "I take the lettuce", "you cook the beef"
ANSWER = "Deal: I cook the beef."


def _prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def dpt_lm(body: dict[str, Any]) -> str:
    """DPT's LM: no new tasks (the FSM cooks), a belief, and one answer to the person."""
    prompt = _prompt(body)
    if "# Code-as-policy" in prompt:
        answer = FIRST in prompt and f"you: {ANSWER}" not in prompt
        return "```text\nKeep cooking.\n```\n\n```json\n[]\n```" + (
            f"\n\n```say\n{ANSWER}\n```" if answer else "")
    return "```text\nThey said they take the lettuce.\n```"


def _messages_of(lab: JupyterLabServer, session: KitchenSession, role: str) -> list[str]:
    """``role``'s chat messages in the session's log, as logged."""
    return [str(e.model_dump()) for e in read_events(lab.results_dir / session.session_id)
            if e.type is EventType.MESSAGE and e.actor == role]


def _step_and_back(page: Page, panel: SessionPanelPage, session: KitchenSession) -> None:
    """One arrow moves the person's chef a tile; the opposite arrow brings it back."""
    kitchen = panel.root.locator("[data-testid=kitchen]")
    start = session.chef("user")["pos"]
    direction = _a_free_step(session.kitchen(), start)
    page.keyboard.press(KEYS[direction])
    moved = wait_for(lambda: (pos := session.chef("user")["pos"]) != start and pos,
                     "the person's chef moves")
    assert moved == [start[0] + STEPS[direction][0], start[1] + STEPS[direction][1]]
    _wait_tick(page, _tick(kitchen) + PACE)
    page.keyboard.press(KEYS[BACK[direction]])
    wait_for(lambda: session.chef("user")["pos"] == start, "the chef steps back")
    _wait_tick(page, _tick(kitchen) + PACE)


def test_a_person_plays_with_arrows_and_space_and_chats_while_playing(
        lab: LabPage, shots: StepShots, jupyter_lab: JupyterLabServer, lm: ScriptedLM) -> None:
    lm.use(dpt_lm)
    page = lab.page
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, START)
    panel = SessionPanelPage.find(page, lab.run_cell(notebook, 0))
    session = KitchenSession(jupyter_lab, panel.session_id)
    kitchen = panel.root.locator("[data-testid=kitchen]")
    expect(kitchen).to_have_attribute("data-playing", "true", timeout=UI_TIMEOUT_MS)

    # 0. paper mode: no macro button anywhere, the hint names the arrows and Space only
    expect(panel.testid("kitchen-controls")).to_be_hidden()
    expect(panel.root.locator("[data-testid=kitchen-macro]:visible")).to_have_count(0)
    expect(panel.testid("kitchen-keys")).not_to_contain_text("prepare beef")
    panel.testid("kitchen-start").click()
    _wait_tick(page, 3)
    shots.take("0-paper-mode-no-macro-buttons", focus=panel.root, where="start")

    # 1. arrows and Space: the chef walks and interacts
    panel.testid("kitchen-stage").click()
    assert _in_kitchen(page)
    _step_and_back(page, panel, session)
    page.keyboard.press("Space")
    wait_for(lambda: ("INTERACT", "ok") in session.actions_of("user"), "INTERACT in the log")
    shots.take("1-walked-and-interacted", focus=panel.root, where="start")

    # 2. the chat while the clock runs: Shift+Enter is a new line (nothing sent), Enter sends
    chat_input = panel.testid("chat-input")
    chat_input.click()
    page.keyboard.type(FIRST)
    page.keyboard.press("Shift+Enter")
    page.keyboard.type(SECOND)
    expect(chat_input).to_have_value(f"{FIRST}\n{SECOND}")
    assert _messages_of(jupyter_lab, session, "user") == []  # Shift+Enter sent nothing
    page.keyboard.press("Enter")
    expect(chat_input).to_have_value("")
    message = panel.chat_message(FIRST)
    expect(message).to_contain_text(SECOND)
    ticking = _tick(kitchen)
    _wait_tick(page, ticking + 3)  # the game went on while the person typed
    shots.take("2-the-message-in-the-chat", focus=panel.testid("view-chat"), where="center")

    # 3. Escape leaves the field (the draft kept) and the arrows move the chef again
    chat_input.click()
    page.keyboard.type("draft")
    page.keyboard.press("Escape")
    assert _in_kitchen(page)
    expect(chat_input).to_have_value("draft")
    _step_and_back(page, panel, session)
    shots.take("3-escape-back-to-the-chef", focus=panel.root, where="start")

    # the log: the moves, the interact and the message, from the seat user
    sent = _messages_of(jupyter_lab, session, "user")
    assert len(sent) == 1 and FIRST in sent[0] and SECOND in sent[0]
    names = [name for name, _ in session.actions_of("user")]
    assert names.count("MOVE") >= 4 and "INTERACT" in names
    assert set(names) <= {"MOVE", "INTERACT"}  # no macro: arrows and Space only

    # the agent read it: its next policy and belief prompts hold it, and it answered in the chat
    def read_in(heading: str) -> bool:
        return any(heading in _prompt(b) and FIRST in _prompt(b) for b in list(lm.bodies))

    wait_for(lambda: read_in("# Code-as-policy"), "a policy prompt with the message")
    wait_for(lambda: read_in("# Your teammate"), "a belief prompt with the message", 60)
    expect(panel.chat_message(ANSWER)).to_contain_text("agent")
    assert _messages_of(jupyter_lab, session, "agent")[0].count(ANSWER) == 1
    shots.take("3b-the-agent-answered", focus=panel.testid("view-chat"), where="center")

    # 4. a narrow window: the kitchen and the chat still fit and play
    page.set_viewport_size({"width": 800, "height": 900})
    expect(panel.testid("kitchen-stage")).to_be_visible()
    shots.take("4-narrow-window", focus=panel.root, where="start")
    page.set_viewport_size({"width": 1600, "height": 1200})

    # 5. a reload: the panel comes back playing, the message still in the chat, arrows work
    page.reload(wait_until="domcontentloaded")
    lab.wait_until_ready()
    panel = SessionPanelPage.find(page, lab.cells(lab.current_notebook()).nth(0))
    assert panel.session_id == session.session_id
    expect(panel.root.locator("[data-testid=kitchen]")).to_have_attribute(
        "data-playing", "true", timeout=UI_TIMEOUT_MS)
    expect(panel.chat_message(FIRST)).to_contain_text(SECOND)
    panel.testid("kitchen-stage").click()
    _step_and_back(page, panel, session)
    shots.take("5-after-the-reload", focus=panel.root, where="start")
