"""``cogym-lab eval regrade`` with an LM judge: a small Related Work run on the bundled sample
(no data directory), graded by a scripted judge on the loopback server, is re-graded by a judge
the command line points at. The same answer keeps the rubric score; a judge that answers
differently shows up in ``regrade.json`` as a changed score, old and new. The drafting
assistant's LM is given only on the command line, so the log replays without any LM set up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.datasets import DATA_ENV_VAR
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.related_scripts import RelatedWorkRolePlay, judge_replies

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(300)]


@pytest.fixture
def newcomer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No data directory: Related Work sessions read the sample inside the package."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(DATA_ENV_VAR, raising=False)
    return tmp_path


def _related_work_run(out: Path) -> None:
    """One session of instance 0, its judge giving 4 (RelatedWorkRolePlay's judge)."""
    play = RelatedWorkRolePlay("Push Relabel")
    with ScriptedOpenAIServer(responder=play) as server:
        ran = CliRunner().invoke(main, [
            "eval", "run", "--task", "related_work", "--instances", "0", "--out", str(out),
            "--model", "agent=agent-lm", "--model", "user=user-lm", "--model", "tools=tool-lm",
            "--base-url", server.base_url, "--idle-seconds", "2", "--no-progress",
            "--allow-sample"])
    assert ran.exit_code == 0, ran.output
    assert play.judged == 1 and play.drafts == 1


def _regrade(run_dir: Path, score: int) -> tuple[str, dict, list[dict]]:
    """Re-grade with a judge (a new endpoint, a new model) that gives ``score``; the command's
    output, regrade.json, and what the judge was asked."""
    with ScriptedOpenAIServer(judge_replies(score)) as judge:
        result = CliRunner().invoke(main, ["eval", "regrade", str(run_dir),
                                           "--model", "tools=judge-v2",
                                           "--base-url", f"tools={judge.base_url}"])
        asked = [request.body for request in judge.chat_requests]
    assert result.exit_code == 0, result.output
    return result.output, json.loads((run_dir / "regrade.json").read_text()), asked


def test_regrade_asks_the_given_judge_and_records_old_and_new_rubric_scores(newcomer):
    run_dir = newcomer / "run"
    _related_work_run(run_dir)
    stored = json.loads((run_dir / "000" / "session.json").read_text())
    assert stored["scores"]["rubric_score"] == 4 and stored["delivered"] is True
    before = {path: path.read_bytes() for path in run_dir.rglob("*") if path.is_file()}
    # The drafting assistant's LM was given on the command line, not in the environment: its
    # log still replays (the draft is in the log), which re-grading builds on.
    replayed = CliRunner().invoke(main, ["replay", str(run_dir / "000")])
    assert replayed.exit_code == 0, replayed.output

    # The same verdict from another judge: nothing changed.
    output, report, asked = _regrade(run_dir, 4)
    assert len(asked) == 1 and asked[0]["model"] == "judge-v2", (output, report)
    assert asked[0]["messages"][0]["content"].startswith("You grade Related Work sections")
    assert "### Foundations" in json.dumps(asked[0]["messages"])  # it judged the stored draft
    (same,) = report["sessions"]
    assert report["judges"] is True and same["directory"] == "000"
    assert same["before"]["rubric_score"] == same["now"]["rubric_score"] == 4
    assert same["changed"] == [] and same["delivered_now"] is True
    assert "000: same scores" in output and "0 of 1 sessions re-graded differently" in output

    # A judge that answers 2: the rubric score changed, old and new side by side.
    output, report, asked = _regrade(run_dir, 2)
    assert len(asked) == 1
    (changed,) = report["sessions"]
    assert (changed["before"]["rubric_score"], changed["now"]["rubric_score"]) == (4, 2)
    assert changed["changed"] == [{"name": "performance", "before": 0.8, "now": 0.4},
                                  {"name": "rubric_score", "before": 4, "now": 2}]
    assert "000: performance 0.8 -> 0.4, rubric_score 4 -> 2" in output
    assert "1 of 1 sessions re-graded differently" in output

    after = {path: path.read_bytes() for path in run_dir.rglob("*")
             if path.is_file() and path.name != "regrade.json"}
    assert after == before  # re-grading wrote only regrade.json
