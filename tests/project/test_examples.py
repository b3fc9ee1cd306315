"""The example notebooks run top to bottom in a real kernel (nbclient), as a newcomer runs them:
a new home folder, no data directory (each task reads the sample that ships in the package), and
the LM pointed at the scripted loopback server through environment variables. No Jupyter server
launches these kernels, so their sessions run inside the kernel."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from cogym_lab.datasets import DATA_ENV_VAR
from cogym_lab.envs import make_env
from cogym_lab.lm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.eval_scripts import ReportJudgePlay, RouteByInstance, travel_routes
from tests.support.example_scripts import FINDING, OwnDataRolePlay
from tests.support.paths import REPO_ROOT
from tests.support.plan_scripts import RelatedWorkPlanPlay
from tests.support.related_scripts import RelatedWorkRolePlay
from tests.support.travel_scripts import TravelRolePlay

EXAMPLES = REPO_ROOT / "examples"

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def notebook_env(tmp_path, monkeypatch) -> Iterator[Path]:
    """Kernels started now inherit a newcomer's machine: a new home folder, no data directory,
    no LM key; results and caches under ``tmp_path``."""
    monkeypatch.delenv(DATA_ENV_VAR, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.delenv(ENV_API_KEY, raising=False)
    monkeypatch.setenv(ENV_MODEL, "scripted")
    monkeypatch.setenv("COGYM_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    yield tmp_path


def run_notebook(name: str, folder: Path, lm: ScriptedOpenAIServer,
                 monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Execute the notebook in ``folder``; returns each code cell's text output."""
    monkeypatch.setenv(ENV_BASE_URL, lm.base_url)
    notebook = nbformat.read(EXAMPLES / name, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    return [_text(cell) for cell in notebook.cells if cell.cell_type == "code"]


def _text(cell: Any) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            parts.append(output.text)
        elif "data" in output:
            parts.append(str(output.data.get("text/plain", "")))
    return "".join(parts)


def test_the_notebooks_are_built_from_the_script_and_carry_no_outputs(tmp_path):
    before = {path.name: path.read_text() for path in EXAMPLES.glob("*.ipynb")}
    assert set(before) >= {"01_your_dataframe.ipynb", "02_travel_planning.ipynb",
                           "03_related_work.ipynb", "04_watch_agent_and_simulated_user.ipynb"}
    subprocess.run([sys.executable, str(EXAMPLES / "build_examples.py")], check=True,
                   capture_output=True)
    for name, text in before.items():
        if name[:2] in ("01", "02", "03", "04", "05", "06", "07", "08"):
            assert (EXAMPLES / name).read_text() == text, f"{name} differs from the script"
            notebook = nbformat.read(EXAMPLES / name, as_version=4)
            nbformat.validate(notebook)
            assert all(not cell.get("outputs") for cell in notebook.cells
                       if cell.cell_type == "code")


def test_travel_planning_notebook(notebook_env, monkeypatch):
    env = make_env("travel_planning", instance=3)
    with ScriptedOpenAIServer(responder=TravelRolePlay(env.task, env.db)) as lm:
        outputs = run_notebook("02_travel_planning.ipynb", notebook_env, lm, monkeypatch)
    assert "started in this kernel; your seat: user" in outputs[1]
    # no data directory: the sample in the package, said once, with the notebook's command
    assert outputs[1].count("Using the travel_planning sample that comes with cogym_lab") == 1
    assert "`%cogym data download travel_planning`" in outputs[1]
    assert "sample" not in "".join(outputs[2:4])
    assert "agent: A first full plan is in the editor." in outputs[2]
    assert "Day 1:" in outputs[3] and env.task.origin in outputs[3]
    assert "commonsense_pass_rate" in outputs[4]
    sessions = list((notebook_env / "results").iterdir())
    assert len(sessions) == 1 and (sessions[0] / "events.jsonl").is_file()


def test_related_work_notebook(notebook_env, monkeypatch):
    env = make_env("related_work", instance=0, index_limit=1)  # the topic, without an index
    play = RelatedWorkRolePlay(env.task.topic)
    with ScriptedOpenAIServer(responder=play) as lm:
        outputs = run_notebook("03_related_work.ipynb", notebook_env, lm, monkeypatch)
    assert outputs[1].count("Using the related_work sample that comes with cogym_lab") == 1
    assert "`%cogym data build-corpus" in outputs[1]
    assert "agent: A first draft is in the editor." in outputs[2]
    assert "### Foundations" in outputs[3] and "[1]" in outputs[3]
    assert "'performance': 0.8" in outputs[4] and play.drafts == 1 and play.judged == 1


def test_interactive_plans_notebook(notebook_env, monkeypatch):
    env = make_env("related_work", instance=0, index_limit=1)  # the topic, without an index
    play = RelatedWorkPlanPlay(env.task.topic)
    with ScriptedOpenAIServer(responder=play) as lm:
        outputs = run_notebook("06_interactive_plans.ipynb", notebook_env, lm, monkeypatch)
    assert "0: Survey, choose, draft" in outputs[2] and "s2 (agent): Choose" in outputs[2]
    kept = outputs[3].splitlines()
    assert len(kept) == 4 and all(" - " in line for line in kept)  # the search's papers
    steps = outputs[4]
    assert "s2  done by user: Choose the papers to keep" in steps
    assert "s3  done by agent" in steps and "### Outlook" in steps  # the output, in the editor
    assert "[1]" in steps and play.drafts == 1
    assert "'performance': 0.8" in outputs[5] and play.judged == 1


def test_watch_an_agent_and_a_simulated_user_notebook(notebook_env, monkeypatch):
    env = make_env("travel_planning", instance=0)
    with ScriptedOpenAIServer(responder=TravelRolePlay(env.task, env.db)) as lm:
        outputs = run_notebook("04_watch_agent_and_simulated_user.ipynb", notebook_env, lm,
                               monkeypatch)
    # Displaying the seatless handle shows the session panel, watching the simulated user (its
    # text says so where the widget is not drawn).
    assert "watching user, read-only" in outputs[1], outputs[1][:300]
    assert '.watch("user")' in outputs[1] and "object at 0x" not in outputs[1]
    transcript = outputs[2]
    # in plain sentences, never the action syntax
    assert "agent: Search flights on one date" in transcript
    assert "Replace the whole shared plan with new text" in transcript
    assert "FLIGHT_SEARCH(" not in transcript and "EDITOR_UPDATE(" not in transcript
    assert "[agent] A first full plan is in the editor." in outputs[3]
    assert "[user] Looks good so far" in outputs[3]
    assert "ended: finished | delivered: True" in outputs[4]
    # The default protocol is cogym, graded by the release's travel evaluator, under which a
    # plan with a hotel fails Within Sandbox: 7 of the 8 commonsense checks pass.
    assert "'commonsense_pass_rate': 0.875" in outputs[4]
    assert str(notebook_env / "results") in outputs[5]


def test_your_dataframe_notebook(notebook_env, monkeypatch):
    play = OwnDataRolePlay()
    with ScriptedOpenAIServer(responder=play) as lm:
        outputs = run_notebook("01_your_dataframe.ipynb", notebook_env, lm, monkeypatch)
    assert "advertising" in outputs[1]  # df.head()
    assert "started in this kernel; your seat: user" in outputs[2]
    assert "agent: Done: the finding is in the editor." in outputs[3]
    assert ">>> slopes [" in outputs[4] and FINDING in outputs[4]
    # No server: the agent has a kernel of its own, so the frame went over as a CSV file.
    assert "pd.read_csv(" in play.code[0] and play.code[0].count("df.csv") == 1
    assert "ended by the user" in outputs[5]


def test_evaluation_demo_notebook(notebook_env, monkeypatch):
    judge = ReportJudgePlay(RouteByInstance(travel_routes([0, 1])))
    with ScriptedOpenAIServer(responder=judge) as lm:
        outputs = run_notebook("05_evaluation_demo.ipynb", notebook_env, lm, monkeypatch)
    assert "autonomous: 2 finished, 2 delivered, 0 failed" in outputs[1]
    assert "collaborative: 2 finished, 2 delivered, 0 failed" in outputs[1]
    assert "<EvalReport: 4 sessions, 2 systems" in outputs[2]
    assert "collaborative" in outputs[3] and "autonomous" in outputs[3]
    assert judge.asked["pairwise"] == 2 and judge.asked["messages"] >= 2
    assert "Search flights on one date" in outputs[4]  # the trajectory in plain sentences
    # results go to cogym-results/, which git ignores: running the examples leaves the checkout
    # clean (eval-runs/ and eval-report/ used to appear beside the notebooks)
    assert not (notebook_env / "eval-runs").exists() and not (notebook_env / "eval-report").exists()
    repo = REPO_ROOT
    assert "cogym-results/" in (repo / ".gitignore").read_text().split()
    saved = notebook_env / "cogym-results" / "eval-report"
    assert (saved / "summary.csv").is_file() and list(saved.rglob("*.png"))


def test_real_time_kitchen_notebook(notebook_env, monkeypatch):
    """The FSM agent cooks (no LM is asked anything) while the seat's chef sets out bread from
    code; the game runs to its end and the notebook prints its result and measures."""
    with ScriptedOpenAIServer() as lm:
        outputs = run_notebook("07_real_time_kitchen.ipynb", notebook_env, lm, monkeypatch)
    assert lm.requests == []
    assert "(kitchen), your seat: " in outputs[1], outputs[1][:300]  # the panel, in words
    result = outputs[3].splitlines()
    assert result[0].startswith("score ") and ", missed " in result[0], outputs[3]
    assert any(line.startswith("agent: ") and line.endswith("% of the key steps")
               for line in result[1:]), outputs[3]
    measures = dict(line.split(": ", 1) for line in outputs[4].splitlines())
    assert measures["ticks"] == "240" and "agent_contribution" in measures, measures
    sessions = list((notebook_env / "results").iterdir())
    assert len(sessions) == 1 and (sessions[0] / "events.jsonl").is_file()
    events = (sessions[0] / "events.jsonl").read_text()
    assert '"PREPARE(' in events and '"clock"' in events


def test_analyse_a_study_notebook(notebook_env, monkeypatch):
    """Two scripted study runs (no LM asked anything), one standing in for the human arm, then
    the analysis and the comparison from the CLI, read back with pandas."""
    with ScriptedOpenAIServer() as lm:
        outputs = run_notebook("08_analyse_a_study.ipynb", notebook_env, lm, monkeypatch)
    assert lm.requests == []
    assert "todo-demo" in outputs[1]  # study check
    assert "6 participants" in outputs[2] and "sessions" in outputs[2]
    assert "share_inspecting" in outputs[3] and "item_ratio" in outputs[3]
    assert "Agent A" in outputs[4] and "satisfied" in outputs[4]
    assert "Wilcoxon signed-rank" in outputs[5] and "time_shares" in outputs[5]
    assert "'time_shares.png'" in outputs[6] and "'likert.png'" in outputs[6]
    demo = notebook_env / "cogym-results" / "study-demo"
    assert (demo / "simulated" / "analysis.md").is_file()
    assert "sceptical" in (demo / "stand-in-human" / "participants.csv").read_text()
    assert "figure" in outputs[9] or "initiative" in outputs[9]
    assert (demo / "compare" / "compare.md").is_file()
