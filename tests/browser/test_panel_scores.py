"""The end of a session in JupyterLab: once the person finishes, the panel shows a scores card
with each score, what it means and the grader's reasons, above the rating form; session.json
keeps the same reasons."""

from __future__ import annotations

import json

from playwright.sync_api import expect

from tests.browser.jupyter_lab import JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import StepShots


def test_finishing_shows_the_scores_with_the_graders_reasons(
        lab: LabPage, shots: StepShots, jupyter_lab: JupyterLabServer) -> None:
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, "%load_ext cogym_lab\n%cogym new todo --idle-seconds 30")
    start_cell = lab.run_cell(notebook, 0)
    panel = SessionPanelPage.find(lab.page, start_cell)
    # the example agent fills the list, then asks before adding an extra item: the person
    # declines and finishes
    confirmation = panel.pending_confirmation()
    confirmation.locator('[data-testid="confirm-reject"]').click()
    expect(panel.testid("confirmation")).to_have_count(0, timeout=UI_TIMEOUT_MS)
    shots.take("before-finishing", focus=start_cell, where="start")

    panel.finish()
    card = panel.testid("scores-card")
    expect(card).to_have_attribute("data-state", "graded", timeout=UI_TIMEOUT_MS)
    expect(panel.testid("rating-form")).to_be_visible(timeout=UI_TIMEOUT_MS)
    coverage = card.locator('[data-testid="score"][data-name="must_have_coverage"]')
    expect(coverage.locator('[data-testid="score-label"]')).to_have_text(
        "Share of the items the person insisted on that made the list")
    expect(coverage.locator('[data-testid="score-reason"]').first).to_contain_text(
        "On the list:")
    expect(card.locator('[data-testid="score"][data-name="size"]')).to_contain_text(
        "the brief asks for at least 6")
    shots.take("scores-card-with-reasons", focus=card, where="start")

    session_json = jupyter_lab.results_dir / panel.session_id / "session.json"
    stored = json.loads(session_json.read_text(encoding="utf-8"))
    names = [report["name"] for report in stored["score_reports"]]
    assert names == ["performance", "must_have_coverage", "size"], stored["score_reports"]
    assert set(stored["scores"]) >= set(names)
    shown = card.locator('[data-testid="score"]').evaluate_all(
        "(scores) => scores.map((score) => score.dataset.name)")
    assert shown == names
