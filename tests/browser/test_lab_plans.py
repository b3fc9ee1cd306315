"""A person co-plans a trip with the plan-aware agent, in JupyterLab in a real browser.

The person (this test, in Chromium) starts a ``travel_planning`` session of the
``collaborative-plans`` team from a notebook, in the seat ``user`` (the simulated user's seat:
a person takes it). The agent runs in the Jupyter server on the loopback scripted LM
(``tests/browser/plan_script.py``): it proposes two plans, runs the one picked, carries out its
steps with real travel actions, tells the person about their steps and writes the plan output
into the shared travel plan.

The person picks the second plan, takes an agent step, runs the plan, completes their steps in
the side area, curates a finished step's output, reruns an earlier step, runs the remaining
ones and finds the plan output in the editor. Each stage is checked in the page and in the
server's state, and at the end the results folder's log holds the plan actions in order.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, expect

from cogym_lab.core.messages import EventType
from cogym_lab.envs import make_env
from cogym_lab.nodes.results import read_events
from tests.browser.jupyter_lab import JupyterLabServer, ServerSession
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage
from tests.browser.plan_script import DAY_ONE, FLIGHTS, PERSON_STEP, STAYS, TravelPlanAgent, Trip
from tests.browser.screenshots import StepShots
from tests.browser.scripted_lm import ScriptedLM
from tests.browser.test_tabular_flow import wait_for

START = ("%load_ext cogym_lab\n"
         "%cogym new travel_planning --instance 0 --team collaborative-plans --role user "
         "--idle-seconds 600")
PLAN = "interactive_plan"  # the plan component (the travel task's editor is `plan`)
STAY_TEXT = "We keep to one entire home for all seven of us."
STAY_ITEM = "Family house near the studios"
SECOND_ITEM = "Backup: two flats downtown"
DAYS_TEXT = "Day 2 matters most: the studio tour."
EDITED_TEXT = "Day 1 is in the plan; dinner we choose ourselves."


def _row(panel: SessionPanelPage, step_id: str) -> Locator:
    return panel.root.locator(f'[data-testid="plan-step"][data-step="{step_id}"]')


def _in(row: Locator, testid: str) -> Locator:
    return row.locator(f'[data-testid="{testid}"]')


def _fits(page: Page) -> None:
    """Nothing of the plan view sticks out of the panel sideways."""
    widths = page.evaluate("""() => {
        const panel = document.querySelector('[data-testid=cogym-panel]');
        const view = document.querySelector('[data-testid=view-plan]');
        return {panel: panel.getBoundingClientRect().right,
                view: view.getBoundingClientRect().right,
                scroll: view.scrollWidth, client: view.clientWidth};
    }""")
    assert widths["view"] <= widths["panel"] + 1, widths
    assert widths["scroll"] <= widths["client"] + 1, widths


class Session(ServerSession):
    """The plan session as the server holds it (REST)."""

    def plan(self) -> dict[str, Any]:
        return self.component(PLAN)

    def steps(self) -> dict[str, dict[str, Any]]:
        plan = self.plan()["plan"]
        return {s["description"]: s for s in (plan or {}).get("steps", [])}

    def statuses(self) -> list[str]:
        return [s["status"] for s in self.steps().values()]

    def wait(self, predicate, what: str, timeout: float = 60.0) -> Any:
        return wait_for(lambda: predicate(self.plan()), what, timeout)


def _step_id(steps: dict[str, dict[str, Any]], starts: str) -> str:
    return next(s["id"] for d, s in steps.items() if d.startswith(starts))


def test_a_person_co_plans_a_trip_with_the_plan_aware_agent(
        lab: LabPage, shots: StepShots, lm: ScriptedLM, jupyter_lab: JupyterLabServer,
        use_shared_data: Path) -> None:
    agent = TravelPlanAgent(Trip.of(make_env("travel_planning", instance=0).task))
    lm.use(agent)
    page = lab.page

    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, START)
    start_cell = lab.run_cell(notebook, 0)
    panel = SessionPanelPage.find(page, start_cell)
    session = Session(jupyter_lab, panel.session_id)

    # 1. the agent proposes two plans; the person pauses the agent (and resumes it once the
    # plan runs: the agent catches up then), and picks the second plan with the selector
    proposals = panel.testid("plan-proposal")
    expect(proposals).to_have_count(2, timeout=UI_TIMEOUT_MS)
    pause = panel.testid("pause-button")
    pause.click()
    expect(pause).to_have_attribute("data-state", "paused", timeout=UI_TIMEOUT_MS)
    second = agent.plans()[1]
    expect(proposals.nth(1)).to_contain_text(second["title"])
    expect(_in(proposals.nth(1), "plan-proposal-step")).to_have_count(4)
    expect(_in(proposals.nth(1), "plan-proposal-step").nth(1)).to_contain_text(
        f"person {PERSON_STEP}")
    _in(proposals.nth(1), "plan-select").click()
    expect(panel.testid("plan-step")).to_have_count(4, timeout=UI_TIMEOUT_MS)
    expect(panel.testid("plan-title")).to_contain_text(second["title"])
    steps = session.steps()
    assert [s["assignee"] for s in steps.values()] == ["agent", "person", "agent", "agent"]
    assert list(steps) == [s["description"] for s in second["steps"]]
    stays, days, flights, day_one = (_step_id(steps, text)
                                     for text in (STAYS, PERSON_STEP, FLIGHTS, DAY_ONE))
    shots.take("1-second-plan-picked", focus=panel.root, where="start")

    # 2. the person takes the search for places to stay with the assignment toggle; Escape in
    # a description leaves it as it was; Shift+Enter adds a line to their own step's description
    toggle = _in(_row(panel, stays), "plan-step-assign")
    expect(toggle).to_have_attribute("data-assignee", "agent")
    toggle.click()
    expect(toggle).to_have_attribute("data-assignee", "person", timeout=UI_TIMEOUT_MS)
    session.wait(lambda p: p["plan"]["steps"][0]["assignee"] == "person", "ASSIGN_STEP")

    flight_text = _in(_row(panel, flights), "plan-step-description")
    flight_text.click()
    page.keyboard.press("Control+End")
    page.keyboard.type(" NOT THIS")
    page.keyboard.press("Escape")
    expect(flight_text).to_have_value(second["steps"][2]["description"])
    assert not flight_text.evaluate("(field) => field === document.activeElement")

    days_text = _in(_row(panel, days), "plan-step-description")
    days_text.click()
    page.keyboard.press("Control+End")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("and which we keep free")
    expect(days_text).to_have_value(f"{PERSON_STEP}\nand which we keep free")
    page.keyboard.press("Enter")
    session.wait(lambda p: p["plan"]["steps"][1]["description"]
                 == f"{PERSON_STEP}\nand which we keep free", "EDIT_STEP with Shift+Enter")
    shots.take("2-stays-step-taken", focus=panel.root, where="start")

    # 3. Run all: the plan stops at the person's step (the question mark), and the agent says
    # in the chat that the step is theirs
    panel.testid("plan-run-all").click()
    stays_row = _row(panel, stays)
    expect(stays_row).to_have_attribute("data-status", "needs_input", timeout=UI_TIMEOUT_MS)
    expect(_in(stays_row, "plan-step-status")).to_contain_text("?")
    pause.click()  # the agent goes on: it catches up and tells the person about their step
    expect(pause).to_have_attribute("data-state", "running", timeout=UI_TIMEOUT_MS)
    panel.chat_message("Step 1 of the plan is yours")  # by its place in the plan
    expect(panel.testid("step-output")).to_have_attribute("data-step", stays)
    shots.take("3-run-stops-at-the-persons-step", focus=panel.root, where="start")

    # a reload mid-way: the plan comes back as it was
    before = [(_row(panel, s).get_attribute("data-status"),
               _row(panel, s).get_attribute("data-assignee")) for s in (stays, days, flights,
                                                                         day_one)]
    page.reload(wait_until="domcontentloaded")
    lab.wait_until_ready()
    notebook = lab.current_notebook()
    panel = SessionPanelPage.find(page, lab.cells(notebook).nth(0))
    assert panel.session_id == session.session_id
    expect(panel.testid("plan-step")).to_have_count(4, timeout=UI_TIMEOUT_MS)
    after = [(_row(panel, s).get_attribute("data-status"),
              _row(panel, s).get_attribute("data-assignee")) for s in (stays, days, flights,
                                                                        day_one)]
    assert after == before == [("needs_input", "person"), ("not_run", "person"),
                               ("not_run", "agent"), ("not_run", "agent")]
    expect(panel.testid("step-output")).to_have_attribute("data-step", stays)
    panel.chat_message("Step 1 of the plan is yours")  # by its place in the plan

    # 4. the person completes their step in the side area: text, an item by Enter, an item by
    # the button, Complete step
    side = panel.testid("step-output")
    side.locator('[data-testid="step-output-text"]').click()
    page.keyboard.type(STAY_TEXT)
    side.locator('[data-testid="step-output-item-input"]').click()
    page.keyboard.type(STAY_ITEM)
    page.keyboard.press("Enter")
    page.keyboard.type(SECOND_ITEM)
    side.locator('[data-testid="step-output-item-add"]').click()
    expect(side.locator('[data-testid="step-output-card-title"]')).to_have_text(
        [STAY_ITEM, SECOND_ITEM])  # cards, of no kind until the session gives them one
    shots.take("4a-person-fills-in-their-step", focus=panel.root, where="start")
    side.locator('[data-testid="step-output-complete"]').click()
    expect(stays_row).to_have_attribute("data-status", "done", timeout=UI_TIMEOUT_MS)
    # the run goes on to the next person step; the person completes it too
    days_row = _row(panel, days)
    expect(days_row).to_have_attribute("data-status", "needs_input", timeout=UI_TIMEOUT_MS)
    panel.chat_message("Step 2 of the plan is yours")  # the second step: the days
    expect(side).to_have_attribute("data-step", days, timeout=UI_TIMEOUT_MS)
    side.locator('[data-testid="step-output-text"]').click()
    page.keyboard.type(DAYS_TEXT)
    side.locator('[data-testid="step-output-complete"]').click()
    expect(days_row).to_have_attribute("data-status", "done", timeout=UI_TIMEOUT_MS)
    done = session.steps()
    stay_step = done[STAYS + f" in {agent.trip.destination}"]
    assert stay_step["completed_by"] == "user"
    assert stay_step["output"]["text"] == STAY_TEXT
    assert [i.get("title") for i in stay_step["output"]["items"]] == [STAY_ITEM, SECOND_ITEM]
    shots.take("4b-person-steps-completed", focus=panel.root, where="start")

    # 5. the run goes on: the agent searches flights and writes day 1; the person opens day 1's
    # output, removes an item, edits the text, and saves
    day_row = _row(panel, day_one)
    expect(_row(panel, flights)).to_have_attribute("data-status", "done", timeout=UI_TIMEOUT_MS)
    expect(day_row).to_have_attribute("data-status", "done", timeout=UI_TIMEOUT_MS)
    session.wait(lambda p: p["output"], "the first plan output")
    _in(day_row, "plan-step-inspect").click()
    expect(side).to_have_attribute("data-step", day_one)
    items = side.locator('[data-testid="step-output-item"]')
    expect(items).to_have_count(2)
    items.filter(has_text="dinner").locator('[data-testid="step-output-item-remove"]').click()
    expect(items).to_have_count(1)
    text = side.locator('[data-testid="step-output-text"]')
    text.click()
    page.keyboard.press("Control+A")
    page.keyboard.type(EDITED_TEXT)
    side.locator('[data-testid="step-output-save"]').click()
    expect(_in(day_row, "plan-step-edited")).to_be_visible(timeout=UI_TIMEOUT_MS)
    edited = session.wait(lambda p: p["plan"]["steps"][3]["output"]["edited"] and p,
                          "EDIT_STEP_OUTPUT")
    assert edited["plan"]["steps"][3]["output"]["text"] == EDITED_TEXT
    assert [i.get("title") for i in edited["plan"]["steps"][3]["output"]["items"]] == [
        "Day 1: arrive and settle in"]
    # a narrow window once: the side area goes under the steps, nothing sticks out
    page.set_viewport_size({"width": 800, "height": 1000})
    _fits(page)
    shots.take("5-day-one-output-edited-narrow", focus=side, where="center")
    page.set_viewport_size({"width": 1600, "height": 1200})

    # 6. the person reruns the flight search with its play button: day 1 goes stale; the agent
    # runs the flights again; Run remaining runs day 1 again
    _in(_row(panel, flights), "plan-step-run").click()
    expect(day_row).to_have_attribute("data-status", "stale", timeout=UI_TIMEOUT_MS)
    expect(_in(day_row, "plan-step-status")).to_contain_text("↻")
    session.wait(lambda p: p["plan"]["steps"][2]["runs"] == 2
                 and p["plan"]["steps"][2]["status"] == "done", "the flights run again")
    expect(_row(panel, flights)).to_have_attribute("data-status", "done", timeout=UI_TIMEOUT_MS)
    expect(day_row).to_have_attribute("data-status", "stale")
    shots.take("6a-rerun-makes-day-one-stale", focus=panel.root, where="start")
    panel.testid("plan-run-remaining").click()
    session.wait(lambda p: p["plan"]["steps"][3]["runs"] == 2
                 and p["plan"]["steps"][3]["status"] == "done", "day 1 run again")
    expect(day_row).to_have_attribute("data-status", "done", timeout=UI_TIMEOUT_MS)
    shots.take("6b-run-remaining-ran-day-one-again", focus=panel.root, where="start")

    # 7. every step is done: the plan output is below the plan and in the travel plan editor
    final = session.wait(lambda p: p["output"] and "#2" in p["output"] and p,
                         "the plan output after the rerun")
    output = final["output"]
    assert output == agent.output(2)
    panel.testid("plan-output").locator("summary").click()  # unfold it
    expect(panel.testid("plan-output-text")).to_have_text(output, timeout=UI_TIMEOUT_MS)
    editor = panel.editor("plan")
    expect(editor).to_have_value(re.compile(re.escape(output)), timeout=UI_TIMEOUT_MS)
    travel_plan = session.component("plan")
    travel_text = travel_plan if isinstance(travel_plan, str) else str(travel_plan)
    assert output in travel_text and agent.day_one() in travel_text
    shots.take("7-plan-output-in-the-editor", focus=panel.root, where="start")

    # the log: the plan actions in the order of the plan's life, each by its side
    events = read_events(jupyter_lab.results_dir / session.session_id)
    acts = [(e.actor, (e.action or "").split("(", 1)[0]) for e in events
            if e.type in (EventType.ACTION, EventType.MESSAGE) and e.action
            and e.status == "ok"]
    names = [name for _, name in acts]
    assert ("agent", "RUN_ALL") not in acts  # the person ran it
    for actor, name in [("agent", "PROPOSE_PLANS"), ("user", "SELECT_PLAN"),
                        ("user", "ASSIGN_STEP"), ("user", "EDIT_STEP"), ("user", "RUN_ALL"),
                        ("user", "COMPLETE_STEP"), ("agent", "FLIGHT_SEARCH"),
                        ("agent", "EDITOR_UPDATE"), ("agent", "COMPLETE_STEP"),
                        ("user", "EDIT_STEP_OUTPUT"), ("user", "RUN_STEP"),
                        ("user", "RUN_REMAINING"), ("agent", "WRITE_PLAN_OUTPUT")]:
        assert (actor, name) in acts, (actor, name, acts)
    first = names.index
    assert first("PROPOSE_PLANS") < first("SELECT_PLAN") < first("ASSIGN_STEP") < first(
        "RUN_ALL") < first("EDIT_STEP_OUTPUT") < first("RUN_STEP") < first("RUN_REMAINING")
    assert acts.count(("user", "COMPLETE_STEP")) == 2
    assert acts.count(("agent", "WRITE_PLAN_OUTPUT")) == 2  # once, and again after the rerun
    assert all(e.status == "ok" for e in events if e.actor == "agent"), [
        (e.action, e.status) for e in events if e.actor == "agent" and e.status != "ok"]
    # the agent carried out only its own steps; the flights and day 1 twice each
    ran = [(step, calls) for step, _, calls in agent.step_calls]
    assert {step for step, _ in ran} == {flights, day_one}
    assert ran.count((flights, 0)) == 2 and ran.count((day_one, 0)) == 2
