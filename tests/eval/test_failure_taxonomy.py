"""The fine-grained failure taxonomy (Co-Gym Table 10): the table of 26 types, the annotator
through our real LM client (over aiohttp) against the loopback server (garbage replies included),
``failures.json``, and the report's prevalence tables with the LM / scaffolding split."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cogym_lab.eval import load_session, report
from cogym_lab.eval.judging.failure_taxonomy import (
    annotate,
    categories,
    normalise_code,
    read_taxonomy,
    taxonomy_for,
    type_rows,
)
from cogym_lab.eval.judging.judges import Judge
from cogym_lab.eval.judging.labels import (
    FAILURE_CATEGORIES,
    FailureTaxonomy,
    TaxonomyEvidence,
    TaxonomyFinding,
)
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.records.failure_types import FAILURE_TYPES
from cogym_lab.records.label_files import FAILURES_FILE
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.support.trajectories import FOUR_ROUNDS, write_session

pytestmark = pytest.mark.usefixtures("no_ambient_lm")


def judge_for(server: ScriptedOpenAIServer) -> Judge:
    return Judge(make_lm(LMConfig(model="annotator-lm", base_url=server.base_url,
                                  max_retries=0, timeout=30)))


def test_the_table_has_the_papers_26_types_under_its_five_categories() -> None:
    assert len(FAILURE_TYPES) == 26
    counts = Counter(t.category for t in FAILURE_TYPES.values())
    assert counts == {"communication": 7, "situational_awareness": 6, "planning": 6,
                      "environment_awareness": 4, "personalisation": 3}
    assert set(counts) == set(FAILURE_CATEGORIES)
    prefixes = {"communication": "C", "situational_awareness": "SA", "planning": "PL",
                "environment_awareness": "EA", "personalisation": "P"}
    for code, kind in FAILURE_TYPES.items():
        assert kind.code == code and code.split(".")[0] == prefixes[kind.category]
        assert 0 <= kind.paper_real <= 1 and 0 <= kind.paper_simulated <= 1
    assert len({t.name for t in FAILURE_TYPES.values()}) == 26
    # Two of the paper's figures: C.2 in 29% of real and 46% of simulated trajectories.
    assert (FAILURE_TYPES["C.2"].paper_real, FAILURE_TYPES["C.2"].paper_simulated) == (0.29,
                                                                                        0.46)


@pytest.mark.parametrize(("given", "code"), [
    ("C.2", "C.2"), ("c2", "C.2"), ("(SA.5)", "SA.5"), ("pl-1", "PL.1"), (" P.3 ", "P.3"),
    ("EA.04", "EA.4"), ("C.8", None), ("X.1", None), ("communication", None), (3, None),
    (None, None), ("C.2\ud800", "C.2"), ("", None)])
def test_codes_are_read_in_the_spellings_an_lm_uses(given: Any, code: str | None) -> None:
    assert normalise_code(given) == code


# FOUR_ROUNDS' log: the agent adds a tent and a stove, "I added a tent and a stove. Anything
# you need?", the user asks for a headlamp, ... "Shall I add anything else?", a rain jacket.
REPLY = {"findings": [
    {"code": "C.3", "attribution": "lm", "evidence": ["Done: headlamp added."]},
    # One quote real, one made up: supported.
    {"code": "sa.5", "attribution": "Scaffolding",
     "evidence": ["I hid the stove", "added a tent and a stove"]},
    # Every quote made up: kept in the file, not counted.
    {"code": "PL.1", "attribution": "lm", "evidence": ["I will never add it"]},
    # A single quote as a string; non-strings left out.
    {"code": "P.2", "attribution": "lm", "evidence": "Shall I add anything else?"},
    {"code": "EA.1", "attribution": "lm", "evidence": [3, None, {"q": 1}]},
    {"code": "X.9", "attribution": "lm", "evidence": ["x"]},  # unknown code: dropped
    {"code": "C.1", "attribution": "both", "evidence": ["x"]},  # not lm or scaffolding
    ["C.1"],  # not an object: dropped
]}


async def test_the_annotator_labels_types_with_checked_quotes(
        tmp_path: Path, server: ScriptedOpenAIServer) -> None:
    record = load_session(write_session(tmp_path / "s", FOUR_ROUNDS))
    server.add("```json\n" + json.dumps(REPLY) + "\n```")
    taxonomy = await annotate(judge_for(server), record, "Pack for a camping trip.")
    assert taxonomy is not None and taxonomy.annotator == "annotator-lm"
    assert taxonomy.dropped == 3
    summary = [(f.code, f.category, f.attribution, [(e.verified, e.seq) for e in f.evidence],
                f.supported) for f in taxonomy.findings]
    # Events: 1 start, 2 tent, 3 stove, 4 the agent's message, ... 7 "Done: headlamp added."
    assert summary == [
        ("C.3", "communication", "lm", [(True, 7)], True),
        ("SA.5", "situational_awareness", "scaffolding", [(False, None), (True, 4)], True),
        ("PL.1", "planning", "lm", [(False, None)], False),
        ("P.2", "personalisation", "lm", [(True, 9)], True),
        ("EA.1", "environment_awareness", "lm", [], False)]
    prompt = server.bodies[0]["messages"][-1]["content"]
    assert all(f"- {code} " in prompt for code in FAILURE_TYPES)
    assert "Final outcome:" in prompt and "rain jacket" in prompt
    assert "Pack for a camping trip." in prompt
    # The five categories follow from the supported codes (PL.1 and EA.1 are not).
    assert categories(taxonomy).present() == {
        "communication": True, "situational_awareness": True, "planning": False,
        "environment_awareness": False, "personalisation": True}


async def test_failures_json_is_written_once_and_read_back(
        tmp_path: Path, server: ScriptedOpenAIServer) -> None:
    path = write_session(tmp_path / "s", FOUR_ROUNDS)
    server.add(json.dumps(REPLY))
    judge = judge_for(server)
    first = await taxonomy_for(load_session(path), judge)
    assert first is not None and read_taxonomy(path) == first
    second = await taxonomy_for(load_session(path), judge)  # no second call
    assert second == first and len(server.bodies) == 1
    assert await taxonomy_for(load_session(path), None) == first  # no judge needed to read it
    server.add('{"findings": []}')
    forced = await taxonomy_for(load_session(path), judge, force=True)
    assert forced is not None and forced.findings == [] and read_taxonomy(path) == forced


@pytest.mark.parametrize("replies", [
    [Reply(garbage=True)],
    [Reply(status=503)],
    ["no JSON, sorry", '{"findings": [{"code": "C.1", "attribution": "lm", "evid'],
    ['{"findings": {"C.1": true}}', '{"findings": [1, "C.1", null]}'],
    ['{"findings": [{"code": "Z.1", "attribution": "lm"}]}',
     '{"findings": [{"code": "C.1", "attribution": "the model"}]}'],
], ids=["not-json", "http-error", "prose-then-truncated", "wrong-types", "unknown-codes"])
async def test_an_unusable_annotation_is_none_and_not_written(
        tmp_path: Path, server: ScriptedOpenAIServer, replies: list[str | Reply]) -> None:
    path = write_session(tmp_path / "s", FOUR_ROUNDS)
    server.extend(replies)
    assert await taxonomy_for(load_session(path), judge_for(server)) is None
    assert not (path / FAILURES_FILE).exists()
    if len(replies) == 2:
        assert "could not be used" in server.bodies[1]["messages"][-1]["content"]


async def test_hostile_quotes_are_checked_and_stored_as_valid_text(
        tmp_path: Path, server: ScriptedOpenAIServer) -> None:
    from tests.support.trajectories import say

    path = write_session(tmp_path / "s", [("agent", say("Done\u2028<b>now</b>\x00 ok")),
                                          ("user", "FINISH()")])
    server.add(json.dumps({"findings": [{"code": "C.5", "attribution": "lm", "evidence": [
        "done <B>now</b>", "\ud83d lone", "</div>\u2029"]}]}))
    taxonomy = await taxonomy_for(load_session(path), judge_for(server))
    assert taxonomy is not None
    assert [(e.verified, e.seq) for e in taxonomy.findings[0].evidence] == [
        (True, 2), (False, None), (False, None)]
    assert taxonomy.findings[0].evidence[1].quote == "\ufffd lone"  # made valid text
    raw = (path / FAILURES_FILE).read_bytes().decode("utf-8")  # valid UTF-8 on disk
    assert "\ud83d" not in raw and read_taxonomy(path) == taxonomy


def finding(code: str, attribution: str, verified: bool = True) -> TaxonomyFinding:
    return TaxonomyFinding(code=code, category=FAILURE_TYPES[code].category,
                           attribution=attribution,  # type: ignore[arg-type]
                           evidence=[TaxonomyEvidence(quote="q", verified=verified)])


def test_prevalence_by_type_with_the_lm_and_scaffolding_split() -> None:
    taxonomies = [
        FailureTaxonomy(annotator="a", findings=[finding("C.2", "lm"),
                                                 finding("SA.5", "scaffolding")]),
        FailureTaxonomy(annotator="a", findings=[finding("C.2", "scaffolding"),
                                                 finding("C.2", "lm")]),
        FailureTaxonomy(annotator="a", findings=[finding("PL.1", "lm", verified=False)]),
        FailureTaxonomy(annotator="a"),
    ]
    rows = {row["code"]: row for row in type_rows(taxonomies)}
    assert list(rows) == ["C.2", "SA.5", "all"]  # PL.1 is unsupported: not counted
    # C.2 in sessions 1 and 2 of 4: 0.5; by the LM in both (0.5), by the scaffolding in 2.
    assert (rows["C.2"]["prevalence"], rows["C.2"]["lm"], rows["C.2"]["scaffolding"]) == (
        0.5, 0.5, 0.25)
    assert (rows["SA.5"]["prevalence"], rows["SA.5"]["lm"], rows["SA.5"]["scaffolding"]) == (
        0.25, 0.0, 0.25)
    # Any type: sessions 1 and 2; the LM in both, the scaffolding in both (SA.5, C.2).
    assert (rows["all"]["prevalence"], rows["all"]["lm"], rows["all"]["scaffolding"]) == (
        0.5, 0.5, 0.5)
    assert rows["C.2"]["annotated"] == 4 and rows["C.2"]["paper_real"] == 0.29
    assert type_rows([]) == []


def annotator(body: dict[str, Any]) -> str:
    """A report's judges: every message labelled; the annotator finds C.2 (LM) in every
    session, with a quote only the collaborative sessions hold, and EA.3 (scaffolding) where
    the log has a stove."""
    prompt = body["messages"][-1]["content"]
    if "Label each of the" in prompt:
        numbers = sorted({int(n) for n in re.findall(r"\[M(\d+)\]", prompt)})
        return json.dumps({"labels": [{"n": n} for n in numbers]})
    if "these failure types" in prompt:
        findings = [{"code": "C.2", "attribution": "lm", "evidence": ["Shall I add"]}]
        if "stove" in prompt:
            findings.append({"code": "EA.3", "attribution": "scaffolding",
                             "evidence": ['ADD_ITEM(text="stove")']})
        return json.dumps({"findings": findings})
    return '{"errors": []}'


def test_the_report_has_category_and_type_prevalence_by_team(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    write_session(runs / "c1", FOUR_ROUNDS)  # has "Shall I add ..." and a stove
    write_session(runs / "c2", [*FOUR_ROUNDS[:3], ("user", "FINISH()")])  # no "Shall I"
    write_session(runs / "a1", [("agent", 'ADD_ITEM(text="tent")'), ("agent", "FINISH()")],
                  agent_type="autonomous")
    with ScriptedOpenAIServer(responder=annotator) as server:
        judge = make_lm(LMConfig(model="judge-lm", base_url=server.base_url, max_retries=0))
        result = report([runs], judge=judge, effort=False)
        asked = sum("these failure types" in b["messages"][-1]["content"]
                    for b in server.bodies)
    assert asked == 3
    failures = {r["agent_type"]: r for r in result.tables["failures"].to_dict("records")}
    # Collaborative: C.2 supported in c1 only (1/2); EA.3 in c1 and c2 (2/2).
    assert failures["collaborative"]["communication"] == 0.5
    assert failures["collaborative"]["environment_awareness"] == 1.0
    assert failures["autonomous"]["communication"] == 0.0
    types = result.tables["failure_types"]
    collab = {r["code"]: r for r in types[types["agent_type"] == "collaborative"]
              .to_dict("records")}
    assert (collab["C.2"]["prevalence"], collab["C.2"]["lm"], collab["C.2"]["scaffolding"]) == (
        0.5, 0.5, 0.0)
    assert (collab["EA.3"]["prevalence"], collab["EA.3"]["scaffolding"]) == (1.0, 1.0)
    assert (collab["all"]["prevalence"], collab["all"]["lm"]) == (1.0, 0.5)
    assert list(types[types["agent_type"] == "autonomous"]["code"]) == []  # nothing supported
    text = result.to_text()
    assert "Failure types by team" in text and "EA.3" in text
    # The annotations were stored; a second report (even without a judge) asks nothing.
    for name in ("c1", "c2", "a1"):
        assert (runs / name / FAILURES_FILE).is_file()
    again = report([runs], effort=False, audit=False)
    assert again.tables["failure_types"].equals(types)
    assert again.tables["failures"].equals(result.tables["failures"])


def test_eval_audit_can_pay_for_the_annotation_ahead_of_a_report(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from cogym_lab.cli.main import main as cli

    write_session(tmp_path / "c1", FOUR_ROUNDS)
    with ScriptedOpenAIServer(responder=annotator) as server:
        arguments = ["eval", "audit", str(tmp_path), "--failures", "--judge", "judge-lm",
                     "--judge-base-url", server.base_url]
        result = CliRunner().invoke(cli, arguments)
        assert result.exit_code == 0, result.output
        taxonomy = read_taxonomy(tmp_path / "c1")
        assert taxonomy is not None and [f.code for f in taxonomy.findings] == ["C.2", "EA.3"]
        asked = len(server.bodies)  # the review and the annotation
        assert CliRunner().invoke(cli, arguments).exit_code == 0
        assert len(server.bodies) == asked  # both read back
        assert CliRunner().invoke(cli, [*arguments, "--force"]).exit_code == 0
        assert len(server.bodies) == asked + 2  # both asked again
