"""A person searches inside their own plan step and asks the agent about text they selected,
in JupyterLab in a real browser (Cocoa §4.2.2 and §4.1.1).

The person (this test, in Chromium) starts a ``travel_planning`` session of the
``collaborative-plans`` team, picks a plan, takes the step that searches places to stay and
runs the plan, which stops at that step. In the step's row they pick the search, type the city,
press Shift+Enter (nothing happens) and Enter: the results come back as cards in the step's
side area and in the server's plan, as the step's output. Escape clears the search field.
Then they write a line in the travel plan editor, select a question in it with the keyboard,
press Alt+A, type a request and Enter: the chat shows the message with the selection, and the
agent's LM request (the loopback LM) holds the selection and the whole document.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from cogym_lab.envs import make_env
from tests.browser.jupyter_lab import JupyterLabServer, ServerSession
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage
from tests.browser.plan_script import STAYS, TravelPlanAgent, Trip
from tests.browser.screenshots import StepShots
from tests.browser.scripted_lm import ScriptedLM
from tests.browser.test_tabular_flow import wait_for

START = ("%load_ext cogym_lab\n"
         "%cogym new travel_planning --instance 0 --team collaborative-plans --role user "
         "--idle-seconds 600")
PLAN = "interactive_plan"
QUESTION = "Which museum should we see first?"
REQUEST = "Find two museums for this"
ANSWER = "Two museums near the stay: one opens at nine."


class AskedAgent(TravelPlanAgent):
    """The plan script, and one answer to the person's message about their selection; the
    request it came in is kept for the test."""

    def __init__(self, trip: Trip) -> None:
        super().__init__(trip)
        self.asked: list[dict[str, Any]] = []
        self._asked_lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        whole = "\n".join(str(m["content"]) for m in body["messages"])
        asked = str(body["messages"][-1]["content"])
        # the act prompt, not the scratchpad's (which comes first and holds the chat too)
        if "selected this text in plan" in whole and "You are carrying out step" not in whole \
                and "update your scratchpad" not in asked:
            # The plan-aware agent answers a message by situational planning: it decides to
            # send a message (2), then writes it.
            if "Decision: <1, 2 or 3>" in asked:
                with self._asked_lock:
                    answered = bool(self.asked)
                if not answered:
                    return "Thought: the person asked about their selection.\nDecision: 2"
            elif "Message: <the message text" in asked:
                with self._asked_lock:
                    first = not self.asked
                    self.asked.append(body)
                if first:
                    return f"Thought: answer it.\nMessage: {ANSWER}"
        return super().__call__(body)


def test_a_person_searches_in_their_step_and_asks_the_agent_about_a_selection(
        lab: LabPage, shots: StepShots, lm: ScriptedLM, jupyter_lab: JupyterLabServer,
        use_shared_data: Path) -> None:
    trip = Trip.of(make_env("travel_planning", instance=0).task)
    agent = AskedAgent(trip)
    lm.use(agent)
    page = lab.page
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, START)
    panel = SessionPanelPage.find(page, lab.run_cell(notebook, 0))
    session = ServerSession(jupyter_lab, panel.session_id)

    # the person picks the first plan, takes the search for places to stay and runs the plan
    proposals = panel.testid("plan-proposal")
    expect(proposals).to_have_count(2, timeout=UI_TIMEOUT_MS)
    proposals.nth(0).locator('[data-testid="plan-select"]').click()
    rows = panel.testid("plan-step")
    expect(rows).to_have_count(4, timeout=UI_TIMEOUT_MS)
    stays = rows.nth(0)
    stays.locator('[data-testid="plan-step-assign"]').click()
    expect(stays).to_have_attribute("data-assignee", "person", timeout=UI_TIMEOUT_MS)
    search = stays.locator('[data-testid="plan-step-search"]')
    expect(search).to_be_hidden()  # not waiting for the person yet
    panel.testid("plan-run-all").click()
    expect(stays).to_have_attribute("data-status", "needs_input", timeout=UI_TIMEOUT_MS)
    expect(search).to_be_visible(timeout=UI_TIMEOUT_MS)

    # the step's search box: pick the search of places to stay, Shift+Enter does nothing,
    # Enter searches; the results become the step's output, shown as cards
    search.locator('[data-testid="plan-step-search-tool"]').select_option("ACCOMMODATION_SEARCH")
    field = search.locator('[data-testid="plan-step-search-field"]')
    expect(field).to_have_count(1)
    field.click()
    page.keyboard.type(trip.destination)
    page.keyboard.press("Shift+Enter")
    page.wait_for_timeout(500)  # nothing is sent: the step's output stays empty
    assert session.component(PLAN)["plan"]["steps"][0]["output"] is None
    page.keyboard.press("Enter")
    step = wait_for(lambda: (s := session.component(PLAN)["plan"]["steps"][0])["output"]
                    and s, "SEARCH_IN_STEP's results in the step", 60)
    output = step["output"]
    assert output["pending"] and output["searches"] == [
        f"ACCOMMODATION_SEARCH: {trip.destination}"]
    assert output["items"] and {item["kind"] for item in output["items"]} == {"record"}
    side = panel.testid("step-output")
    expect(side).to_have_attribute("data-step", step["id"], timeout=UI_TIMEOUT_MS)
    cards = side.locator('[data-testid="step-output-item"]')
    expect(cards).to_have_count(len(output["items"]), timeout=UI_TIMEOUT_MS)
    expect(cards.first).to_have_attribute("data-kind", "record")
    first = output["items"][0]
    title = next(str(v) for k, v in first.items() if k != "kind" and v not in (None, ""))
    expect(cards.first).to_contain_text(title[:40])
    shots.take("1-search-in-the-step-gives-cards", focus=panel.root, where="start")
    page.keyboard.type("zzz")
    page.keyboard.press("Escape")  # the first Escape clears the field, the focus stays
    expect(field).to_have_value("")
    assert field.evaluate("(node) => node === document.activeElement")

    # the person writes in the travel plan, selects the question with the keyboard, and asks
    # the agent about it with Alt+A
    editor = panel.editor("plan")
    editor.click()
    page.keyboard.press("Control+End")
    text = f"Day 2 in {trip.destination}. {QUESTION}"
    page.keyboard.type(text)
    panel.wait_synced("plan")
    for _ in QUESTION:
        page.keyboard.press("Shift+ArrowLeft")
    expect(panel.testid("editor-ask")).to_be_enabled(timeout=UI_TIMEOUT_MS)
    page.keyboard.press("Alt+a")
    ask = panel.testid("editor-ask-input")
    expect(ask).to_be_focused(timeout=UI_TIMEOUT_MS)
    expect(panel.testid("editor-ask-quote")).to_have_text(QUESTION)
    page.keyboard.type(REQUEST)
    shots.take("2-asking-the-agent-about-the-selection", focus=panel.editor_box("plan"),
               where="center")
    page.keyboard.press("Enter")
    expect(panel.testid("editor-ask-box")).to_be_hidden(timeout=UI_TIMEOUT_MS)
    sent = panel.chat_message(REQUEST)
    expect(sent.locator('[data-testid="chat-selection"]')).to_contain_text(QUESTION)
    panel.chat_message(ANSWER)
    shots.take("3-the-agent-answers-about-the-selection", focus=panel.testid("view-chat"),
               where="end")

    document = str(session.component("plan"))
    start = document.index(QUESTION)
    body = "\n".join(str(m["content"]) for m in agent.asked[0]["messages"])
    assert (f"user selected this text in plan, characters {start} to "
            f"{start + len(QUESTION)}: \"{QUESTION}\"") in body
    assert f"[user] {REQUEST}" in body and document in body  # the whole document in view
    assert step["description"].startswith(STAYS)  # the first plan's first step
