"""Tabular Analysis: the DiscoveryBench-Real instances (on the shared data) and the hypothesis
judge, through the real openai client against a loopback server."""

from __future__ import annotations

import csv
import json

import pytest

from cogym_lab.envs.tabular_analysis.grader import (
    HypothesisGrade,
    JudgeParseError,
    judge_hypothesis,
    parse_judgement,
    variable_f1,
)
from cogym_lab.envs.tabular_analysis.instances import (
    EXPECTED_COUNT,
    EXPECTED_MULTI_TABLE_COUNT,
    TabularInstance,
    copy_files,
    load_instances,
    split_dir,
)
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.testing import ScriptedOpenAIServer

# -- instances ------------------------------------------------------------------------------------


def test_selection_count_and_rule(use_shared_data):
    instances = load_instances()
    assert len(instances) == EXPECTED_COUNT == 117
    assert len(load_instances(multi_table_only=True)) == EXPECTED_MULTI_TABLE_COUNT == 110
    assert [i.index for i in instances] == list(range(len(instances)))
    assert len({i.key for i in instances}) == len(instances)
    for instance in instances:
        assert instance.domain.endswith("_raw") or len(instance.files) > 1
    domains = {i.domain for i in instances}
    assert domains == {"archaeology", "introduction_pathways_non-native_plants",
                       "meta_regression_raw", "nls_raw", "worldbank_education_gdp_indicators"}
    # deterministic and cached
    assert load_instances() == instances
    assert load_instances(use_shared_data) == instances


def test_every_instance_has_query_gold_and_readable_data(use_shared_data):
    root = split_dir()
    with (root / "answer_key_real.csv").open(newline="", encoding="utf-8") as handle:
        gold = {(r["dataset"], int(r["metadataid"]), int(r["query_id"])): r["gold_hypo"].strip()
                for r in csv.DictReader(handle)}
    for instance in load_instances():
        assert instance.query.strip()
        assert instance.gold_hypothesis.strip()
        assert gold[(instance.domain, instance.metadata_id, instance.query_id)] \
            == instance.gold_hypothesis
        csvs = [root / f for f in instance.files if f.endswith(".csv")]
        assert csvs, instance.key
        for path in csvs:
            assert path.is_file(), path
            with path.open(newline="", encoding="utf-8", errors="replace") as handle:
                header = next(csv.reader(handle))
            assert header, path
        metadata = json.loads((root / instance.domain
                               / f"metadata_{instance.metadata_id}.json").read_text())
        queries = {q["qid"]: q["question"] for group in metadata["queries"] for q in group}
        assert queries[instance.query_id].strip() == instance.query


def test_hidden_information(use_shared_data):
    root = split_dir()
    for instance in load_instances():
        metadata = json.loads((root / instance.domain
                               / f"metadata_{instance.metadata_id}.json").read_text())
        hidden = instance.hidden_information()
        assert hidden.strip()
        if (metadata.get("domain_knowledge") or "").strip():
            assert metadata["domain_knowledge"].strip() in hidden
        for dataset in metadata["datasets"]:
            if (dataset.get("description") or "").strip():
                assert dataset["description"].strip() in hidden
            for column in dataset["columns"]["raw"]:
                if (column.get("description") or "").strip():
                    assert column["description"].strip() in hidden
        # the hidden information never leaks the answer into the agent's side by accident
        assert instance.gold_hypothesis not in instance.query


def test_copy_files_into_a_workdir(use_shared_data, tmp_path):
    instance = next(i for i in load_instances() if i.domain == "meta_regression_raw")
    copies = copy_files(instance, tmp_path / "work")
    assert [p.name for p in copies] == list(instance.file_names)
    for path in copies:
        assert path.parent == tmp_path / "work"
        with path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))
        assert len(rows) > 1 and rows[0]
    # copying again reuses the same names (identical files)
    assert copy_files(instance, tmp_path / "work") == copies


def test_copy_files_resolves_name_clashes(use_shared_data, tmp_path):
    base = next(i for i in load_instances() if i.domain == "worldbank_education_gdp_indicators")
    clash = TabularInstance(**{**base.__dict__, "files": (base.files[0],
                                                          "nls_raw/nls_raw.csv")})
    (tmp_path / "nls_raw.csv").write_text("other,content\n1,2\n")
    copies = copy_files(clash, tmp_path)
    assert [p.name for p in copies] == [base.file_names[0], "nls_raw_2.csv"]
    assert (tmp_path / "nls_raw.csv").read_text() == "other,content\n1,2\n"
    assert copies[1].stat().st_size == (split_dir() / "nls_raw" / "nls_raw.csv").stat().st_size


# -- the judge ------------------------------------------------------------------------------------

INSTANCE = TabularInstance(
    index=0, domain="meta_regression_raw", metadata_id=0, query_id=1,
    query="In Experimental Economics, how do original effect estimates compare to replications?",
    files=("meta_regression_raw/a.csv",),
    gold_hypothesis="In Experimental Economics the mean original effect (0.57) exceeds the "
                    "mean replication effect (0.31) on the Fisher-z scale.",
    domain_knowledge="", dataset_descriptions="")
FINDINGS = "Original studies in experimental economics report larger effects (z=0.57 vs 0.31)."


def _reply(match=True, gold=("original effect", "replication effect"),
           found=("original effect", "replication effect"), matched=None, rating="exact"):
    return json.dumps({
        "context": {"match": match, "reason": "same field"},
        "variables": {"gold": list(gold), "findings": list(found),
                      "matched": list(gold if matched is None else matched)},
        "relation": {"rating": rating, "reason": "same direction"},
        "reasoning": "verdict"})


def _lm(server, **config):
    return make_lm(LMConfig(model="scripted", base_url=server.base_url, max_retries=0,
                            **config))


async def test_judge_prompt_and_full_match(server):
    server.add("```json\n" + _reply() + "\n```\nThat is my verdict.")
    grade = await judge_hypothesis(FINDINGS, INSTANCE, _lm(server, temperature=0))
    assert isinstance(grade, HypothesisGrade)
    assert (grade.score, grade.context, grade.variables, grade.relation) == (1.0, 1.0, 1.0, 1.0)
    assert grade.reasoning == "verdict"
    assert grade.to_dict()["score"] == 1.0 and "context" in grade.raw
    (body,) = server.bodies
    assert body["temperature"] == 0
    prompt = "\n".join(m["content"] for m in body["messages"])
    assert INSTANCE.gold_hypothesis in prompt
    assert FINDINGS in prompt
    assert INSTANCE.query in prompt


@pytest.mark.parametrize(("reply", "expected"), [
    (_reply(match=False), (0.0, 0.0, 1.0, 1.0)),
    (_reply(rating="partial"), (0.5, 1.0, 1.0, 0.5)),
    (_reply(rating="none"), (0.0, 1.0, 1.0, 0.0)),
    # 1 of 2 gold variables found among 2 reported: F1 = 2*1/(2+2) = 0.5
    (_reply(found=("original effect", "sample size"), matched=("original effect",),
            rating="partial"), (0.25, 1.0, 0.5, 0.5)),
    # 2 gold, 3 reported, 2 matched: F1 = 4/5
    (_reply(found=("a", "b", "c")), (0.8, 1.0, 0.8, 1.0)),
])
async def test_scores_combine_as_documented(server, reply, expected):
    server.add(reply)
    grade = await judge_hypothesis(FINDINGS, INSTANCE, _lm(server))
    assert (grade.score, grade.context, grade.variables, grade.relation) \
        == pytest.approx(expected)


def test_parser_tolerates_prose_and_numeric_ratings():
    text = "Here you go: " + _reply(rating="partial").replace('"partial"', "0.5") + " Thanks!"
    grade = parse_judgement(text)
    assert grade.relation == 0.5 and grade.score == 0.5
    assert variable_f1([], [], []) == 1.0 and variable_f1(["x"], [], []) == 0.0
    with pytest.raises(ValueError, match="rating"):
        parse_judgement(_reply(rating="maybe"))


async def test_retry_after_a_bad_reply_then_success(server):
    server.add("I think the findings broadly agree.")
    server.add(_reply(rating="partial"))
    grade = await judge_hypothesis(FINDINGS, INSTANCE, _lm(server))
    assert grade.score == 0.5 and grade.details["attempts"] == 2
    first, second = server.bodies
    assert len(second["messages"]) == len(first["messages"]) + 2
    assert second["messages"][-2] == {"role": "assistant",
                                      "content": "I think the findings broadly agree."}
    assert "JSON" in second["messages"][-1]["content"]
    assert "no JSON object" in second["messages"][-1]["content"]


async def test_two_bad_replies_fail_loudly(server):
    server.add("not json")
    server.add('{"context": {"match": true}}')
    with pytest.raises(JudgeParseError, match="two attempts") as info:
        await judge_hypothesis(FINDINGS, INSTANCE, _lm(server))
    assert info.value.replies == ["not json", '{"context": {"match": true}}']
    assert len(server.bodies) == 2


async def test_nonzero_temperature_is_refused(server):
    with pytest.raises(ValueError, match="temperature 0"):
        await judge_hypothesis(FINDINGS, INSTANCE, _lm(server, temperature=0.7))
    with pytest.raises(ValueError, match="temperature 0"):
        await judge_hypothesis(FINDINGS, INSTANCE,
                               _lm(server, extra={"temperature": 1.0}))
    assert server.bodies == []


@pytest.mark.parametrize("findings", ["", "   \n"])
async def test_empty_findings_score_zero_without_a_request(server, findings):
    grade = await judge_hypothesis(findings, INSTANCE, _lm(server))
    assert grade.score == 0.0 and grade.raw == ""
    assert server.bodies == []


async def test_judge_on_a_real_instance(use_shared_data):
    instance = load_instances()[0]
    with ScriptedOpenAIServer([_reply()]) as server:
        grade = await judge_hypothesis("Axes dominate around 3000 BCE.", instance, _lm(server))
        assert grade.score == 1.0
        assert instance.gold_hypothesis in server.bodies[0]["messages"][-1]["content"]
