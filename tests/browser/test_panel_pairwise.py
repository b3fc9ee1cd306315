"""The rating form's pairwise question (Co-Gym Appendix C.4) in Debian's Chromium: the person
sees their outcome and the autonomous agent's side by side as "A" and "B", in the order the
host drew, picks one or a tie with the keyboard (Tab into the choices, arrows, Enter submits),
Escape leaves a field as everywhere in the panel, the outcomes stack in a narrow window, and a
reload shows the same order.

First on the module's test page, fed frames and answers by hand (local mode), then end to end
in a real JupyterLab whose server has a baseline folder: the answer lands in ratings.json.
"""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Locator, Page, expect

from tests.browser.jupyter_lab import JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage, assert_text_stayed_text, focused_testid
from tests.browser.screenshots import StepShots
from tests.browser.test_panel_updates import LOCAL, Seat, _deliver, _open
from tests.support.trajectories import write_session

HOSTILE = "<img src=x onerror=alert(1)>"
LONG = "\n".join(f"Day {n}: walk, eat, sleep {HOSTILE}" for n in range(1, 80))
OFFER = {"available": True, "note": "", "baseline": "auto/003", "outcomes": [
    {"side": "autonomous", "label": "A", "text": f"The agent's plan\u2028{LONG}"},
    {"side": "own", "label": "B", "text": "Our plan: tent, stove, rain jacket"}]}


def _ended(page: Page) -> SessionPanelPage:
    """The test page's panel, shown a whole frame of an ended session."""
    panel = _open(page, LOCAL)
    frame = Seat().frame(1, prev_seq=None, whole=True, changed={"editor": "Our plan"},
                         said=("agent", "All done."))
    _deliver(page, frame | {"done": True, "end_reason": "finished"})
    expect(panel.testid("rating-form")).to_be_visible()
    return panel


def _sent(page: Page, kind: str) -> list[dict[str, Any]]:
    return [m for m in page.evaluate("window.sent") if m.get("type") == kind]


def _answer_pairwise(page: Page, message: dict[str, Any]) -> None:
    page.wait_for_function("window.sent.some((m) => m.type === 'pairwise')",
                           timeout=UI_TIMEOUT_MS)
    request = _sent(page, "pairwise")[0]
    page.evaluate("(message) => window.deliver(message)", {**message, "id": request["id"]})


def _tab_to(page: Page, testid: str, limit: int = 20) -> None:
    """Press Tab until the focus is on an element with ``testid`` (at most ``limit`` times)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if focused_testid(page) == testid:
            return
    raise AssertionError(f"{limit} Tabs never reached {testid}; the focus is on "
                         f"{focused_testid(page)}")


def _focused_choice(page: Page) -> str | None:
    return page.evaluate("document.activeElement && document.activeElement.dataset.choice")


def _checked(panel: SessionPanelPage) -> list[str]:
    return panel.testid("pairwise-choice").evaluate_all(
        "(radios) => radios.filter((r) => r.checked).map((r) => r.dataset.choice)")


def _side_by_side(first: Locator, second: Locator) -> bool:
    a, b = first.bounding_box(), second.bounding_box()
    assert a and b
    return abs(a["y"] - b["y"]) < 2 and b["x"] >= a["x"] + a["width"] - 1


def _stacked(first: Locator, second: Locator) -> bool:
    a, b = first.bounding_box(), second.bounding_box()
    assert a and b
    return b["y"] >= a["y"] + a["height"] - 1


def test_the_question_is_answered_with_the_keyboard(page: Page, shots: StepShots) -> None:
    panel = _ended(page)
    pairwise = panel.testid("rating-pairwise")
    expect(pairwise).to_have_attribute("data-state", "loading")
    _answer_pairwise(page, {"type": "pairwise_offer", "offer": OFFER})
    expect(pairwise).to_have_attribute("data-state", "ready")
    outcomes = panel.testid("pairwise-outcome")
    expect(outcomes).to_have_count(2)
    assert _side_by_side(outcomes.nth(0), outcomes.nth(1))
    expect(outcomes.nth(0).locator("h5")).to_have_text("Outcome A")
    shown = outcomes.nth(0).locator(".cogym-pairwise-text").evaluate("(node) => node.textContent")
    assert shown == OFFER["outcomes"][0]["text"]  # the hostile text stayed text, all of it
    assert_text_stayed_text(page)
    assert "own" not in pairwise.inner_text().lower().split()  # blind: no side is named
    shots.take("pairwise-question", focus=panel.testid("rating-form"), where="start")

    form = panel.testid("rating-form")
    form.locator('[data-testid="rating-outcome"]').select_option("4")
    form.locator('[data-testid="rating-satisfaction"]').select_option("5")
    form.locator('[data-testid="rating-useful-outputs"]').focus()
    # Tab: through both outcomes (focusable, so the keys can scroll them), into the choices.
    _tab_to(page, "pairwise-choice")
    assert _focused_choice(page) == "A" and _checked(panel) == []
    page.keyboard.press("ArrowRight")  # the arrows move through the choices and pick
    assert _focused_choice(page) == "B" and _checked(panel) == ["B"]
    page.keyboard.press("ArrowRight")
    assert _focused_choice(page) == "tie" and _checked(panel) == ["tie"]
    page.keyboard.press("ArrowLeft")
    assert _checked(panel) == ["B"]
    page.keyboard.press("Escape")  # leaves the choice, which stays picked
    assert focused_testid(page) != "pairwise-choice" and _checked(panel) == ["B"]
    comment = form.locator('[data-testid="rating-comment"]')
    comment.click()
    page.keyboard.type(f"B is ours {HOSTILE}")
    page.keyboard.press("Escape")  # leaves the field; what was typed stays
    assert focused_testid(page) != "rating-comment"
    expect(comment).to_have_value(f"B is ours {HOSTILE}")
    assert _sent(page, "rating") == []  # nothing was sent by any of that
    comment.focus()
    page.keyboard.press("Shift+Tab")  # back into the group: the picked choice
    assert _focused_choice(page) == "B"
    shots.take("picked-b", focus=panel.testid("rating-form"), where="start")
    page.keyboard.press("Enter")  # submits, as Enter in a form does
    page.wait_for_function("window.sent.some((m) => m.type === 'rating')", timeout=UI_TIMEOUT_MS)
    rating = _sent(page, "rating")[0]
    # B was this session's own outcome, shown second.
    assert {k: rating[k] for k in rating if k not in ("id", "type")} == {
        "role": "user", "outcome_rating": 4, "satisfaction": 5,
        "comment": f"B is ours {HOSTILE}", "pairwise": "own",
        "pairwise_order": ["autonomous", "own"]}
    page.evaluate("(id) => window.deliver({type: 'rated', id})", rating["id"])
    expect(form.locator('[data-testid="rating-result"]')).to_have_attribute("data-state", "saved")

    # A narrow window: the outcomes stack, and nothing sticks out sideways.
    page.set_viewport_size({"width": 420, "height": 900})
    page.wait_for_function("""() => {
        const boxes = [...document.querySelectorAll('[data-testid=pairwise-outcome]')]
            .map((box) => box.getBoundingClientRect());
        return boxes.length === 2 && boxes[1].top >= boxes[0].bottom - 1;
    }""", timeout=UI_TIMEOUT_MS)
    assert _stacked(outcomes.nth(0), outcomes.nth(1))
    widths = pairwise.evaluate("(box) => [box.scrollWidth, box.clientWidth]")
    assert widths[0] <= widths[1] + 1, widths
    shots.take("narrow", focus=panel.testid("rating-pairwise"), where="start")


def test_without_an_autonomous_outcome_the_form_says_so(page: Page, shots: StepShots) -> None:
    panel = _ended(page)
    note = "There is no comparison with the autonomous agent this time: no results."
    _answer_pairwise(page, {"type": "pairwise_offer",
                            "offer": {"available": False, "note": note, "outcomes": []}})
    pairwise = panel.testid("rating-pairwise")
    expect(pairwise).to_have_attribute("data-state", "none")
    expect(panel.testid("pairwise-note")).to_have_text(note)
    expect(panel.testid("pairwise-choice")).to_have_count(0)
    shots.take("no-comparison", focus=panel.testid("rating-form"), where="start")
    form = panel.testid("rating-form")
    form.locator('[data-testid="rating-outcome"]').select_option("3")
    form.locator('[data-testid="rating-satisfaction"]').select_option("3")
    form.locator('[data-testid="rating-submit"]').focus()
    page.keyboard.press("Enter")
    page.wait_for_function("window.sent.some((m) => m.type === 'rating')", timeout=UI_TIMEOUT_MS)
    assert not {"pairwise", "pairwise_order"} & set(_sent(page, "rating")[0])

    # After a reload the kernel cannot find the question: the form says so and rates on.
    page.reload()
    page.wait_for_function("window.ready === true", timeout=UI_TIMEOUT_MS)
    panel = _ended(page)
    _answer_pairwise(page, {"type": "pairwise_error", "error": f"It broke {HOSTILE}"})
    expect(panel.testid("rating-pairwise")).to_have_attribute("data-state", "error")
    expect(panel.testid("pairwise-note")).to_contain_text(f"It broke {HOSTILE}")
    assert_text_stayed_text(page)


# -- end to end, in JupyterLab -----------------------------------------------------------------


def _write_baseline(jupyter_lab: JupyterLabServer, session_id: str) -> None:
    """An autonomous run of the session's instance in the server's baseline folder."""
    session = json.loads((jupyter_lab.results_dir / session_id / "session.json").read_text())
    write_session(jupyter_lab.baseline_dir / "auto-todo" / "000", [
        ("agent", f'ADD_ITEM(text="kazoo {HOSTILE}")'), ("agent", 'ADD_ITEM(text="tent")'),
        ("agent", "FINISH()")], team=(("agent", "agent"),), env_args=session["env_args"],
        agent_type="autonomous")


def _texts(panel: SessionPanelPage) -> list[str]:
    return panel.testid("pairwise-outcome").locator(".cogym-pairwise-text").evaluate_all(
        "(nodes) => nodes.map((node) => node.textContent)")


def test_the_answer_is_saved_with_the_session(lab: LabPage, shots: StepShots,
                                              jupyter_lab: JupyterLabServer) -> None:
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, "%load_ext cogym_lab\n%cogym new todo --idle-seconds 60")
    start_cell = lab.run_cell(notebook, 0)
    prompt = start_cell.locator(".jp-InputArea-prompt").inner_text()
    panel = SessionPanelPage.find(lab.page, start_cell)
    session_id = panel.session_id
    _write_baseline(jupyter_lab, session_id)
    # The example agent fills the list and asks before an extra item: decline, then finish.
    panel.pending_confirmation().locator('[data-testid="confirm-reject"]').click()
    expect(panel.testid("confirmation")).to_have_count(0, timeout=UI_TIMEOUT_MS)
    panel.finish()
    pairwise = panel.testid("rating-pairwise")
    expect(pairwise).to_have_attribute("data-state", "ready", timeout=UI_TIMEOUT_MS)
    status, offer = jupyter_lab.request("GET",
                                        f"cogym/api/sessions/{session_id}/pairwise?role=user")
    assert status == 200 and offer["available"], offer
    order = [shown["side"] for shown in offer["outcomes"]]
    texts = _texts(panel)
    assert texts == [shown["text"] for shown in offer["outcomes"]]
    assert any(f"kazoo {HOSTILE}" in text for text in texts)
    assert_text_stayed_text(lab.page)
    outcomes = panel.testid("pairwise-outcome")
    assert _side_by_side(outcomes.nth(0), outcomes.nth(1))
    shots.take("question-in-jupyterlab", focus=panel.testid("rating-form"), where="start")

    # Reload: the same two outcomes in the same order.
    lab.page.reload(wait_until="domcontentloaded")
    lab.wait_until_ready()
    notebook = lab.current_notebook()
    start_cell = lab.cells(notebook).nth(0)
    panel = SessionPanelPage.find(lab.page, start_cell)
    expect(panel.testid("rating-pairwise")).to_have_attribute("data-state", "ready",
                                                              timeout=UI_TIMEOUT_MS)
    assert _texts(panel) == texts
    shots.take("after-reload", focus=panel.testid("rating-form"), where="start")

    # The keyboard: the two scales, into the choices, the person's own outcome, Enter.
    keyboard = lab.page.keyboard
    form = panel.testid("rating-form")
    form.locator('[data-testid="rating-outcome"]').select_option("4")
    form.locator('[data-testid="rating-satisfaction"]').select_option("2")
    form.locator('[data-testid="rating-useful-outputs"]').focus()
    _tab_to(lab.page, "pairwise-choice")
    own = "AB"[order.index("own")]
    keyboard.press("ArrowRight")  # picks B
    if own == "A":
        keyboard.press("ArrowLeft")
    assert _checked(panel) == [own]
    keyboard.press("Escape")  # leaves the group, as in every field; nothing ran in the notebook
    assert focused_testid(lab.page) != "pairwise-choice"
    assert start_cell.locator(".jp-InputArea-prompt").inner_text() == prompt
    comment = form.locator('[data-testid="rating-comment"]')
    comment.click()
    keyboard.type("Ours was better")
    keyboard.press("Shift+Enter")  # a new line, not the notebook's run-cell
    keyboard.type(HOSTILE)
    keyboard.press("Escape")
    expect(comment).to_have_value(f"Ours was better\n{HOSTILE}")
    assert start_cell.locator(".jp-InputArea-prompt").inner_text() == prompt
    comment.focus()
    keyboard.press("Shift+Tab")
    assert _focused_choice(lab.page) == own
    keyboard.press("Enter")
    expect(form.locator('[data-testid="rating-result"]')).to_have_attribute(
        "data-state", "saved", timeout=UI_TIMEOUT_MS)
    assert start_cell.locator(".jp-InputArea-prompt").inner_text() == prompt
    stored = json.loads((jupyter_lab.results_dir / session_id / "ratings.json").read_text())
    entry = stored["user"]
    assert entry["pairwise"] == "own" and entry["pairwise_order"] == order
    assert entry["pairwise_baseline"] == "baseline/auto-todo/000"
    assert (entry["outcome_rating"], entry["satisfaction"]) == (4, 2)
    assert entry["comment"] == f"Ours was better\n{HOSTILE}"
    shots.take("saved", focus=panel.testid("rating-form"), where="start")

    # A narrow window: the two outcomes stack under each other.
    lab.page.set_viewport_size({"width": 700, "height": 900})
    lab.page.wait_for_function("""() => {
        const boxes = [...document.querySelectorAll('[data-testid=pairwise-outcome]')]
            .map((box) => box.getBoundingClientRect());
        return boxes.length === 2 && boxes[1].top >= boxes[0].bottom - 1;
    }""", timeout=UI_TIMEOUT_MS)
    shots.take("narrow-window", focus=panel.testid("rating-pairwise"), where="start")
