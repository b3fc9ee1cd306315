"""A person co-plans the kitchen's division of labour with the FSM chef, in JupyterLab in a real
browser.

The person (this test, in Chromium) starts a planned ``kitchen`` session (``plans=true``) of
the ``kitchen-fsm`` team in the seat ``user`` (paper mode: moves and interact only). The chef
proposes divisions of labour before the clock starts; the person picks the first with the
keyboard (Enter on its "Use this plan") and runs it (Enter on "Run all"): co-planning does
not start the clock, and the chef makes no move meanwhile. Their first arrow key starts it;
they play with the arrows and Space while the chef works its agent steps, and see the chef's
first step done in the plan. Escape in a step's description leaves it as it was; the window
is resized and the page reloaded: the plan comes back with the chef's step done, and the
arrows move the chef.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Locator, expect

from tests.browser.jupyter_lab import JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage, focused_testid
from tests.browser.screenshots import StepShots
from tests.browser.test_kitchen_keyboard_play import _step_and_back
from tests.browser.test_lab_kitchen import KitchenSession, _in_kitchen, _wait_tick
from tests.browser.test_tabular_flow import wait_for

TICK_SECONDS = 0.1
TICKS = 3000  # the game outlasts the test; the fixture ends the session
START = ("%load_ext cogym_lab\n"
         f"%cogym new kitchen --team kitchen-fsm --role user --env-arg plans=true"
         f" --env-arg tick_seconds={TICK_SECONDS} --env-arg ticks={TICKS} --idle-seconds 600")
PLAN = "interactive_plan"
CHEF_STEP = "cook beef 2 times"  # the first proposal's first step: the chef's


class PlannedKitchen(KitchenSession):
    def plan(self) -> dict[str, Any]:
        return self.component(PLAN)


def _in(row: Locator, testid: str) -> Locator:
    return row.locator(f'[data-testid="{testid}"]')


def test_a_person_co_plans_the_kitchen_with_the_chef_and_plays(
        lab: LabPage, shots: StepShots, jupyter_lab: JupyterLabServer) -> None:
    page = lab.page
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, START)
    panel = SessionPanelPage.find(page, lab.run_cell(notebook, 0))
    session = PlannedKitchen(jupyter_lab, panel.session_id)
    kitchen = panel.root.locator("[data-testid=kitchen]")
    expect(kitchen).to_have_attribute("data-playing", "true", timeout=UI_TIMEOUT_MS)

    # 1. the chef's proposals are there before the clock starts: three divisions of labour
    proposals = panel.testid("plan-proposal")
    expect(proposals).to_have_count(3, timeout=UI_TIMEOUT_MS)
    offered = session.plan()["proposals"]
    expect(proposals.nth(0)).to_contain_text(offered[0]["title"])
    expect(_in(proposals.nth(0), "plan-proposal-step").nth(0)).to_contain_text(
        f"agent {CHEF_STEP}")
    assert session.kitchen()["tick"] == 0  # proposing did not need the clock
    shots.take("1-the-chefs-proposals", focus=panel.root, where="start")

    # 2. the person picks the first with the keyboard and runs it with the keyboard
    use = _in(proposals.nth(0), "plan-select")
    use.focus()
    page.keyboard.press("Enter")
    rows = panel.testid("plan-step")
    expect(rows).to_have_count(len(offered[0]["steps"]), timeout=UI_TIMEOUT_MS)
    expect(panel.testid("plan-title")).to_contain_text(offered[0]["title"])
    run_all = panel.testid("plan-run-all")
    run_all.focus()
    page.keyboard.press("Enter")
    first = panel.root.locator('[data-testid="plan-step"][data-step="s1"]')
    expect(first).to_have_attribute("data-status", "running", timeout=UI_TIMEOUT_MS)

    # 3. Escape in the chef's step description leaves it as it was and leaves the field
    text = _in(first, "plan-step-description")
    text.click()
    page.keyboard.press("Control+End")
    page.keyboard.type(" NOT THIS")
    page.keyboard.press("Escape")
    expect(text).to_have_value(CHEF_STEP)
    assert focused_testid(page) != "plan-step-description"
    shots.take("2-picked-and-running", focus=panel.root, where="start")

    # 4. co-planning is not playing: the clock is still at tick 0 (Start still shows) and the
    # chef has made no move; the person's first arrow key starts the clock, and they play with
    # the arrows and Space while the chef cooks
    expect(panel.testid("kitchen-starter")).to_be_visible()
    chef_at = session.chef("agent")["pos"]
    page.wait_for_timeout(TICK_SECONDS * 1000 * 10)  # ten ticks, had the clock started
    assert session.kitchen()["tick"] == 0 and session.chef("agent")["pos"] == chef_at
    assert [name for name, _ in session.actions_of("agent")] == ["PROPOSE_PLANS"]
    panel.testid("kitchen-stage").click()
    assert _in_kitchen(page)
    _step_and_back(page, panel, session)
    expect(panel.testid("kitchen-starter")).to_be_hidden()
    _wait_tick(page, 3)
    page.keyboard.press("Space")
    wait_for(lambda: ("INTERACT", "ok") in session.actions_of("user"), "INTERACT in the log")

    # 5. the chef's step is done in the plan (it cooked the beef twice), completed by the chef
    expect(first).to_have_attribute("data-status", "done", timeout=UI_TIMEOUT_MS * 3)
    step = session.plan()["plan"]["steps"][0]
    assert step["status"] == "done" and step["completed_by"] == "agent"
    agent = [name for name, _ in session.actions_of("agent")]
    assert agent[0] == "PROPOSE_PLANS" and "COMPLETE_STEP" in agent
    person = [name for name, _ in session.actions_of("user")]
    assert {"SELECT_PLAN", "RUN_ALL", "MOVE", "INTERACT"} <= set(person)
    shots.take("3-the-chefs-step-done", focus=panel.root, where="start")

    # 6. a narrow window: the kitchen and the plan still show
    page.set_viewport_size({"width": 800, "height": 900})
    expect(panel.testid("kitchen-stage")).to_be_visible()
    expect(first).to_be_attached()
    shots.take("4-narrow-window", focus=panel.root, where="start")
    page.set_viewport_size({"width": 1600, "height": 1200})

    # 7. a reload: the plan comes back with the chef's step done, and the arrows still work
    page.reload(wait_until="domcontentloaded")
    lab.wait_until_ready()
    panel = SessionPanelPage.find(page, lab.cells(lab.current_notebook()).nth(0))
    assert panel.session_id == session.session_id
    expect(panel.root.locator("[data-testid=kitchen]")).to_have_attribute(
        "data-playing", "true", timeout=UI_TIMEOUT_MS)
    first = panel.root.locator('[data-testid="plan-step"][data-step="s1"]')
    expect(first).to_have_attribute("data-status", "done", timeout=UI_TIMEOUT_MS)
    panel.testid("kitchen-stage").click()
    _step_and_back(page, panel, session)
    shots.take("5-after-the-reload", focus=panel.root, where="start")
