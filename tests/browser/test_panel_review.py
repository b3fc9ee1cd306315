"""A person reviews what an agent proposes and curates what a search found, in JupyterLab: the
model set with `%cogym config` in the notebook is the one the server's agent calls; a search
result goes into the library with its own button; an agent's whole-text edit waiting for
approval shows as a diff in which the one changed line is not buried; "accept everything" then
approves the agent's later requests without a click. Typed with the keyboard where a person
types."""

from __future__ import annotations

import re
import uuid

from playwright.sync_api import expect

from cogym_lab.core import Action
from cogym_lab.core.grammar import format_action
from tests.browser.agent_script import AgentStep, CueAgent
from tests.browser.jupyter_lab import JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import StepShots
from tests.browser.scripted_lm import ScriptedLM

MODEL = "model-set-in-the-notebook"
LINES = [f"Point {n}: related work on flows." for n in range(1, 21)]


def _edited(changes: dict[int, str]) -> str:
    # ends with a line break, as the typed text does (each line ended with Enter)
    return "".join(changes.get(n, line) + "\n" for n, line in enumerate(LINES, start=1))


def _asks_to_replace(text: str) -> Action:
    edit = format_action(Action(name="EDITOR_UPDATE", args={"text": text}))
    return Action(name="REQUEST_TEAMMATE_CONFIRM", args={"pending_action": edit})


def test_the_person_adds_a_result_and_reviews_the_agents_edits(
        lab: LabPage, shots: StepShots, lm: ScriptedLM, jupyter_lab: JupyterLabServer) -> None:
    ten = _edited({10: "Point 10: push-relabel in practice."})
    three = _edited({3: "Point 3: augmenting paths.", 10: "Point 10: push-relabel in practice."})
    lm.use(CueAgent([AgentStep("tidy point ten", _asks_to_replace(ten)),
                     AgentStep("and point three", _asks_to_replace(three))]))
    notebook = lab.new_notebook_from_launcher()
    cache = f"index-cache-{uuid.uuid4().hex[:8]}"
    lab.type_in_cell(notebook, 0, f"%load_ext cogym_lab\n%cogym config model={MODEL}\n"
                                  "%cogym new related_work --instance 0 --idle-seconds 60 "
                                  f"--env-arg index_limit=2000 --env-arg index_cache={cache}")
    start_cell = lab.run_cell(notebook, 0)
    panel = SessionPanelPage.find(lab.page, start_cell)
    expect(panel.testid("view-setup")).to_be_hidden(timeout=240_000)
    keyboard = lab.page.keyboard

    # A search from the task-action form, typed; a result goes to the library by its button.
    panel.root.locator('[data-testid="view-actions"] > summary').click()
    panel.testid("action-select").select_option("SEARCH_PAPER")
    panel.root.locator('[data-testid="action-param"][data-param="query"]').click()
    keyboard.type("graph")
    panel.testid("action-submit").click()
    pick = panel.testid("item-pick").first
    expect(pick).to_have_text("Add to library", timeout=UI_TIMEOUT_MS)
    picked = pick.get_attribute("data-item")
    pick.click()
    entry = panel.testid("library-entry").first
    expect(entry).to_be_visible(timeout=UI_TIMEOUT_MS)
    assert picked and picked in entry.inner_text()
    shots.take("a-search-result-added-to-the-library", focus=start_cell, where="start")

    # Twenty lines typed into the shared editor, each ended with Enter: they reach the session
    # as they are typed (the editor is live, there is no Save button).
    panel.editor("editor").click()
    for line in LINES:
        keyboard.type(line)
        keyboard.press("Enter")
    panel.wait_synced("editor")

    # The agent asks to change one line: the diff leads with it, the rest folded.
    panel.type_chat("Please tidy point ten")
    confirmation = panel.pending_confirmation()
    preview = confirmation.locator('[data-testid="confirmation-preview"]')
    expect(preview).to_contain_text("1 line added, 1 removed", timeout=UI_TIMEOUT_MS)
    assert "Point 10: push-relabel in practice." in preview.inner_text()
    assert "Replace the whole section text" in preview.inner_text()  # what it does, in words
    assert "Point 1: related" not in preview.inner_text()  # far from the change: folded
    expect(preview.locator('[data-testid="diff-fold"]')).to_have_count(2)
    shots.take("one-changed-line-in-a-long-text", focus=confirmation)

    # Accept everything from now on: this request and the next go through without a click.
    panel.testid("confirm-accept-all").check()
    expect(panel.testid("confirmation")).to_have_count(0, timeout=UI_TIMEOUT_MS)
    expect(panel.editor("editor")).to_have_value(ten, timeout=UI_TIMEOUT_MS)
    panel.type_chat("Thanks, and point three")
    expect(panel.editor("editor")).to_have_value(three, timeout=UI_TIMEOUT_MS)
    shots.take("later-requests-accepted-without-a-click", focus=start_cell, where="start")

    # What the agent does, in words, and since when.
    expect(panel.testid("agent-status-words").first).to_have_text(
        re.compile(r"^(thinking|acting: .+|waiting for you"
                   r"|waiting for news from you or the team)$"))
    expect(panel.testid("agent-status-since").first).to_have_text(
        re.compile(r"^· (just now|\d+ s ago|\d+ min ago)$"))

    # The agent in the server called the model the notebook configured.
    models = {body.get("model") for body in lm.bodies}
    assert models == {MODEL}, models
