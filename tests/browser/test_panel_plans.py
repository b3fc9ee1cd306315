"""The panel's plan view (interactive plans, docs/plans.md) and the rating form's optional
statements: the real ES module in Chromium on a test page, fed update frames whose ``plan``
component goes through a plan's life (proposals, a selected plan, a running agent step, a person
step that needs input, done, stale and failed steps, the plan output). The person types, clicks
and completes steps as a person does, and each step checks the exact action the panel sent.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Locator, Page, expect

from tests.browser.lab_page import UI_TIMEOUT_MS
from tests.browser.panel_page import SessionPanelPage, assert_text_stayed_text, focused_testid
from tests.browser.screenshots import StepShots
from tests.browser.seat_frames import OneComponentSeat
from tests.browser.test_panel_updates import LOCAL, SESSION, _deliver, _open

HOSTILE = "<img src=x onerror=alert(1)>"
LINE_SEPARATOR = "\u2028"
LONG = "long" + "y" * 4992 + "end"  # 5,000 characters
REQUEST = "Write a related-work section on retrieval-augmented generation."

CONTEXT = {
    "session_id": SESSION, "task": "related_work", "task_description": REQUEST,
    "role": "user", "kind": "person",
    "team": [{"role": "agent", "kind": "agent"}, {"role": "user", "kind": "person"}],
    "action_specs": [], "collaboration_specs": [],
}


def step(step_id: str, description: str, assignee: str = "agent", status: str = "not_run",
         output: dict[str, Any] | None = None, runs: int = 0) -> dict[str, Any]:
    return {"id": step_id, "description": description, "assignee": assignee, "status": status,
            "output": output, "runs": runs, "completed_by": None if output is None else (
                "user" if assignee == "person" else "agent"), "undo": None}


def plan_state(steps: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    """The plan component's content (PlanState): the plan ``steps`` (None: no plan yet)."""
    return {"request": REQUEST, "proposals": [], "continuous": False, "pause_after": None,
            "context": [], "awaiting_output": False, "output": None, "next_id": 9,
            "plan": None if steps is None else {"title": "Survey then write", "steps": steps},
            **fields}


class PlanSeat(OneComponentSeat):
    """Makes the frames of a seat whose view is one ``plan`` component."""

    def __init__(self) -> None:
        super().__init__("plan", session=SESSION, context=CONTEXT, counted="agent")


def _row(panel: SessionPanelPage, step_id: str) -> Locator:
    return panel.root.locator(f'[data-testid="plan-step"][data-step="{step_id}"]')


def _in(row: Locator, testid: str) -> Locator:
    return row.locator(f'[data-testid="{testid}"]')


def _actions(page: Page) -> list[dict[str, Any]]:
    return [m["action"] for m in page.evaluate("window.sent") if m.get("type") == "action"]


def _last_action(page: Page, count: int, plan: str | None = "plan") -> dict[str, Any]:
    """The last action sent, once ``count`` actions were sent. A plan action names its plan
    (the component's name, ``plan`` here): checked, then left out of what is returned."""
    page.wait_for_function(f"window.sent.filter((m) => m.type === 'action').length >= {count}",
                           timeout=UI_TIMEOUT_MS)
    actions = _actions(page)
    assert len(actions) == count, actions
    action = actions[-1]
    if plan is not None:
        assert action["args"].pop("plan", None) == plan, action
    return action




def _fits(page: Page) -> None:
    """Nothing of the plan sticks out of the panel sideways."""
    widths = page.evaluate("""() => {
        const panel = document.querySelector('[data-testid=cogym-panel]');
        const view = document.querySelector('[data-testid=view-plan]');
        return {panel: panel.getBoundingClientRect().right, view: view.getBoundingClientRect().right,
                scroll: view.scrollWidth, client: view.clientWidth};
    }""")
    assert widths["view"] <= widths["panel"] + 1 and widths["scroll"] <= widths["client"] + 1, widths


def test_a_person_plans_and_runs_steps_with_the_agent(page: Page, shots: StepShots) -> None:
    panel = _open(page, LOCAL)
    seat = PlanSeat()

    # Proposals: the plan selector, each plan's title and steps; "Use this plan" selects.
    proposals = [
        {"title": "Survey then write", "steps": [
            step("s1", "Search papers"), step("s2", "Pick the relevant ones", "person")]},
        {"title": f"Quick {HOSTILE}", "steps": [step("s3", f"Draft {HOSTILE} at once")]},
    ]
    _deliver(page, seat.frame(plan_state(proposals=proposals), whole=True))
    expect(panel.testid("plan-proposal")).to_have_count(2)
    first = panel.testid("plan-proposal").nth(0)
    expect(first).to_contain_text("Survey then write")
    expect(_in(first, "plan-proposal-step")).to_have_text(
        ["agent Search papers", "person Pick the relevant ones"])
    expect(panel.testid("plan-proposal").nth(1)).to_contain_text(f"Draft {HOSTILE} at once")
    expect(panel.testid("plan-step")).to_have_count(0)
    assert_text_stayed_text(page)
    shots.take("proposals", focus=panel.root, where="start")
    _in(panel.testid("plan-proposal").nth(1), "plan-select").click()
    assert _last_action(page, 1) == {"name": "SELECT_PLAN", "args": {"index": 1}}

    # The selected plan: one row per step, each status with its words for screen readers.
    hostile = f"Compare {HOSTILE} across{LINE_SEPARATOR}sources"
    steps = [step("s1", "Search papers"), step("s2", "Pick the relevant ones", "person"),
             step("s3", hostile), step("s4", LONG)]
    _deliver(page, seat.frame(plan_state(steps)))
    expect(panel.testid("plan-proposals")).to_be_hidden()
    expect(panel.testid("plan-step")).to_have_count(4)
    expect(panel.testid("plan-step-status").first).to_contain_text("Step 1: not run yet.")
    expect(_in(_row(panel, "s2"), "plan-step-assign")).to_have_attribute("data-assignee", "person")
    expect(_in(_row(panel, "s3"), "plan-step-description")).to_have_value(hostile)
    expect(_in(_row(panel, "s4"), "plan-step-description")).to_have_value(LONG)
    assert_text_stayed_text(page)
    _fits(page)
    expect(_in(_row(panel, "s1"), "plan-step-run")).to_be_enabled()
    expect(_in(_row(panel, "s2"), "plan-step-run")).to_be_disabled()  # s1 is not done
    shots.take("selected-plan", focus=panel.root, where="start")

    # Enter saves the description, with the description the edit started from.
    s1 = _in(_row(panel, "s1"), "plan-step-description")
    s1.click()
    page.keyboard.press("Control+End")
    page.keyboard.type(" on RAG")
    page.keyboard.press("Enter")
    assert _last_action(page, 2) == {"name": "EDIT_STEP", "args": {
        "step": "s1", "description": "Search papers on RAG", "base": "Search papers"}}
    expect(s1).to_have_value("Search papers on RAG")  # shown while the session catches up

    # Escape cancels and leaves the field; nothing is sent.
    s2 = _in(_row(panel, "s2"), "plan-step-description")
    s2.click()
    page.keyboard.press("Control+End")
    page.keyboard.type(" NOT THIS")
    page.keyboard.press("Escape")
    expect(s2).to_have_value("Pick the relevant ones")
    assert focused_testid(page) != "plan-step-description"
    assert len(_actions(page)) == 2

    # Shift+Enter is a new line; an update for another part of the plan keeps the field's text
    # and focus; Ctrl+S saves.
    s2.click()
    page.keyboard.press("Control+End")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("at most ten")
    expect(s2).to_have_value("Pick the relevant ones\nat most ten")
    steps[0] = step("s1", "Search papers on RAG")
    _deliver(page, seat.frame(plan_state(steps)))
    expect(s1).to_have_value("Search papers on RAG")
    expect(s2).to_have_value("Pick the relevant ones\nat most ten")
    assert s2.evaluate("(field) => field === document.activeElement")
    page.keyboard.type("!")
    page.keyboard.press("Control+s")
    assert _last_action(page, 3) == {"name": "EDIT_STEP", "args": {
        "step": "s2", "description": "Pick the relevant ones\nat most ten!",
        "base": "Pick the relevant ones"}}

    # The assignment toggle hands a step to the other side; + adds a step below; delete.
    _in(_row(panel, "s3"), "plan-step-assign").click()
    assert _last_action(page, 4) == {"name": "ASSIGN_STEP",
                                     "args": {"step": "s3", "assignee": "person"}}
    _in(_row(panel, "s1"), "plan-step-add").click()
    assert focused_testid(page) == "plan-new-step"
    page.keyboard.type("Drop duplicates")
    page.keyboard.press("Enter")
    assert _last_action(page, 5) == {"name": "ADD_STEP", "args": {
        "description": "Drop duplicates", "assignee": "agent", "after": "s1"}}
    expect(panel.testid("plan-new-step")).to_be_hidden()
    _in(_row(panel, "s4"), "plan-step-delete").click()
    assert _last_action(page, 6) == {"name": "DELETE_STEP", "args": {"step": "s4"}}

    # Run all.
    panel.testid("plan-run-all").click()
    assert _last_action(page, 7) == {"name": "RUN_ALL", "args": {}}

    # A running agent step: a spinner, Run all off, "Pause after this step" on it.
    steps = [step("s1", "Search papers on RAG", status="running"),
             step("s2", "Pick the relevant ones\nat most ten!", "person"),
             step("s3", hostile, "person"), step("s4", LONG)]
    _deliver(page, seat.frame(plan_state(steps, continuous=True)))
    expect(_row(panel, "s1")).to_have_attribute("data-status", "running")
    expect(_in(_row(panel, "s1"), "plan-step-status")).to_contain_text("running")
    expect(panel.testid("plan-run-all")).to_be_disabled()
    expect(_in(_row(panel, "s2"), "plan-step-pause")).to_be_hidden()
    expect(panel.testid("step-output")).to_have_attribute("data-step", "s1")
    expect(panel.testid("step-output-text")).to_be_hidden()  # no output yet: nothing to edit
    pause = _in(_row(panel, "s1"), "plan-step-pause")
    shots.take("running-agent-step", focus=panel.root, where="start")
    pause.click()
    assert _last_action(page, 8) == {"name": "PAUSE_AFTER_STEP", "args": {"step": "s1"}}
    _deliver(page, seat.frame(plan_state(steps, continuous=True, pause_after="s1")))
    expect(pause).to_have_text("Pauses after this step")
    expect(panel.testid("plan-mode")).to_have_text("Running on, pausing after step 1.")

    # The person step needs input: the side area shows it with Complete; the person types the
    # text, adds an item, and completes it.
    papers = [{"id": "p1", "title": "Dense passage retrieval", "year": 2020},
              {"id": "p2", "title": HOSTILE}]
    steps[0] = step("s1", "Search papers on RAG", status="done",
                    output={"items": papers, "text": "Found two papers.", "edited": False}, runs=1)
    steps[1] = step("s2", steps[1]["description"], "person", status="needs_input")
    _deliver(page, seat.frame(plan_state(steps, continuous=True)))
    side = panel.testid("step-output")
    expect(side).to_have_attribute("data-step", "s2")
    expect(_in(_row(panel, "s2"), "plan-step-status")).to_contain_text("needs input")
    expect(_in(_row(panel, "s2"), "plan-step-inspect")).to_have_text("Your input…")
    expect(_in(side, "step-output-complete")).to_be_visible()
    expect(_in(side, "step-output-save")).to_be_hidden()
    _in(side, "step-output-text").click()
    page.keyboard.type("Kept the dense retrieval paper.")
    _in(side, "step-output-item-input").click()
    page.keyboard.type("Retrieval-augmented generation (Lewis et al.)")
    page.keyboard.press("Enter")
    expect(_in(side, "step-output-item")).to_have_count(1)
    # An update elsewhere in the plan leaves the side area's draft alone.
    _deliver(page, seat.frame(plan_state(steps, continuous=False)))
    expect(_in(side, "step-output-text")).to_have_value("Kept the dense retrieval paper.")
    expect(_in(side, "step-output-item")).to_have_count(1)
    shots.take("person-step-needs-input", focus=panel.root, where="start")
    _in(side, "step-output-complete").click()
    assert _last_action(page, 9) == {"name": "COMPLETE_STEP", "args": {
        "step": "s2", "text": "Kept the dense retrieval paper.",
        "items": [{"title": "Retrieval-augmented generation (Lewis et al.)"}]}}

    # Done, stale and failed steps; a done step's output is curated and saved.
    steps[1] = step("s2", steps[1]["description"], "person", status="done", runs=1,
                    output={"items": [{"title": "RAG"}], "text": "Kept one.", "edited": False})
    steps[2] = step("s3", hostile, "person", status="stale", runs=1,
                    output={"items": [], "text": "old", "edited": False})
    steps[3] = step("s4", LONG, status="failed")
    _deliver(page, seat.frame(plan_state(steps)))
    statuses = panel.testid("plan-step").evaluate_all("(rows) => rows.map((r) => r.dataset.status)")
    assert statuses == ["done", "done", "stale", "failed"]
    marks = panel.root.locator(".cogym-step-mark").all_inner_texts()
    assert marks == ["✓", "✓", "↻", "✗"]
    expect(_in(_row(panel, "s3"), "plan-step-status")).to_contain_text("stale")
    expect(side).to_have_attribute("data-step", "s4")  # the failed step waits for the person
    expect(_in(side, "step-output-complete")).to_be_visible()
    shots.take("done-stale-failed", focus=panel.root, where="start")
    _in(_row(panel, "s1"), "plan-step-inspect").click()
    expect(side).to_have_attribute("data-step", "s1")
    expect(_in(side, "step-output-item")).to_have_count(2)
    assert HOSTILE in _in(side, "step-output-item").nth(1).inner_text()
    assert_text_stayed_text(page)
    _in(side, "step-output-item-remove").nth(1).click()
    expect(_in(side, "step-output-item")).to_have_count(1)
    assert focused_testid(page) == "step-output-item-input"
    text = _in(side, "step-output-text")
    text.click()
    page.keyboard.press("Control+End")
    page.keyboard.type(" One is enough.")
    _in(side, "step-output-save").click()
    assert _last_action(page, 10) == {"name": "EDIT_STEP_OUTPUT", "args": {
        "step": "s1", "text": "Found two papers. One is enough.",
        "items": [{"id": "p1", "title": "Dense passage retrieval", "year": 2020}]}}

    # Every step done: the plan waits for its output, then shows it folded below the plan.
    steps[0] = step("s1", "Search papers on RAG", status="done", runs=1, output={
        "items": [papers[0]], "text": "Found two papers. One is enough.", "edited": True})
    steps[2] = step("s3", hostile, "person", status="done", runs=2,
                    output={"items": [], "text": "new", "edited": False})
    steps[3] = step("s4", LONG, status="done", runs=1,
                    output={"items": [], "text": "by hand", "edited": False})
    _deliver(page, seat.frame(plan_state(steps, awaiting_output=True)))
    expect(panel.testid("plan-awaiting-output")).to_be_visible()
    expect(_in(_row(panel, "s1"), "plan-step-edited")).to_be_visible()
    expect(_in(side, "step-output-edited")).to_be_visible()
    expect(panel.testid("plan-output")).to_be_hidden()
    answer = f"RAG pairs a retriever with a generator.{LINE_SEPARATOR}{HOSTILE}"
    _deliver(page, seat.frame(plan_state(steps, output=answer)))
    expect(panel.testid("plan-awaiting-output")).to_be_hidden()
    output = panel.testid("plan-output")
    expect(output).to_be_visible()
    assert output.evaluate("(details) => details.open") is False
    output.locator("summary").click()
    expect(panel.testid("plan-output-text")).to_have_text(answer)
    assert_text_stayed_text(page)
    shots.take("plan-output", focus=panel.root, where="start")

    # A narrow window: the side area goes under the steps, nothing sticks out, and the
    # controls still work.
    page.set_viewport_size({"width": 420, "height": 900})
    _fits(page)
    main_box = panel.root.locator(".cogym-plan-main").bounding_box()
    side_box = side.bounding_box()
    assert main_box and side_box and side_box["y"] >= main_box["y"] + main_box["height"] - 1
    run = _in(_row(panel, "s2"), "plan-step-run")
    run.scroll_into_view_if_needed()
    run.click()
    assert _last_action(page, 11) == {"name": "RUN_STEP", "args": {"step": "s2"}}
    s2.scroll_into_view_if_needed()
    s2.click()
    page.keyboard.press("Control+End")
    page.keyboard.type(" again")
    page.keyboard.press("Enter")
    assert _last_action(page, 12)["args"]["description"].endswith("at most ten! again")
    shots.take("narrow", focus=_row(panel, "s1"), where="start")

    # A reload: the new panel asks for the whole state and shows the plan again.
    page.reload()
    page.wait_for_function("window.ready === true", timeout=UI_TIMEOUT_MS)
    panel = SessionPanelPage.find(page, page.locator("#root"))
    assert page.evaluate("window.sent") == [{"type": "hello"}]
    _deliver(page, seat.frame(plan_state(steps, output=answer), whole=True))
    expect(panel.testid("plan-step")).to_have_count(4)
    expect(panel.testid("plan-output")).to_be_visible()
    _fits(page)


def _rate(page: Page, panel: SessionPanelPage, choices: dict[str, str]) -> dict[str, Any]:
    """Fill in the rating form (``choices``: test id -> option value), submit it, and answer
    as the kernel does; the rating message the panel sent."""
    form = panel.testid("rating-form")
    expect(form).to_be_visible()
    for testid, value in choices.items():
        form.locator(f'[data-testid="{testid}"]').select_option(value)
    form.locator('[data-testid="rating-comment"]').fill("fine")
    form.locator('[data-testid="rating-submit"]').click()
    page.wait_for_function("window.sent.some((m) => m.type === 'rating')", timeout=UI_TIMEOUT_MS)
    rating = next(m for m in page.evaluate("window.sent") if m["type"] == "rating")
    page.evaluate("(id) => window.deliver({type: 'rated', id})", rating["id"])
    expect(form.locator('[data-testid="rating-result"]')).to_have_attribute("data-state", "saved")
    return rating


def test_the_rating_form_sends_the_optional_statements_only_when_answered(
        page: Page, shots: StepShots) -> None:
    panel = _open(page, LOCAL)
    _deliver(page, PlanSeat().frame(plan_state([step("s1", "Search papers")]), whole=True,
                                    done=True))
    # A plan session's form is Cocoa's: nine statements.
    expect(panel.testid("rating-likert").locator("select")).to_have_count(9)
    shots.take("rating-form", focus=panel.testid("rating-form"))
    rating = _rate(page, panel, {"rating-outcome": "4", "rating-satisfaction": "5",
                                 "rating-steerable": "4", "rating-insights": "2"})
    assert {key: rating[key] for key in rating if key not in ("id", "type")} == {
        "role": "user", "outcome_rating": 4, "satisfaction": 5, "comment": "fine",
        "steerable": 4, "insights": 2}

    page.reload()
    page.wait_for_function("window.ready === true", timeout=UI_TIMEOUT_MS)
    panel = SessionPanelPage.find(page, page.locator("#root"))
    _deliver(page, PlanSeat().frame(plan_state([step("s1", "Search papers")]), whole=True,
                                    done=True))
    rating = _rate(page, panel, {"rating-outcome": "3", "rating-satisfaction": "3",
                                 "rating-easy-to-use": "5"})
    assert "steerable" not in rating and "insights" not in rating
    assert rating["easy_to_use"] == 5
    page.reload()
    page.wait_for_function("window.ready === true", timeout=UI_TIMEOUT_MS)
    panel = SessionPanelPage.find(page, page.locator("#root"))
    _deliver(page, PlanSeat().frame(plan_state([step("s1", "Search papers")]), whole=True,
                                    done=True))
    rating = _rate(page, panel, {"rating-outcome": "2", "rating-satisfaction": "1"})
    assert not {"steerable", "easy_to_use", "useful_outputs"} & set(rating)


def test_suggest_asks_for_a_better_step_and_undo_brings_the_old_one_back(page: Page) -> None:
    panel = _open(page, LOCAL)
    seat = PlanSeat()
    steps = [step("s1", "Search papers"), step("s2", "Pick the relevant ones", "person")]
    _deliver(page, seat.frame(plan_state(steps), whole=True))
    undo = _in(_row(panel, "s2"), "plan-step-undo")
    expect(undo).to_be_hidden()  # nothing to undo yet
    suggest = _in(_row(panel, "s2"), "plan-step-suggest")
    expect(suggest).to_have_attribute("aria-label", "Ask for a suggestion to replace step 2")
    suggest.focus()
    page.keyboard.press("Enter")  # a real button: the keyboard presses it too
    assert _last_action(page, 1) == {"name": "ASK_SUGGESTION", "args": {"step": "s2"}}
    suggested = {**steps[1], "description": f"Keep the five most cited {HOSTILE}",
                 "undo": "Pick the relevant ones"}
    _deliver(page, seat.frame(plan_state([steps[0], suggested])))
    expect(_in(_row(panel, "s2"), "plan-step-description")).to_have_value(
        f"Keep the five most cited {HOSTILE}")
    expect(undo).to_be_visible()
    undo.click()
    assert _last_action(page, 2) == {"name": "UNDO_SUGGESTION", "args": {"step": "s2"}}
    assert_text_stayed_text(page)


# -- several plans ------------------------------------------------------------------------------

FIRST, SECOND, THIRD = "interactive_plan", "interactive_plan_2", "interactive_plan_3"
NEW_PLAN_SPEC = {"name": "NEW_PLAN", "description": "Start another plan.",
                 "params": [{"name": "request", "type": "string"}]}


class PlansSeat:
    """The frames of a seat whose view is several plans (each a ``plan`` component)."""

    def __init__(self) -> None:
        self.seq = 0
        self.plans: dict[str, dict[str, Any]] = {}
        self.versions: dict[str, int] = {}

    def frame(self, plans: dict[str, dict[str, Any]], whole: bool = False) -> dict[str, Any]:
        self.seq += 1
        changed = [name for name in plans if whole or plans[name] != self.plans.get(name)]
        self.plans = {**self.plans, **plans}
        seq = self.seq
        self.versions |= dict.fromkeys(changed, seq)
        return {
            "session_id": SESSION, "seq": seq, "prev_seq": None if whole else seq - 1,
            "recipient": "user", "whole": whole,
            "event": {"seq": seq, "time": 1000.0 + seq, "type": "action", "actor": "agent",
                      "status": "ok"},
            "components": [{"name": name, "render_type": "plan",
                            "title": "Interactive plan" + ("" if n == 1 else f" {n}"),
                            "content": self.plans[name]}
                           for n, name in enumerate(self.plans, 1) if name in changed],
            "versions": dict(self.versions), "messages": [],
            "pending_confirmations": [], "step_counts": {"agent": seq}, "step_limits": {},
            "paused": [], "started_at": 1000.0, "time": 1000.0 + seq, "done": False,
            "end_reason": None,
            "context": CONTEXT | {"action_specs": [NEW_PLAN_SPEC]} if whole else None,
        }


def _plan_view(panel: SessionPanelPage, name: str) -> Locator:
    return panel.root.locator(f'[data-testid="plan-view"][data-plan="{name}"]')


def test_each_plan_acts_on_itself_folds_and_a_person_starts_another(
        page: Page, shots: StepShots) -> None:
    panel = _open(page, LOCAL)
    seat = PlansSeat()
    first = plan_state([step("s1", "Search papers"), step("s2", "Pick the relevant ones")],
                       replan={"after": "s1", "reason": "Experts now.", "choices": [
                           [{"description": "Ask experts", "assignee": "person"}]]})
    second = plan_state([step("s1", "Find venues", status="running")],
                        request=f"Plan the venues {HOSTILE}", continuous=True,
                        completions={"step": "s1", "choices": ["Find venues near", "Find two"]})
    _deliver(page, seat.frame({FIRST: first, SECOND: second}, whole=True))
    one, two = _plan_view(panel, FIRST), _plan_view(panel, SECOND)
    expect(_in(two, "plan-request")).to_have_text(f"For: Plan the venues {HOSTILE}")
    assert_text_stayed_text(page)

    # Every control of a plan names its own plan.
    _in(one, "plan-run-all").click()
    assert _last_action(page, 1, plan=FIRST) == {"name": "RUN_ALL", "args": {}}
    _in(one, "plan-replan-choice").nth(0).click()
    assert _last_action(page, 2, plan=FIRST) == {"name": "ACCEPT_REPLAN", "args": {"choice": 0}}
    _in(two, "plan-completion-choice").nth(1).click()
    assert _last_action(page, 3, plan=SECOND) == {"name": "PICK_COMPLETION",
                                                  "args": {"step": "s1", "choice": 1}}
    _in(_in(two, "plan-step"), "plan-step-pause").click()
    assert _last_action(page, 4, plan=SECOND) == {"name": "PAUSE_AFTER_STEP",
                                                  "args": {"step": "s1"}}

    # Folding, by the keyboard: the toggle is a button (Space folds, Enter unfolds).
    toggle = _in(two, "plan-collapse")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    toggle.focus()
    page.keyboard.press("Space")
    expect(two).to_have_attribute("data-collapsed", "true")
    expect(_in(two, "plan-step")).to_be_hidden()
    expect(_in(two, "plan-summary")).to_have_text("1 step: step 1 running")
    page.keyboard.press("Enter")
    expect(two).to_have_attribute("data-collapsed", "false")
    page.keyboard.press("Space")
    expect(one).to_have_attribute("data-collapsed", "false")
    shots.take("second-plan-folded", focus=panel.root, where="start")

    # "+ New plan" after the last plan: Escape cancels and sends nothing, Enter on the button
    # opens it again, Shift+Enter is a new line, Enter sends NEW_PLAN.
    new_plan = panel.testid("plan-new-plan")
    assert panel.root.evaluate("""(root) => root.querySelector(
        '[data-component=interactive_plan_2]').nextElementSibling.dataset.testid""") == \
        "plan-new-plan-box"
    new_plan.click()
    request = panel.testid("plan-new-plan-request")
    expect(request).to_be_focused()
    page.keyboard.type("NOT THIS")
    page.keyboard.press("Escape")
    expect(request).to_be_hidden()
    assert focused_testid(page) == "plan-new-plan"
    assert len(_actions(page)) == 4
    page.keyboard.press("Enter")
    expect(request).to_have_value("")
    page.keyboard.type(f"Plan the food {HOSTILE}")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("for three days")
    page.keyboard.press("Enter")
    assert _last_action(page, 5, plan=None) == {"name": "NEW_PLAN", "args": {
        "request": f"Plan the food {HOSTILE}\nfor three days"}}
    expect(request).to_be_hidden()

    # The plan comes mid-session: it gets its view, and the keyboard goes on into it.
    _deliver(page, seat.frame({THIRD: plan_state(None, request=f"Plan the food {HOSTILE}")}))
    three = _plan_view(panel, THIRD)
    expect(three).to_be_visible()
    expect(_in(three, "plan-write-first")).to_be_focused()
    expect(_in(three, "plan-title")).to_have_text("No plan yet")
    assert_text_stayed_text(page)
    page.keyboard.press("Enter")
    page.keyboard.type("Buy rice")
    page.keyboard.press("Enter")
    assert _last_action(page, 6, plan=THIRD) == {"name": "ADD_STEP", "args": {
        "description": "Buy rice", "assignee": "agent", "after": ""}}

    # A reload: the folded plan is still folded, the others not.
    page.reload()
    page.wait_for_function("window.ready === true", timeout=UI_TIMEOUT_MS)
    panel = SessionPanelPage.find(page, page.locator("#root"))
    seat.seq = 0
    _deliver(page, seat.frame(seat.plans, whole=True))
    expect(_plan_view(panel, SECOND)).to_have_attribute("data-collapsed", "true")
    expect(_plan_view(panel, FIRST)).to_have_attribute("data-collapsed", "false")
    expect(_plan_view(panel, THIRD)).to_have_attribute("data-collapsed", "false")
    key = f"cogym-plan-collapsed:{SESSION}:{SECOND}"
    assert page.evaluate("(key) => window.localStorage.getItem(key)", key) == "yes"
