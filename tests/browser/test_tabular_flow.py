"""A person and an agent analyse a DataFrame together, in JupyterLab in a real browser.

The person (this test, in Chromium) opens the first example notebook, loads the extension and
starts a session with ``%cogym new``; chats with the agent; approves the agent's cell, which then
appears in the live notebook and runs in the notebook's own kernel; types into the shared
findings (live, no Save) while the agent writes them too, and both edits are kept; finishes and
rates the session. The agent runs in the Jupyter server on the loopback scripted LM.
"""

from __future__ import annotations

import json
import re
import time

from playwright.sync_api import expect

from cogym_lab.core import Action
from tests.browser.agent_script import AgentStep, CueAgent
from tests.browser.jupyter_lab import JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import StepShots
from tests.browser.scripted_lm import ScriptedLM

NOTEBOOK = "examples/01_your_dataframe.ipynb"
GREETING = "Hello! I will start with how advertising and price relate to sales."
AGENT_CODE = ("slopes = df[['advertising', 'price']].apply(lambda col: df['sales'].cov(col) "
              "/ col.var())\nprint('agent slopes:', slopes.round(1).to_dict())")
AGENT_FINDING = "Agent: sales rise by about 2.5 per unit of advertising."
PERSON_FINDING = "Person: a higher price lowers sales.\nAdvertising raises them."


def agent_for_this_flow() -> CueAgent:
    return CueAgent([
        AgentStep("say hello", Action(name="SEND_TEAMMATE_MESSAGE", args={"message": GREETING})),
        AgentStep("estimate the slopes", Action(name="EXECUTE_JUPYTER_CELL",
                                                args={"code": AGENT_CODE})),
        AgentStep("add your finding", Action(name="EDITOR_UPDATE",
                                             args={"text": AGENT_FINDING})),
    ])


def wait_for(predicate, what: str, timeout: float = 60.0):
    """Poll ``predicate`` until it returns something truthy (for state outside the page)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.25)


def test_a_person_and_an_agent_analyse_a_dataframe(lab: LabPage, shots: StepShots,
                                                    lm: ScriptedLM,
                                                    jupyter_lab: JupyterLabServer) -> None:
    agent = agent_for_this_flow()
    lm.use(agent)
    page = lab.page

    # 1. the example notebook: load the extension, make the DataFrame, start a session
    notebook = lab.open_notebook(NOTEBOOK)
    shots.take("example-notebook-open")
    lab.run_cell(notebook, lab.cell_index(notebook, "%load_ext cogym_lab"))
    lab.run_cell(notebook, lab.cell_index(notebook, "rng = np.random.default_rng"))
    start = lab.cell_index(notebook, "%cogym new tabular_analysis")
    source = lab.cells(notebook).nth(start).locator(".cm-content").inner_text()
    lab.type_in_cell(notebook, start, source.replace("--autonomy free", "--autonomy ask"))
    start_cell = lab.run_cell(notebook, start)
    panel = SessionPanelPage.find(page, start_cell)
    expect(lab.outputs(start_cell).first).to_contain_text("started in the Jupyter server")
    shots.take("cogym-new-shows-the-panel", focus=start_cell, where="start")

    # 2. chat: the agent answers
    panel.send_chat("Hi, please say hello first.")
    reply = panel.chat_message(GREETING)
    shots.take("agent-replied-in-chat", focus=reply)

    # 3. the agent asks before running code; the person accepts
    panel.send_chat("Now please estimate the slopes of sales.")
    confirmation = panel.pending_confirmation()
    expect(confirmation.locator('[data-testid="confirmation-preview"]')).to_contain_text(
        "agent slopes", timeout=UI_TIMEOUT_MS)
    shots.take("confirmation-pending", focus=confirmation)
    confirmation.locator('[data-testid="confirm-accept"]').click()
    expect(panel.testid("confirmation")).to_have_count(0, timeout=UI_TIMEOUT_MS)

    # 4. the agent's cell appears in the live notebook with its output
    agent_cell = lab.cell_with_source(notebook, "agent slopes")
    expect(agent_cell).to_be_visible(timeout=UI_TIMEOUT_MS)
    # marked where a person looks (its first line says who wrote it), and placed right below
    # the cell that holds the panel, not at the notebook's end
    expect(agent_cell.locator(".jp-InputArea-editor")).to_contain_text(
        f"# written by agent (cogym agent, session {panel.session_id})")
    assert lab.cell_index(notebook, "agent slopes") == start + 1
    # and seen at a glance: the panel marks the agent's cells (an orange edge and a badge)
    expect(agent_cell).to_have_class(re.compile(r"\bcogym-agent-cell\b"), timeout=UI_TIMEOUT_MS)
    expect(agent_cell).to_have_attribute("data-cogym-author", "agent")
    badge = agent_cell.evaluate("(cell) => getComputedStyle(cell, '::after').content")
    assert badge == '"written by agent"', badge
    expect(lab.outputs(agent_cell)).to_contain_text("agent slopes: {'advertising'",
                                                    timeout=UI_TIMEOUT_MS)
    shots.take("agent-cell-in-notebook", focus=agent_cell)
    # the panel's notebook view follows the newest cell, where its output and errors land
    cells_view = panel.root.locator('[data-testid="view-notebook"] .cogym-scroll')
    expect(cells_view).to_have_attribute("data-following", "true", timeout=UI_TIMEOUT_MS)
    expect(cells_view.locator('[data-testid="notebook-cell"]').last).to_contain_text(
        "agent slopes")
    page.wait_for_function(  # scrolled to the bottom of the cells
        """(session) => {
            const view = document.querySelector(
                `[data-session="${session}"] [data-testid=view-notebook] .cogym-scroll`);
            return view && view.scrollTop + view.clientHeight >= view.scrollHeight - 8;
        }""", arg=panel.session_id, timeout=UI_TIMEOUT_MS)
    agent_cells = wait_for(lambda: _agent_cells_on_disk(jupyter_lab, NOTEBOOK),
                           "the agent's cell in the saved notebook")
    assert "agent slopes" in "".join(agent_cells[0]["source"])
    assert agent_cells[0]["metadata"]["cogym"]["session"] == panel.session_id

    # the agent's variable lives in the notebook's own kernel: the person's next cell uses it
    mine = lab.append_cell(notebook, "print('the person sees', round(slopes['price']))")
    person_cell = lab.run_cell(notebook, mine)
    expect(lab.outputs(person_cell)).to_have_text("the person sees -12", timeout=UI_TIMEOUT_MS)
    expect(person_cell).not_to_have_class(re.compile(r"\bcogym-agent-cell\b"))
    shots.take("person-uses-the-agents-variable", focus=person_cell)

    # 5. both edit the findings at once: the person types theirs while the agent writes its
    # own; the editor is live (no Save button), and both are kept
    findings = panel.editor("findings")
    panel.send_chat("Please add your finding to the findings.")
    findings.click()
    page.keyboard.press("Control+End")
    first_line, second_line = PERSON_FINDING.split("\n")
    findings.press_sequentially(first_line)
    page.keyboard.press("Enter")  # a new line in the editor, never a notebook shortcut
    findings.press_sequentially(second_line)
    shots.take("editor-both-editing", focus=findings)
    expect(findings).to_have_value(_both(PERSON_FINDING, AGENT_FINDING), timeout=UI_TIMEOUT_MS)
    panel.wait_synced("findings")
    shots.take("editor-both-edits-kept", focus=findings)

    # 6. finish and rate
    session_id = panel.session_id
    panel.finish()
    panel.rate(outcome=4, satisfaction=5, comment="Quick and careful.")
    shots.take("rating-saved", focus=panel.testid("rating-form"))
    status, snapshot = jupyter_lab.request("GET", f"cogym/api/sessions/{session_id}")
    assert status == 200, snapshot
    assert snapshot["status"] == "finished" and snapshot["end_reason"] == "finished"
    assert PERSON_FINDING in snapshot["state"]["outcome"]
    assert AGENT_FINDING in snapshot["state"]["outcome"]
    ratings_file = jupyter_lab.results_dir / session_id / "ratings.json"
    wait_for(ratings_file.exists, "ratings.json")
    ratings = json.loads(ratings_file.read_text())
    assert ratings["user"]["outcome_rating"] == 4
    assert ratings["user"]["satisfaction"] == 5
    assert ratings["user"]["comment"] == "Quick and careful."


def _agent_cells_on_disk(lab: JupyterLabServer, path: str) -> list[dict]:
    """The cells of the saved notebook that a session member wrote (the live document is saved
    to disk by the collaboration extension shortly after each change)."""
    status, model = lab.request("GET", f"api/contents/{path}?content=1")
    assert status == 200, model
    return [cell for cell in model["content"]["cells"]
            if cell["metadata"].get("cogym", {}).get("author") == "agent"]


def _both(first: str, second: str) -> re.Pattern[str]:
    """A pattern that matches a text holding both snippets, in either order."""
    return re.compile(rf"(?=[\s\S]*{re.escape(first)})(?=[\s\S]*{re.escape(second)})")
