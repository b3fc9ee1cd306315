"""Scores explained in plain words (``CoEnv.explain_scores`` -> ``ScoreReport``), task by task,
from real grading: real instances from the shared data, real graders, LM judges reached over
HTTP on the scripted loopback server. Then whole sessions: ``session.json`` keeps the reports
beside the scores, and the panels are told the graded end on the status channel.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from cogym_lab.bus import MemoryBus
from cogym_lab.core import CoEnv, Component, RenderType, action
from cogym_lab.core.check_env import check_env
from cogym_lab.core.env import ScoreReport
from cogym_lab.core.messages import status_channel
from cogym_lab.envs.related_work.env import RelatedWorkEnv
from cogym_lab.envs.related_work.grader import judge_reason
from cogym_lab.envs.tabular_analysis.env import TabularAnalysisEnv
from cogym_lab.envs.todo.env import TodoEnv
from cogym_lab.envs.travel_planning.env import TravelPlanningEnv
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.nodes.grading import GradingStatus
from cogym_lab.nodes.results import read_session
from cogym_lab.nodes.session import Session, SessionConfig
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.envs.tabular_analysis.test_tabular_grader import _reply as tabular_judge_reply
from tests.envs.travel_planning.test_travel_grader import BURBANK

#: What a person must never read in a reason: action syntax, exception class names.
INTERNAL = re.compile(r"\b[A-Z][A-Z0-9_]{2,}\(|\b[A-Z][A-Za-z]*(?:Error|Exception)\b")
SECTION = ("## Learned indexes\nLearned index structures replace B-trees [1] and hash maps [2], "
           "and later work makes them updatable [3].\n\n## Predictions in algorithms\nPredictions "
           "speed up caching [4] and scheduling [5], with guarantees when they are wrong [6].\n")
JUDGE_REPLY = ("The section covers two clear themes and cites six papers, but it only lists "
               "them without comparing their approaches.\nTherefore, the final score is 3.")


def judge(server: ScriptedOpenAIServer) -> Any:
    return make_lm(LMConfig(model="scripted", base_url=server.base_url, max_retries=0,
                            temperature=0))


def by_name(reports: list[ScoreReport]) -> dict[str, ScoreReport]:
    assert all(isinstance(report, ScoreReport) for report in reports)
    return {report.name: report for report in reports}


def assert_plain(reports: list[ScoreReport]) -> None:
    for report in reports:
        assert report.label and not INTERNAL.search(report.label), report
        for reason in report.reasons:
            assert reason.strip() and not INTERNAL.search(reason), reason


# -- each task, from its real grader ---------------------------------------------------------

def test_travel_reasons_list_every_check_with_its_verdict(use_shared_data):
    # cogym_lab's grader: under cogym the release's evaluator fails Within Sandbox for any plan
    # with a hotel, and this test wants a plan that passes everything
    env = TravelPlanningEnv(instance=0, protocol="cogym_lab")
    env.reset()
    assert env.step("user", {"name": "EDITOR_UPDATE", "args": {"text": BURBANK}}).error is None
    scores = env.evaluate()
    reports = by_name(env.explain_scores(scores))
    assert set(reports) == {"performance", "commonsense_pass_rate", "hard_pass_rate",
                            "final_pass"}
    assert reports["performance"].value == scores["performance"]
    assert "8 of 8 commonsense checks" in reports["performance"].reasons[0]
    assert "$5,640" in " ".join(reports["performance"].reasons)  # the grader's own total
    common = reports["commonsense_pass_rate"].reasons
    assert len(common) == 8 and all(line.startswith("Passed: ") for line in common)
    assert any(line.startswith("Passed: Minimum Nights Stay.") for line in common)
    hard = reports["hard_pass_rate"].reasons
    assert any(line.startswith("Passed: Budget. Total cost $5,640") for line in hard), hard
    assert reports["final_pass"].reasons == ["Every check and constraint passed."]
    assert_plain(list(reports.values()))


def test_travel_reasons_put_failed_checks_first_and_say_nothing_was_delivered(use_shared_data):
    env = TravelPlanningEnv(instance=0)
    env.reset()
    over_budget = BURBANK.replace("Accommodation: Pleasant 1 bedroom apartment in Harlem "
                                  "Brownstone, Burbank\n\nDay 2", "Accommodation: -\n\nDay 2")
    env.step("user", {"name": "EDITOR_UPDATE", "args": {"text": over_budget}})
    reports = by_name(env.explain_scores(env.evaluate()))
    common = reports["commonsense_pass_rate"].reasons
    assert common[0].startswith("Failed: "), common  # the failure first, then what passed
    assert reports["final_pass"].reasons[0].startswith("Not passed: ")
    env.reset()
    empty = by_name(env.explain_scores(env.evaluate()))
    assert empty["performance"].reasons[0] == ("No plan was delivered, so every check counts "
                                               "as failed.")
    assert empty["final_pass"].value == 0.0


async def test_related_work_reasons_give_the_judges_score_and_stated_reason(use_shared_data):
    with ScriptedOpenAIServer([JUDGE_REPLY]) as server:
        env = RelatedWorkEnv(instance=0, judge_lm=judge(server))
        env.reset()
        env.step("user", {"name": "EDITOR_UPDATE", "args": {"text": SECTION}})
        scores = await env.aevaluate()
    reports = by_name(env.explain_scores(scores))
    assert list(reports) == ["performance", "rubric_score", "unique_citations", "subsections"]
    rubric = reports["rubric_score"]
    assert rubric.value == 3.0
    assert rubric.reasons[0] == "The judge gave 3 out of 5 on the Related Work rubric."
    assert rubric.reasons[1] == ("The judge's reason: The section covers two clear themes and "
                                 "cites six papers, but it only lists them without comparing "
                                 "their approaches.")
    assert reports["unique_citations"].reasons[0] == ("The section cites 6 different papers: "
                                                      "[1], [2], [3], [4], [5], [6].")
    assert reports["subsections"].reasons == [
        "Subsections: Learned indexes; Predictions in algorithms."]
    # the library is empty: under the default protocol the section is not delivered
    assert "does not count as delivered" in " ".join(reports["performance"].reasons)
    assert_plain(list(reports.values()))


def test_related_work_without_a_judge_reports_the_facts_and_says_why(use_shared_data,
                                                                      no_ambient_lm):
    env = RelatedWorkEnv(instance=0)
    env.reset()
    env.step("user", {"name": "EDITOR_UPDATE", "args": {"text": SECTION}})
    reports = by_name(env.explain_scores(env.evaluate()))
    assert set(reports) == {"unique_citations", "subsections"}
    assert "No judge language model was set up" in reports["unique_citations"].reasons[-1]


@pytest.mark.parametrize(("reply", "reason"), [
    ("Therefore, the final score is 4.", None),
    ("Clear.\n\nTherefore, the final score is 4.", "Clear."),
    ("Good coverage\nof the field.\nTherefore, the final score is 5",
     "Good coverage of the field."),
])
def test_the_judges_reason_is_its_reply_without_the_score_line(reply, reason):
    assert judge_reason(reply) == reason


async def test_tabular_reasons_say_what_the_judge_matched(use_shared_data, tmp_path):
    reply = tabular_judge_reply(sizes=(3, 2, 1), answer="B) similar but general than HypoA")
    with ScriptedOpenAIServer([reply]) as server:
        env = TabularAnalysisEnv(instance=0, workdir=str(tmp_path), judge_lm=judge(server))
        env.reset()
        try:
            env.findings = "Replication effects are smaller than the original ones."
            scores = await env.aevaluate()
        finally:
            await env.aclose()
    reports = by_name(env.explain_scores(scores))
    assert set(reports) == {"performance", "recall_context", "hms", "context_f1_relation"}
    assert reports["recall_context"].reasons == [
        "The judge split the expected answer into 1 part and the finding into 1 part; 1 of the "
        "expected parts found a part of the finding about the same context."]
    hms = reports["hms"].reasons
    assert "Variables: the expected answer uses 3, the finding 2, and they share 1." in hms
    assert ("Relation: the finding's relation between them is similar to the expected "
            "answer's, but more general.") in hms
    assert "The judge's reason: same direction" in hms
    gold = env.task.gold_hypothesis
    assert all(gold not in reason for report in reports.values() for reason in report.reasons)
    assert_plain(list(reports.values()))


def test_todo_reasons_name_the_items_found_missing_and_done():
    env = TodoEnv()
    env.reset()
    for text in ("tent", "rain jacket", "map"):
        env.step("user", f'ADD_ITEM(text="{text}")')
    env.step("user", "CHECK_ITEM(item_id=1)")
    reports = by_name(env.explain_scores(env.evaluate()))
    assert reports["must_have_coverage"].reasons == ["On the list: rain jacket.",
                                                     "Missing: headlamp."]
    assert reports["size"].reasons == ["The list has 3 items; the brief asks for at least 6."]
    assert "1 of 3 items are ticked off as packed." in reports["performance"].reasons
    assert reports["size"].value == 0.5


# -- check_env checks the hook's return type ---------------------------------------------------

class _Board(CoEnv):
    """A tiny task whose explain_scores the subclasses below get wrong."""

    name = "board"

    @property
    def task_description(self) -> str:
        return "Write notes."

    def _reset(self, seed: int | None) -> None:
        self.notes: list[str] = []

    def public_components(self) -> list[Component]:
        return [Component(name="notes", render_type=RenderType.TEXT, content=list(self.notes))]

    def evaluate(self) -> dict[str, float]:
        return {"notes": float(len(self.notes))}

    @action("Write a note.", text="The note")
    def write(self, role: str, text: str) -> None:
        self.notes.append(text)


class _ExplainsWithDicts(_Board):
    def explain_scores(self, scores: dict[str, float]) -> list[Any]:
        return [{"name": "notes", "value": scores["notes"], "label": "Notes", "reasons": []}]


class _ExplainsAnotherScore(_Board):
    def explain_scores(self, scores: dict[str, float]) -> list[ScoreReport]:
        return [ScoreReport(name="quality", value=1.0, label="Quality")]


def test_check_env_checks_what_explain_scores_returns():
    assert check_env(_Board, raise_on_error=False) == []  # no hook: nothing to check
    [wrong_type] = check_env(_ExplainsWithDicts, raise_on_error=False)
    assert wrong_type.startswith("Score reports: explain_scores()[0] is dict") \
        and "ScoreReport(" in wrong_type
    [wrong_name] = check_env(_ExplainsAnotherScore, raise_on_error=False)
    assert "'quality', which is not among the scores it was given (notes)" in wrong_name


# -- whole sessions: session.json and the panels ------------------------------------------------

class _Writer:
    """A teammate that searches, puts the first hit in the library (so the section counts as
    delivered), writes the section, then finishes."""

    kind = "agent"

    def start(self, context: Any) -> None:
        self.step = 0

    async def act(self, notification: Any) -> Any:
        self.step += 1
        if self.step == 1:
            return {"name": "SEARCH_PAPER", "args": {"query": "learning model"}}
        if self.step == 2:
            hit = notification.view["search"].content[0]
            return {"name": "LIBRARY_ADD_PAPER", "args": {"ids": [hit["id"]]}}
        if self.step == 3:
            return {"name": "EDITOR_UPDATE", "args": {"text": SECTION}}
        return "FINISH()"

    def end(self, final: Any) -> None:
        pass


async def _graded_session(env: RelatedWorkEnv, results: Path) -> tuple[Any, list[dict]]:
    """Run a whole session on ``env`` with a writer; its result and the status channel."""
    bus = MemoryBus()
    await bus.connect()
    session = Session(env, {"agent": _Writer()}, bus=bus, results_dir=results,
                      config=SessionConfig(idle_seconds=5, timeout=60))
    result = await session.run()
    statuses = await bus.subscribe(status_channel(session.session_id), from_beginning=True)
    seen = []
    while (message := await statuses.get(timeout=0)) is not None:
        seen.append(message)
    await bus.close()
    return result, seen


async def test_a_session_keeps_the_judges_reasons_in_session_json_and_tells_the_panels(
        use_shared_data, tmp_path):
    with ScriptedOpenAIServer([JUDGE_REPLY]) as server:
        env = RelatedWorkEnv(instance=0, index_limit=300, index_cache=str(tmp_path / "index"),
                             judge_lm=judge(server))
        result, statuses = await _graded_session(env, tmp_path / "run")
        assert len(server.chat_requests) == 1  # graded once; explaining asked the LM nothing
    assert result.end_reason == "finished" and result.delivered
    assert result.scores["rubric_score"] == 3.0
    stored = read_session(tmp_path / "run")
    assert stored["scores"] == result.scores
    reports = {report["name"]: report for report in stored["score_reports"]}
    assert reports["rubric_score"]["reasons"][:2] == [
        "The judge gave 3 out of 5 on the Related Work rubric.",
        "The judge's reason: The section covers two clear themes and cites six papers, but it "
        "only lists them without comparing their approaches."]
    assert reports["performance"]["value"] == 0.6  # 3 of 5, Co-Gym's normalisation
    assert stored["grading_note"] is None and stored["grading_error"] is None
    [graded] = [GradingStatus.model_validate(m) for m in statuses if "grading" in m]
    assert graded.grading.score_reports == result.score_reports
    assert graded.grading.scores == result.scores and graded.grading.note is None
    json.dumps(stored)  # all of it is JSON


async def test_a_failed_judge_leaves_a_plain_note_and_the_raw_error_for_the_record(
        use_shared_data, tmp_path):
    with ScriptedOpenAIServer() as server:
        server.add(Reply(status=500, error="upstream exploded"), repeat=True)
        env = RelatedWorkEnv(instance=0, index_limit=300, index_cache=str(tmp_path / "index"),
                             judge_lm=judge(server))
        result, statuses = await _graded_session(env, tmp_path / "run")
    assert result.delivered and result.scores == {} and result.score_reports == []
    stored = read_session(tmp_path / "run")
    assert stored["grading_note"] == ("Not graded: the grader's language model failed (its "
                                      "server kept reporting errors), so this session has no "
                                      "scores. The result itself is saved.")
    assert stored["grading_error"].startswith("LMError: ") and "HTTP 500" in \
        stored["grading_error"]
    [graded] = [GradingStatus.model_validate(m) for m in statuses if "grading" in m]
    assert graded.grading.note == stored["grading_note"]
    assert not INTERNAL.search(graded.grading.note or "")


async def test_an_undelivered_session_says_why_it_was_not_graded(tmp_path):
    bus = MemoryBus()
    await bus.connect()

    class Quitter:
        kind = "agent"

        def start(self, context: Any) -> None:
            pass

        async def act(self, notification: Any) -> Any:
            return "FINISH()"

        def end(self, final: Any) -> None:
            pass

    session = Session(TodoEnv(), {"agent": Quitter()}, bus=bus, results_dir=tmp_path,
                      config=SessionConfig(idle_seconds=5, timeout=30))
    result = await session.run()
    await bus.close()
    assert not result.delivered and result.scores == {}
    assert read_session(tmp_path)["grading_note"] == ("Not graded: the result is empty, so "
                                                      "nothing was delivered.")
