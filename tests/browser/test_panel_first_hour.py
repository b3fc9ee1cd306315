"""A newcomer's first hour with the panel: the search box over a component that search actions
fill, moving plan steps up and down, Finish that asks first, the agent's status and the step
counts in plain words, the prompt when there is no plan, the kitchen's Start and the agent's
cells marked in the notebook. The real ES module in Chromium on the stand-in test page, fed
update frames; the person types, and each step checks the exact action the panel sent (or
that it sent none). Screenshots at 1280 and 800 px.
"""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Locator, Page, expect

from tests.browser.kitchen_frames import KitchenSeat, kitchen
from tests.browser.lab_page import UI_TIMEOUT_MS
from tests.browser.panel_page import focused_testid
from tests.browser.screenshots import StepShots
from tests.browser.seat_frames import OneComponentSeat
from tests.browser.test_panel_plans import PlanSeat, plan_state, step
from tests.browser.test_panel_updates import LOCAL, SESSION, _deliver, _open

WIDTHS = (1280, 800)

SEARCH_SPECS = [
    {"name": "LOOK_UP", "description": "Look papers up by topic (top 10).", "private": True,
     "searches": "search_results",
     "params": [{"name": "query", "type": "string", "required": True,
                 "description": "What to look for"}]},
    {"name": "ROUTE_SEARCH", "description": "Routes between two cities.", "private": True,
     "searches": "search_results",
     "params": [{"name": "origin", "type": "string", "required": True, "description": "From"},
                {"name": "destination", "type": "string", "required": True, "description": "To"},
                {"name": "days", "type": "integer", "required": False, "description": "Days"}]},
    {"name": "ADD_NOTE", "description": "Add a note.", "params": [
        {"name": "text", "type": "string", "required": True}]},
]


def _context(specs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"session_id": SESSION, "task": "reading", "task_description": "Read together.",
            "role": "user", "kind": "person",
            "team": [{"role": "agent", "kind": "agent"}, {"role": "user", "kind": "person"}],
            "action_specs": specs, "collaboration_specs": []}


def _actions(page: Page) -> list[dict[str, Any]]:
    return [m["action"] for m in page.evaluate("window.sent") if m.get("type") == "action"]


def _last_action(page: Page, count: int) -> dict[str, Any]:
    """The last action sent, once ``count`` actions were sent (and no more)."""
    page.wait_for_function(f"window.sent.filter((m) => m.type === 'action').length >= {count}",
                           timeout=UI_TIMEOUT_MS)
    actions = _actions(page)
    assert len(actions) == count, actions
    return actions[-1]


def _shots_at_widths(page: Page, shots: StepShots, name: str, focus: Locator) -> None:
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        shots.take(f"{name}-{width}px", focus=focus, where="start")
    page.set_viewport_size({"width": 1280, "height": 900})


def _fits(box: Locator) -> None:
    """Nothing of ``box`` sticks out sideways."""
    sizes = box.evaluate("(node) => ({scroll: node.scrollWidth, client: node.clientWidth})")
    assert sizes["scroll"] <= sizes["client"] + 1, sizes


def test_enter_in_the_search_box_searches(page: Page, shots: StepShots) -> None:
    panel = _open(page, LOCAL)
    seat = OneComponentSeat("search_results", session=SESSION, context=_context(SEARCH_SPECS))
    _deliver(page, seat.frame([], whole=True))
    box = panel.testid("search-box")
    expect(box).to_be_visible()
    # One box per component: a picker of the two searches that fill it; ADD_NOTE is not one.
    expect(panel.testid("search-tool").locator("option")).to_have_text(["Look up", "Route search"])
    field = panel.testid("search-field")
    expect(field).to_have_count(1)
    expect(field).to_have_attribute("placeholder", "What to look for")

    # Shift+Enter does nothing in a one-line box (no new line, no search); Enter searches.
    field.click()
    page.keyboard.type("retrieval augmented")
    page.keyboard.press("Shift+Enter")
    expect(field).to_have_value("retrieval augmented")
    assert _actions(page) == []
    page.keyboard.type(" generation")
    page.keyboard.press("Enter")
    assert _last_action(page, 1) == {"name": "LOOK_UP",
                                     "args": {"query": "retrieval augmented generation"}}
    page.keyboard.press("Enter")  # the same search again, if the person wants it
    assert _last_action(page, 2) == {"name": "LOOK_UP",
                                     "args": {"query": "retrieval augmented generation"}}
    assert focused_testid(page) == "search-field"  # ready for the next search

    # The results come in below the box; what is typed and the focus stay.
    results = [{"id": "1706.03762", "title": "Attention Is All You Need", "year": 2017}]
    _deliver(page, seat.frame(results))
    expect(panel.testid("view-search_results").locator("li")).to_have_count(1)
    expect(field).to_have_value("retrieval augmented generation")
    assert focused_testid(page) == "search-field"
    _shots_at_widths(page, shots, "search-box-with-results", panel.testid("view-search_results"))
    _fits(panel.testid("view-search_results"))

    # Escape clears the box and keeps the focus; Escape on the empty box leaves it.
    page.keyboard.press("Escape")
    expect(field).to_have_value("")
    assert focused_testid(page) == "search-field"
    page.keyboard.press("Escape")
    assert focused_testid(page) != "search-field"
    assert len(_actions(page)) == 2

    # Another search tool: a field per param; an empty required one is asked for, not sent.
    panel.testid("search-tool").select_option("ROUTE_SEARCH")
    expect(panel.testid("search-field")).to_have_count(3)
    origin = panel.root.locator('[data-testid="search-field"][data-param="origin"]')
    origin.click()
    page.keyboard.type("Boston")
    page.keyboard.press("Enter")
    expect(panel.testid("search-hint")).to_have_text("Fill in “To” first.")
    assert focused_testid(page) == "search-field"
    page.keyboard.type("Albany")
    page.keyboard.press("Tab")
    page.keyboard.type("3")
    page.keyboard.press("Enter")
    assert _last_action(page, 3) == {"name": "ROUTE_SEARCH", "args": {
        "origin": "Boston", "destination": "Albany", "days": 3}}

    # Once the session ended there is nothing more to search.
    _deliver(page, seat.frame(results, done=True))
    expect(panel.testid("search-submit")).to_be_disabled()
    origin.click()
    page.keyboard.press("Enter")
    assert len(_actions(page)) == 3


def test_plan_steps_move_up_and_down(page: Page, shots: StepShots) -> None:
    panel = _open(page, LOCAL)
    seat = PlanSeat()
    steps = [step("s1", "Search papers"), step("s2", "Pick the relevant ones", "person"),
             step("s3", "Write the section")]
    _deliver(page, seat.frame(plan_state(steps), whole=True))
    rows = panel.testid("plan-step")
    expect(rows).to_have_count(3)

    def row(step_id: str) -> Locator:
        return panel.root.locator(f'[data-testid="plan-step"][data-step="{step_id}"]')

    def control(step_id: str, testid: str) -> Locator:
        return row(step_id).locator(f'[data-testid="{testid}"]')

    expect(control("s1", "plan-step-up")).to_be_disabled()  # the first cannot go higher
    expect(control("s3", "plan-step-down")).to_be_disabled()  # nor the last lower
    expect(control("s2", "plan-step-up")).to_have_attribute("aria-label",
                                                            "Move step 2 up (Alt+Arrow Up)")
    _shots_at_widths(page, shots, "plan-with-move-buttons", panel.testid("view-plan"))

    # ↓ on the first step sends MOVE_STEP with its new place; the row moves once the plan
    # comes back, with the focus on the same button.
    control("s1", "plan-step-down").click()
    assert _last_action(page, 1) == {"name": "MOVE_STEP", "args": {"step": "s1", "position": 1, "plan": "plan"}}
    steps = [steps[1], steps[0], steps[2]]
    _deliver(page, seat.frame(plan_state(steps)))
    expect(rows.nth(1)).to_have_attribute("data-step", "s1")
    assert page.evaluate("document.activeElement.closest('li').dataset.step") == "s1"

    # Alt+ArrowUp / Alt+ArrowDown in a step's description move it; the description keeps its
    # text and caret, and the keys do not move the caret.
    description = control("s3", "plan-step-description")
    description.click()
    page.keyboard.press("Alt+ArrowUp")
    assert _last_action(page, 2) == {"name": "MOVE_STEP", "args": {"step": "s3", "position": 1, "plan": "plan"}}
    steps = [steps[0], steps[2], steps[1]]
    _deliver(page, seat.frame(plan_state(steps)))
    expect(rows.nth(1)).to_have_attribute("data-step", "s3")
    assert focused_testid(page) == "plan-step-description"
    assert page.evaluate("document.activeElement.closest('li').dataset.step") == "s3"
    page.keyboard.press("Alt+ArrowDown")
    assert _last_action(page, 3) == {"name": "MOVE_STEP", "args": {"step": "s3", "position": 2, "plan": "plan"}}
    steps = [steps[0], steps[2], steps[1]]
    _deliver(page, seat.frame(plan_state(steps)))
    expect(rows.nth(2)).to_have_attribute("data-step", "s3")

    # ↑ on a step that becomes the first: the button goes off, the focus moves to ↓.
    control("s1", "plan-step-up").click()
    assert _last_action(page, 4) == {"name": "MOVE_STEP", "args": {"step": "s1", "position": 0, "plan": "plan"}}
    steps = [steps[1], steps[0], steps[2]]
    _deliver(page, seat.frame(plan_state(steps)))
    expect(rows.nth(0)).to_have_attribute("data-step", "s1")
    expect(control("s1", "plan-step-up")).to_be_disabled()
    assert focused_testid(page) == "plan-step-down"

    # Alt+ArrowUp on the first step sends nothing; a running step does not move.
    control("s1", "plan-step-description").click()
    page.keyboard.press("Alt+ArrowUp")
    steps[1] = step(steps[1]["id"], steps[1]["description"], steps[1]["assignee"], "running")
    _deliver(page, seat.frame(plan_state(steps)))
    running = steps[1]["id"]
    expect(control(running, "plan-step-up")).to_be_disabled()
    expect(control(running, "plan-step-down")).to_be_disabled()
    assert len(_actions(page)) == 4


def test_finish_asks_before_it_ends_and_grades(page: Page, shots: StepShots) -> None:
    panel = _open(page, LOCAL)
    seat = OneComponentSeat("text", session=SESSION, context=_context([]))
    _deliver(page, seat.frame("notes", whole=True))
    confirm = panel.testid("finish-confirm")
    expect(confirm).to_be_hidden()

    # Finish asks in words; Escape keeps working, with the focus back on Finish.
    panel.testid("finish-button").click()
    expect(confirm).to_be_visible()
    expect(confirm).to_contain_text("End the session and grade it?")
    expect(panel.testid("finish-confirm-yes")).to_have_text("End and grade")
    expect(panel.testid("finish-confirm-no")).to_have_text("Keep working")
    assert focused_testid(page) == "finish-confirm-yes"
    _shots_at_widths(page, shots, "finish-asks-first", panel.testid("view-agent-status"))
    page.keyboard.press("Escape")
    expect(confirm).to_be_hidden()
    assert focused_testid(page) == "finish-button"
    assert _actions(page) == []

    # Keep working, clicked (or Enter on it): nothing is sent.
    page.keyboard.press("Enter")  # Enter on Finish opens the question again
    expect(confirm).to_be_visible()
    page.keyboard.press("Tab")
    assert focused_testid(page) == "finish-confirm-no"
    page.keyboard.press("Enter")
    expect(confirm).to_be_hidden()
    assert _actions(page) == []

    # Enter on the question ends the session, once.
    panel.testid("finish-button").click()
    page.keyboard.press("Enter")
    assert _last_action(page, 1) == {"name": "FINISH", "args": {}}
    expect(confirm).to_be_hidden()
    _deliver(page, seat.frame("notes", done=True))
    expect(panel.testid("finish-button")).to_be_disabled()


def test_the_agent_status_and_the_step_counts_read_as_words(page: Page,
                                                            shots: StepShots) -> None:
    panel = _open(page, LOCAL)
    seat = OneComponentSeat("text", session=SESSION, context=_context([]), counted="agent")
    frame = seat.frame("notes", whole=True)
    frame["step_counts"] = {"agent": 9, "user": 1}
    frame["step_limits"] = {"agent": 30}
    _deliver(page, frame)
    counts = panel.testid("step-counts")
    expect(counts).to_have_text("agent: 9 of 30 steps used · user: 1 step")
    assert "how many actions each member took" in (counts.get_attribute("title") or "")

    page.evaluate("(message) => window.deliver(message)", {"type": "status", "data": {
        "role": "agent", "status": "waiting", "waiting_for": "tick", "ts": 1002.0}})
    agent = panel.root.locator('[data-testid="agent-status"][data-role="agent"]')
    expect(agent).to_have_attribute("data-status", "waiting")
    words = agent.locator('[data-testid="agent-status-words"]')
    expect(words).to_have_text("waiting for news from you or the team")
    expect(agent).to_contain_text("agent is waiting for news from you or the team")
    assert "a message or an edit from you or a teammate" in (words.get_attribute("title") or "")
    _shots_at_widths(page, shots, "status-in-words", panel.root)

    page.evaluate("(message) => window.deliver(message)", {"type": "status", "data": {
        "role": "agent", "status": "waiting", "waiting_for": "teammate", "ts": 1003.0}})
    expect(words).to_have_text("waiting for you")
    assert "needs your approval" in (words.get_attribute("title") or "")


def test_with_no_plan_the_person_writes_one_or_asks_for_one(page: Page,
                                                           shots: StepShots) -> None:
    panel = _open(page, LOCAL)
    seat = PlanSeat()
    _deliver(page, seat.frame(plan_state(None), whole=True))
    empty = panel.testid("plan-empty")
    expect(empty).to_be_visible()
    expect(empty).to_contain_text("There is no plan yet.")
    _shots_at_widths(page, shots, "no-plan-yet", panel.testid("view-plan"))

    # Ask the agent: a chat message to it; the button says it asked, once.
    panel.testid("plan-ask-agent").click()
    sent = _last_action(page, 1)
    assert sent["name"] == "SEND_TEAMMATE_MESSAGE" and "propose a plan" in sent["args"]["message"]
    expect(panel.testid("plan-ask-agent")).to_be_disabled()
    expect(panel.testid("plan-empty-note")).to_contain_text("Asked the agent")

    # Write the first step: the field takes the focus; Escape cancels, Enter adds it.
    panel.testid("plan-write-first").click()
    new_step = panel.testid("plan-new-step")
    expect(new_step).to_be_focused()
    page.keyboard.type("NOT THIS")
    page.keyboard.press("Escape")
    expect(new_step).to_be_hidden()
    assert focused_testid(page) == "plan-write-first"
    page.keyboard.press("Enter")  # the focused button opens the field again
    expect(new_step).to_be_focused()
    expect(new_step).to_have_value("")
    page.keyboard.type("Ask what the section")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("is for")
    panel.testid("plan-new-step-assignee").select_option("person")
    new_step.click()
    page.keyboard.press("Enter")
    assert _last_action(page, 2) == {"name": "ADD_STEP", "args": {
        "description": "Ask what the section\nis for", "assignee": "person", "after": "",
        "plan": "plan"}}

    # The plan comes back: the prompt goes, and the keyboard goes on with the new step.
    _deliver(page, seat.frame(plan_state([step("s1", "Ask what the section\nis for", "person")])))
    expect(empty).to_be_hidden()
    expect(panel.testid("plan-step")).to_have_count(1)
    assert focused_testid(page) == "plan-step-description"


def test_proposals_take_the_place_of_the_no_plan_prompt(page: Page) -> None:
    panel = _open(page, LOCAL)
    seat = PlanSeat()
    _deliver(page, seat.frame(plan_state(None), whole=True))
    expect(panel.testid("plan-empty")).to_be_visible()
    _deliver(page, seat.frame(plan_state(None, proposals=[
        {"title": "Quick", "steps": [step("s3", "Draft at once")]}])))
    expect(panel.testid("plan-proposals")).to_be_visible()
    expect(panel.testid("plan-empty")).to_be_hidden()
    _deliver(page, seat.frame(plan_state(None), done=True))  # ended with no plan: nothing to do
    expect(panel.testid("plan-write-first")).to_be_disabled()
    expect(panel.testid("plan-ask-agent")).to_be_disabled()


def test_the_kitchen_waits_for_start(page: Page, shots: StepShots) -> None:
    """The game's clock waits for the person: Start (or Enter in the kitchen) sends the first
    action, which starts it; a game key starts it as well."""
    panel = _open(page, LOCAL)
    seat = KitchenSeat()
    _deliver(page, seat.frame(kitchen(0), whole=True))
    view = panel.testid("kitchen")
    expect(view).to_have_attribute("data-clock", "waiting")
    expect(panel.testid("kitchen-starter")).to_be_visible()
    expect(panel.testid("kitchen-start-note")).to_contain_text("The clock waits for you")
    _shots_at_widths(page, shots, "kitchen-waits-for-start", view)

    # Enter in the kitchen is Start: one wait, the row goes, the keys stay in the kitchen.
    panel.testid("kitchen-stage").click()
    page.keyboard.press("Enter")
    assert _last_action(page, 1) == {"name": "WAIT_TEAMMATE_CONTINUE", "args": {}}
    expect(panel.testid("kitchen-starter")).to_be_hidden()
    expect(view).to_have_attribute("data-clock", "starting")
    assert focused_testid(page) == "kitchen-stage"
    page.keyboard.press("Enter")  # started: Enter is nothing again
    page.keyboard.press("ArrowUp")
    assert _last_action(page, 2) == {"name": "MOVE", "args": {"direction": "up"}}
    _deliver(page, seat.frame(kitchen(1)))
    expect(view).to_have_attribute("data-clock", "running")
    expect(panel.testid("kitchen-starter")).to_be_hidden()


def test_a_game_key_starts_the_kitchen_without_start(page: Page) -> None:
    panel = _open(page, LOCAL)
    seat = KitchenSeat()
    _deliver(page, seat.frame(kitchen(0), whole=True))
    expect(panel.testid("kitchen-starter")).to_be_visible()
    panel.testid("kitchen-start").focus()
    page.keyboard.press("Enter")  # the button itself, by the keyboard
    assert _last_action(page, 1) == {"name": "WAIT_TEAMMATE_CONTINUE", "args": {}}
    assert focused_testid(page) == "kitchen-stage"  # the keys go to the kitchen

    other = _open(page, LOCAL)  # a fresh panel: the first key is the first action
    seat = KitchenSeat()
    _deliver(page, seat.frame(kitchen(0), whole=True))
    other.testid("kitchen-stage").click()
    page.keyboard.press("Space")
    assert _last_action(page, 1) == {"name": "INTERACT", "args": {}}
    expect(other.testid("kitchen-starter")).to_be_hidden()
    assert not any(a["name"] == "WAIT_TEAMMATE_CONTINUE" for a in _actions(page))

    # A watcher's kitchen (no chef of its own to play) never offers Start.
    watcher = _open(page, LOCAL | {"readonly": True})
    _deliver(page, KitchenSeat().frame(kitchen(0), whole=True))
    expect(watcher.testid("kitchen")).to_have_attribute("data-clock", "running")
    expect(watcher.testid("kitchen-starter")).to_be_hidden()


#: A stand-in for JupyterLab's notebook around the panel: cells with a CodeMirror editor each,
#: the panel's output in the first (the page's #root moves into it).
FAKE_NOTEBOOK = """() => {
    const cell = (first, rest) => {
        const node = document.createElement('div');
        node.className = 'jp-Cell jp-CodeCell';
        node.innerHTML = '<div class="jp-InputArea-editor"><div class="cm-content">'
            + '<div class="cm-line"></div><div class="cm-line"></div></div></div>';
        const [one, two] = node.querySelectorAll('.cm-line');
        one.textContent = first;
        two.textContent = rest;
        return node;
    };
    const notebook = document.createElement('div');
    notebook.className = 'jp-Notebook';
    const start = cell('%cogym new reading', '');
    start.append(document.getElementById('root'));
    notebook.append(start, cell('# written by agent (cogym agent, session s1)', 'x = 1'),
                    cell('print(x)', ''));
    document.body.append(notebook);
    window.addCell = (first) => notebook.append(cell(first, 'y = 2'));
    window.editFirstLine = (index, text) => {
        notebook.querySelectorAll('.jp-Cell')[index].querySelector('.cm-line').textContent = text;
    };
}"""


def test_the_agents_cells_are_marked_in_the_notebook(page: Page, shots: StepShots) -> None:
    panel = _open(page, LOCAL)
    page.evaluate(FAKE_NOTEBOOK)
    seat = OneComponentSeat("text", session=SESSION, context=_context([]))
    _deliver(page, seat.frame("notes", whole=True))
    cells = page.locator(".jp-Notebook > .jp-Cell")
    marked = re.compile(r"\bcogym-agent-cell\b")
    expect(cells.nth(1)).to_have_class(marked)
    expect(cells.nth(1)).to_have_attribute("data-cogym-author", "agent")
    badge = cells.nth(1).evaluate("(cell) => getComputedStyle(cell, '::after').content")
    assert badge == '"written by agent"', badge
    expect(cells.nth(0)).not_to_have_class(marked)  # the panel's own cell
    expect(cells.nth(2)).not_to_have_class(marked)  # the person's

    # A cell the agent adds later is marked; a cell whose first line a person rewrote is not.
    page.evaluate("window.addCell('# written by helper (cogym agent, session s1)')")
    expect(cells.nth(3)).to_have_attribute("data-cogym-author", "helper")
    page.evaluate("window.editFirstLine(1, 'x = 1  # mine now')")
    expect(cells.nth(1)).not_to_have_class(marked)
    expect(cells.nth(1)).not_to_have_attribute("data-cogym-author", re.compile(".*"))
    shots.take("agent-cells-marked", focus=cells.nth(3))
    assert panel.root.is_visible()
