"""Cocoa's interactive plans as the paper has them, in JupyterLab in a real browser: a person edits
a step so that the plan's course changes and is offered a replan, picks an autocompletion for a
step they add, starts a second plan with "+ New plan", runs both plans side by side, folds one
(it stays folded after a reload), and looks at them in a wide and a narrow window.

The session is a ``travel_planning`` session of the ``collaborative-plans`` team (the plan-aware
agent), started from a notebook as ``test_lab_plans.py`` starts it; the agent's LM is the
loopback scripted LM (:class:`SeveralPlansAgent` below). Its answers to the agent's step prompts
wait until the test lets them go, so both plans are seen running at once.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from playwright.sync_api import Locator, Page, expect

from cogym_lab.core.messages import EventType
from cogym_lab.core.plan_env import PLAN_COMPONENT, plan_component
from cogym_lab.envs import make_env
from cogym_lab.nodes.results import read_events
from tests.browser.jupyter_lab import JupyterLabServer, ServerSession
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage, focused_testid
from tests.browser.plan_script import DAY_ONE, PERSON_STEP, TravelPlanAgent, Trip
from tests.browser.screenshots import StepShots
from tests.browser.scripted_lm import ScriptedLM
from tests.browser.test_tabular_flow import wait_for

START = ("%load_ext cogym_lab\n"
         "%cogym new travel_planning --instance 0 --team collaborative-plans --role user "
         "--idle-seconds 600")
SECOND = plan_component(2)
CAMPING = "Search campsites near the city instead of houses"
WEATHER = "Check the weather"
WEATHER_DONE = "Check the weather for each day and pack for rain"
EVENINGS = "Plan the evenings"
REQUEST = f"{EVENINGS}\nwith the kids"
RESTAURANTS = "Find restaurants near the campsite"
#: What the agent proposes for the second plan (its proposal prompt names the plan's request).
EVENINGS_PLAN = {"title": "Evenings", "steps": [{"description": RESTAURANTS,
                                                 "assignee": "agent"}]}
#: How long an answer to a step prompt waits for the test at most (then it goes anyway).
HOLD_SECONDS = 120.0


class SeveralPlansAgent(TravelPlanAgent):
    """The travel plan flow's LM, which also replans after an edit that changes the course (two
    alternative rests), offers completions for an added step, and completes a step at once with
    one item, once the test lets step answers go (:attr:`go`)."""

    def __init__(self, trip: Trip) -> None:
        super().__init__(trip)
        self.go = threading.Event()
        self.asked: list[str] = []  # which offers the agent's LM was asked for

    def replan_choices(self) -> list[list[dict[str, str]]]:
        return [[{"description": f"Search flights to {self.trip.destination}",
                  "assignee": "agent"},
                 {"description": PERSON_STEP, "assignee": "person"}],
                [{"description": PERSON_STEP, "assignee": "person"},
                 {"description": DAY_ONE, "assignee": "agent"}]]

    def __call__(self, body: dict[str, Any]) -> str:
        asked = body["messages"][-1]["content"]
        if "propose how the team could go about the task" in asked and EVENINGS in asked:
            self.asked.append("evenings")
            return ("Thought: one step is enough.\n"
                    f"Plans: {json.dumps([EVENINGS_PLAN])}")
        if "Your teammate rewrote step" in asked:
            self.asked.append("replan")
            return ("Thought: campsites change what the later steps work from.\n"
                    f"Replan: {json.dumps(self.replan_choices())}")
        if "Your teammate is writing step" in asked:
            self.asked.append("completions")
            return ("Thought: the weather decides what to pack.\n"
                    f"Completions: {json.dumps([WEATHER_DONE, WEATHER + ' the day before'])}")
        return super().__call__(body)

    def _step(self, asked: str) -> str:
        found = re.search(r"You are carrying out step (\S+) of the team's plan", asked)
        assert found, asked[:300]
        self.go.wait(HOLD_SECONDS)
        with self._lock:
            self.step_calls.append((found.group(1), "", 0))
        items = json.dumps([{"id": "found", "title": "What the step found"}])
        return (f"Thought: done.\nAction: COMPLETE_STEP(step={json.dumps(found.group(1))}, "
                f'text="Found it.", items={items})')


class Session(ServerSession):
    """The session as the server holds it (REST)."""

    def plan(self, name: str = PLAN_COMPONENT) -> dict[str, Any]:
        return self.component(name)

    def steps(self, name: str = PLAN_COMPONENT) -> list[dict[str, Any]]:
        return list(((self.plan(name) or {}).get("plan") or {}).get("steps", []))

    def wait(self, predicate, what: str, name: str = PLAN_COMPONENT) -> Any:
        return wait_for(lambda: predicate(self.plan(name)), what, 60.0)


def _plan(panel: SessionPanelPage, name: str) -> Locator:
    return panel.root.locator(f'[data-testid="plan-view"][data-plan="{name}"]')


def _box(panel: SessionPanelPage, name: str) -> Locator:
    return panel.root.locator(f'[data-testid="view-plan"][data-component="{name}"]')


def _in(within: Locator, testid: str) -> Locator:
    return within.locator(f'[data-testid="{testid}"]')


def _rows(plan: Locator) -> Locator:
    return _in(plan, "plan-step")


def _side_by_side(page: Page, panel: SessionPanelPage) -> bool:
    """Whether the two plans' boxes share a line (else the second is under the first)."""
    first = _box(panel, PLAN_COMPONENT).bounding_box()
    second = _box(panel, SECOND).bounding_box()
    assert first and second
    if abs(first["y"] - second["y"]) <= 2:
        assert second["x"] >= first["x"] + first["width"] - 1, (first, second)
        return True
    assert second["y"] >= first["y"] + first["height"] - 1, (first, second)
    return False


def _fits(page: Page) -> None:
    """Nothing of the plans sticks out of the panel sideways."""
    widths = page.evaluate("""() => {
        const panel = document.querySelector('[data-testid=cogym-panel]').getBoundingClientRect();
        return [...document.querySelectorAll('[data-testid=view-plan]')].map((view) => ({
            right: view.getBoundingClientRect().right, panel: panel.right,
            scroll: view.scrollWidth, client: view.clientWidth}));
    }""")
    for box in widths:
        assert box["right"] <= box["panel"] + 1 and box["scroll"] <= box["client"] + 1, widths


def _open_panel(lab: LabPage, page: Page) -> SessionPanelPage:
    """The panel of the notebook's first cell (after a reload)."""
    lab.wait_until_ready()
    notebook = lab.current_notebook()
    return SessionPanelPage.find(page, lab.cells(notebook).nth(0))


def test_a_person_replans_completes_a_step_and_runs_two_plans_side_by_side(
        lab: LabPage, shots: StepShots, lm: ScriptedLM, jupyter_lab: JupyterLabServer,
        use_shared_data: Any) -> None:
    agent = SeveralPlansAgent(Trip.of(make_env("travel_planning", instance=0).task))
    lm.use(agent)
    page = lab.page
    try:
        _flow(lab, page, shots, agent, jupyter_lab)
    finally:
        agent.go.set()  # an answer still held goes, so nothing waits on the test


def _flow(lab: LabPage, page: Page, shots: StepShots, agent: SeveralPlansAgent,
          jupyter_lab: JupyterLabServer) -> None:
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, START)
    panel = SessionPanelPage.find(page, lab.run_cell(notebook, 0))
    session = Session(jupyter_lab, panel.session_id)
    first = _plan(panel, PLAN_COMPONENT)

    # 1. the agent proposes two plans; the person picks the first
    proposals = _in(first, "plan-proposal")
    expect(proposals).to_have_count(2, timeout=UI_TIMEOUT_MS)
    _in(proposals.nth(0), "plan-select").click()
    expect(_rows(first)).to_have_count(4, timeout=UI_TIMEOUT_MS)
    expect(_in(first, "plan-request")).to_contain_text("For: ")

    # 2. the person rewrites step 1 so that the plan's course changes (Enter saves it): the
    # agent offers to replan the steps after it; the person picks the second choice with the
    # keyboard
    description = _in(_rows(first).nth(0), "plan-step-description")
    description.click()
    page.keyboard.press("Control+A")
    page.keyboard.type(CAMPING)
    page.keyboard.press("Enter")
    session.wait(lambda p: p["plan"]["steps"][0]["description"] == CAMPING, "EDIT_STEP")
    offer = _in(first, "plan-replan-offer")
    expect(offer).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(offer).to_contain_text("Replan the steps after step 1?")
    choices = _in(offer, "plan-replan-choice")
    expect(choices).to_have_count(3)  # two rests of the plan, and Keep the plan as it is
    expect(choices.nth(1)).to_have_text(f"{PERSON_STEP} → {DAY_ONE}")
    shots.take("1-replan-offered", focus=first, where="start")
    choices.nth(1).focus()
    page.keyboard.press("Enter")
    expect(offer).to_be_hidden(timeout=UI_TIMEOUT_MS)
    steps = session.wait(lambda p: not p.get("replan") and p["plan"]["steps"], "ACCEPT_REPLAN")
    assert [(s["description"], s["assignee"]) for s in steps] == [
        (CAMPING, "agent"), (PERSON_STEP, "person"), (DAY_ONE, "agent")]
    expect(_rows(first)).to_have_count(3)

    # 3. the person adds a step at the end (Enter adds it) and picks one of the completions
    # the agent offers, with the keyboard
    _in(first, "plan-add-step").click()
    new_step = _in(first, "plan-new-step")
    expect(new_step).to_be_focused()
    page.keyboard.type(WEATHER)
    page.keyboard.press("Enter")
    completions = _in(first, "plan-completions")
    expect(completions).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(completions).to_contain_text("Complete step 4 with:")
    picks = _in(completions, "plan-completion-choice")
    expect(picks).to_have_count(3)  # two completions and No, thanks
    shots.take("2-completions-offered", focus=first, where="start")
    picks.nth(0).focus()
    page.keyboard.press("Enter")
    expect(_in(_rows(first).nth(3), "plan-step-description")).to_have_value(
        WEATHER_DONE, timeout=UI_TIMEOUT_MS)
    assert session.steps()[3]["description"] == WEATHER_DONE
    assert agent.asked == ["replan", "completions"]

    # 4. "+ New plan": Escape cancels and sends nothing; Enter on the button opens it again;
    # Shift+Enter is a new line; Enter starts the plan, and the keyboard goes on in it
    new_plan = panel.testid("plan-new-plan")
    new_plan.click()
    request = panel.testid("plan-new-plan-request")
    expect(request).to_be_focused()
    page.keyboard.type("NOT THIS")
    page.keyboard.press("Escape")
    expect(request).to_be_hidden()
    assert focused_testid(page) == "plan-new-plan"
    page.keyboard.press("Enter")
    expect(request).to_be_focused()
    expect(request).to_have_value("")
    page.keyboard.type("Plan the evenings")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("with the kids")
    expect(request).to_have_value(REQUEST)
    page.keyboard.press("Enter")
    second = _plan(panel, SECOND)
    expect(second).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(_in(second, "plan-request")).to_contain_text(EVENINGS)
    assert session.plan(SECOND)["request"] == REQUEST
    # the agent proposes a plan for it; the keyboard went on into the new plan and on to the
    # proposal's "Use this plan": Enter picks it
    use = _in(_in(second, "plan-proposal"), "plan-select")
    expect(use).to_have_count(1, timeout=UI_TIMEOUT_MS)
    expect(use).to_be_focused()
    page.keyboard.press("Enter")
    expect(_rows(second)).to_have_count(1, timeout=UI_TIMEOUT_MS)
    expect(_in(second, "plan-title")).to_have_text("Evenings")
    assert [s["description"] for s in session.steps(SECOND)] == [RESTAURANTS]
    assert session.steps()[0]["description"] == CAMPING  # the first plan is its own
    shots.take("3-second-plan-started", focus=panel.root, where="start")

    # 5. Run all in each: both show a step running at the same time (the agent's answer for
    # the first plan's step waits for the test)
    _in(second, "plan-run-all").click()
    _in(first, "plan-run-all").click()
    expect(_rows(second).nth(0)).to_have_attribute("data-status", "running",
                                                   timeout=UI_TIMEOUT_MS)
    expect(_rows(first).nth(0)).to_have_attribute("data-status", "running",
                                                  timeout=UI_TIMEOUT_MS)
    assert session.steps()[0]["status"] == session.steps(SECOND)[0]["status"] == "running"
    shots.take("4-both-plans-running", focus=panel.root, where="start")
    agent.go.set()
    expect(_rows(first).nth(0)).to_have_attribute("data-status", "done", timeout=UI_TIMEOUT_MS)
    expect(_rows(first).nth(1)).to_have_attribute("data-status", "needs_input",
                                                  timeout=UI_TIMEOUT_MS)
    # the agent carried out the second plan's step too, in turn with the first's
    expect(_rows(second).nth(0)).to_have_attribute("data-status", "done", timeout=UI_TIMEOUT_MS)
    assert {step for step, _, _ in agent.step_calls} == {"s1"}  # each plan's s1, once each
    assert len(agent.step_calls) == 2
    shots.take("5-first-plan-on-to-the-persons-step", focus=panel.root, where="start")

    # 6. fold the second plan with the keyboard: Space folds, Enter unfolds, Space again
    toggle = _in(second, "plan-collapse")
    toggle.focus()
    page.keyboard.press("Space")
    expect(second).to_have_attribute("data-collapsed", "true")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(_rows(second).nth(0)).to_be_hidden()
    expect(_in(second, "plan-summary")).to_have_text("1 step: all done")
    page.keyboard.press("Enter")
    expect(second).to_have_attribute("data-collapsed", "false")
    expect(_rows(second).nth(0)).to_be_visible()
    page.keyboard.press("Space")
    expect(second).to_have_attribute("data-collapsed", "true")
    shots.take("6-second-plan-folded", focus=panel.root, where="start")

    # a reload: the second plan is still folded, the first is not
    page.reload(wait_until="domcontentloaded")
    panel = _open_panel(lab, page)
    first, second = _plan(panel, PLAN_COMPONENT), _plan(panel, SECOND)
    expect(_rows(first)).to_have_count(4, timeout=UI_TIMEOUT_MS)
    expect(second).to_have_attribute("data-collapsed", "true")
    expect(first).to_have_attribute("data-collapsed", "false")
    expect(_rows(second).nth(0)).to_be_hidden()
    # "+ New plan" comes back after the last plan
    assert panel.root.evaluate("""(root) => root.querySelector(
        '[data-component=interactive_plan_2]').nextElementSibling.dataset.testid""") == \
        "plan-new-plan-box"
    shots.take("7-still-folded-after-a-reload", focus=panel.root, where="start")
    _in(second, "plan-collapse").focus()
    page.keyboard.press("Enter")
    expect(_rows(second).nth(0)).to_be_visible()

    # 7. a wide window: the plans side by side; a narrow one: one under the other
    page.set_viewport_size({"width": 2200, "height": 1300})
    wait_for(lambda: _side_by_side(page, panel), "the plans side by side", 10.0)
    _fits(page)
    shots.take("8-wide-side-by-side", focus=panel.root, where="start")
    page.set_viewport_size({"width": 900, "height": 1300})
    wait_for(lambda: not _side_by_side(page, panel), "the plans one under the other", 10.0)
    _fits(page)
    shots.take("9-narrow-stacked", focus=_box(panel, SECOND), where="end")
    page.set_viewport_size({"width": 1600, "height": 1200})

    # the log: each plan act named its plan; the person's replan, completion and new plan
    events = read_events(jupyter_lab.results_dir / session.session_id)
    acts = [(e.actor, e.action or "") for e in events
            if e.type is EventType.ACTION and e.status == "ok" and e.action]
    mine = [action for actor, action in acts if actor == "user"]
    for start in ("EDIT_STEP(", "ACCEPT_REPLAN(", "PICK_COMPLETION(", "RUN_ALL("):
        assert any(a.startswith(start) and f'plan="{PLAN_COMPONENT}"' in a for a in mine), start
    for start in ("SELECT_PLAN(", "RUN_ALL("):
        assert any(a.startswith(start) and f'plan="{SECOND}"' in a for a in mine), start
    assert any(a.startswith("NEW_PLAN(") and "Plan the evenings" in a for a in mine)
    assert not any("NOT THIS" in a for _, a in acts)  # Escape sent nothing
    assert [a.split("(", 1)[0] for actor, a in acts if actor == "agent"
            and a.startswith("OFFER_")] == ["OFFER_REPLAN", "OFFER_COMPLETIONS"]
    assert any(a.startswith("PROPOSE_PLANS(") and f'plan="{SECOND}"' in a
               for actor, a in acts if actor == "agent")
