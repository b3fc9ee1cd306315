"""What a save of the person's notebook keeps of the agent's cells (``reconcile``), over any mix
of person cells, agent cells and what a stale browser copy does to them: drop agent cells, lose
their outputs, type into them, change and add cells of its own. The person's cells and typing
are never touched, every agent cell is there with its outputs, and the notebook validates."""

from __future__ import annotations

import copy
from typing import Any

import nbformat
from hypothesis import given, settings
from hypothesis import strategies as st

from cogym_lab.server.live_notebooks.agent_cells import AgentCell, reconcile, validation_problem

AGENT_META = {"cogym": {"author": "agent", "session": "s"}, "tags": ["cogym-agent"]}


def agent_cell(number: int, finished: bool) -> AgentCell:
    outputs = [{"output_type": "stream", "name": "stdout", "text": f"out {number}\n"}]
    return AgentCell(cell_id=f"agent-{number}", source=f"# written by agent\nprint({number})",
                     metadata=copy.deepcopy(AGENT_META), outputs=outputs if finished else None,
                     execution_count=number + 1 if finished else None)


def person_cell(number: int, text: str) -> dict[str, Any]:
    return nbformat.v4.new_code_cell(f"mine = {number}  # {text}", id=f"person-{number}")


@st.composite
def saves(draw: Any) -> tuple[dict[str, Any], list[AgentCell], dict[str, Any]]:
    """A notebook as the agent left it, the agent's cells, and a browser's save of it."""
    people = draw(st.lists(st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]),
                                   max_size=8), max_size=5))
    finished = draw(st.lists(st.booleans(), min_size=1, max_size=5))
    agents = [agent_cell(number, done) for number, done in enumerate(finished)]
    cells: list[dict[str, Any]] = [person_cell(n, text) for n, text in enumerate(people)]
    at = draw(st.integers(0, len(cells)))
    for offset, agent in enumerate(agents):  # the agent's cells read in order, below one cell
        cells.insert(at + offset, agent.as_nbformat())
    written = nbformat.from_dict(nbformat.v4.new_notebook(cells=copy.deepcopy(cells)))

    saved = copy.deepcopy(written)
    for agent in agents:
        cell = next(c for c in saved["cells"] if c.get("id") == agent.cell_id)
        fate = draw(st.sampled_from(["kept", "dropped", "no outputs", "typed", "ran again"]))
        if fate == "dropped":
            saved["cells"].remove(cell)
        elif fate == "no outputs":
            cell["outputs"], cell["execution_count"] = [], None
        elif fate == "typed":
            cell["source"] += "\n# the person's note"
            cell["outputs"], cell["execution_count"] = [], None
        elif fate == "ran again":
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "mine\n"}]
            cell["execution_count"] = 99
    if draw(st.booleans()):
        saved["cells"].append(nbformat.v4.new_markdown_cell("a note of mine", id="my-note"))
    if saved["cells"] and draw(st.booleans()):
        first = saved["cells"][0]
        if not first.get("id", "").startswith("agent-"):
            first["source"] += " edited"
    return written, agents, saved


@settings(max_examples=100, deadline=None)
@given(saves())
def test_a_save_keeps_the_persons_work_and_the_agents_cells(case: Any) -> None:
    _, agents, saved = case
    before = copy.deepcopy(saved)
    notebook = copy.deepcopy(saved)
    restored = reconcile(notebook, agents)

    def people(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [c for c in cells if not str(c.get("id", "")).startswith("agent-")]

    assert people(notebook["cells"]) == people(before["cells"])  # untouched, same order
    ids = [c.get("id") for c in notebook["cells"]]
    for agent in agents:
        assert agent.cell_id in ids
        cell = notebook["cells"][ids.index(agent.cell_id)]
        was = next((c for c in before["cells"] if c.get("id") == agent.cell_id), None)
        if was is not None:
            assert cell["source"] == was["source"]  # what the person typed stays
            if was["outputs"] or was["execution_count"] is not None:
                assert (cell["outputs"], cell["execution_count"]) == (
                    was["outputs"], was["execution_count"])  # run again: the person's
        else:
            assert cell["source"] == agent.source
        if agent.finished and (was is None or not was["outputs"]):
            assert cell["outputs"] == agent.outputs
    # the agent's cells read in the order it added them, next to each other
    agent_ids = [i for i in ids if str(i).startswith("agent-")]
    assert agent_ids == [a.cell_id for a in agents]
    first = ids.index(agent_ids[0])
    assert ids[first:first + len(agent_ids)] == agent_ids
    assert validation_problem(notebook) is None
    assert {r.cell_id for r in restored} <= {a.cell_id for a in agents}
    assert reconcile(notebook, agents) == []  # nothing more to put back


def test_a_dropped_cell_comes_back_with_what_the_person_typed_into_it() -> None:
    agent = agent_cell(0, finished=True)
    previous = nbformat.v4.new_notebook(cells=[person_cell(0, ""), agent.as_nbformat()])
    previous["cells"][1]["source"] += "\n# typed"
    stale = nbformat.v4.new_notebook(cells=[person_cell(0, "newer")])
    (restored,) = reconcile(stale, [agent], previous=previous)
    assert (restored.cell_id, restored.what) == (agent.cell_id, "cell")
    assert [c["id"] for c in stale["cells"]] == ["person-0", agent.cell_id]
    assert stale["cells"][1]["source"].endswith("print(0)\n# typed")
    assert stale["cells"][1]["outputs"] == agent.outputs


def test_a_missing_cell_goes_below_the_cell_the_session_started_from() -> None:
    notebook = nbformat.v4.new_notebook(cells=[person_cell(0, ""), person_cell(1, "")])
    reconcile(notebook, [agent_cell(0, True), agent_cell(1, False)], anchor="person-0")
    assert [c["id"] for c in notebook["cells"]] == ["person-0", "agent-0", "agent-1", "person-1"]
    assert notebook["cells"][2]["outputs"] == [] and notebook["cells"][2]["execution_count"] is None


def test_an_old_notebook_without_cell_ids_is_brought_to_4_5() -> None:
    old = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    old.nbformat_minor = 4
    del old.cells[0]["id"]
    notebook = nbformat.from_dict(nbformat.reads(nbformat.writes(old), as_version=4))
    reconcile(notebook, [agent_cell(0, True)])
    assert notebook["nbformat_minor"] == 5
    assert notebook["cells"][0]["source"] == "x = 1" and notebook["cells"][0]["id"]
    assert validation_problem(notebook) is None
