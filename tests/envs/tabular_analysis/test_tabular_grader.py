"""Tabular Analysis: the DiscoveryBench-Real instances (on the shared data), their hidden strings,
and the hypothesis judge, through our real LM client (over aiohttp) against a loopback
OpenAI-compatible server."""

from __future__ import annotations

import csv
import json

import pytest

from cogym_lab.envs.tabular_analysis.grader import (
    HypothesisGrade,
    JudgeParseError,
    judge_hypothesis,
    parse_judgment,
    variable_f1,
)
from cogym_lab.envs.tabular_analysis.instances import (
    EXPECTED_COUNT,
    EXPECTED_MULTI_TABLE_COUNT,
    HIDDEN_MIN_CHARS,
    HIDDEN_MIN_WORDS,
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



def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


def test_hidden_strings_are_the_gold_and_distinctive_fragments(use_shared_data):
    root = split_dir()
    data_text: dict[str, str] = {}
    for instance in load_instances():  # the 117: the 110 of the paper are among them
        hidden = instance.hidden_strings()
        assert hidden[0] == instance.gold_hypothesis
        assert len(hidden) == len(set(hidden)) > 1
        visible = _squash(instance.query)
        for fragment in hidden[1:]:
            # long enough to be told from an honest sentence, and taken verbatim from what the
            # simulated user knows
            assert len(fragment.split()) >= HIDDEN_MIN_WORDS and len(fragment) >= HIDDEN_MIN_CHARS
            assert fragment in instance.hidden_information()
        files = " ".join(data_text.setdefault(f, _squash((root / f).read_text(errors="replace")))
                         for f in instance.files)
        for text in hidden:  # what the agent honestly sees never holds a hidden string
            assert _squash(text) not in visible
            assert _squash(text) not in files, (instance.key, text)
    first = load_instances()[0]
    assert any("Symbolic capital consists of" in h for h in first.hidden_strings())
    assert "Common Era" not in first.hidden_strings()  # a column description too short to hide


# -- the judge ------------------------------------------------------------------------------------

INSTANCE = TabularInstance(
    index=0, domain="meta_regression_raw", metadata_id=0, query_id=1,
    query="In Experimental Economics, how do original effect estimates compare to replications?",
    files=("meta_regression_raw/a.csv",),
    gold_hypothesis="In Experimental Economics the mean original effect (0.57) exceeds the "
                    "mean replication effect (0.31) on the Fisher-z scale.",
    domain_knowledge="", dataset_descriptions="File a.csv:\n  Description: replication pairs")
FINDINGS = "Original studies in experimental economics report larger effects (z=0.57 vs 0.31)."
A, B, C = "A) very similar", "B) similar but general than HypoA", "C) different"


def _part(context: str, same: list[int] | None = None) -> dict:
    part = {"text": f"holds {context}", "context": context, "variables": ["effect"],
            "relations": "larger"}
    return part if same is None else {**part, "same_context_as_gold": same}


def _reply(gold=("in experimental economics",), generated=(("in experimental economics", [1]),),
           sizes=(2, 2, 2), answer=A) -> str:
    size_a, size_b, shared = sizes
    return json.dumps({
        "gold_sub_hypotheses": [_part(context) for context in gold],
        "generated_sub_hypotheses": [_part(context, same) for context, same in generated],
        "variables": {"sizeA": size_a, "sizeB": size_b, "intersection": shared,
                      "explanation": "both compare original and replication effects"},
        "relation": {"answer": answer, "explanation": "same direction"}})


def _lm(server, **config):
    return make_lm(LMConfig(model="scripted", base_url=server.base_url, max_retries=0,
                            **config))


async def test_judge_prompt_and_full_match(server):
    server.add("```json\n" + _reply() + "\n```\nThat is my verdict.")
    grade = await judge_hypothesis(FINDINGS, INSTANCE, _lm(server, temperature=0))
    assert isinstance(grade, HypothesisGrade)
    assert (grade.recall_context, grade.hms, grade.product.score) == (1.0, 1.0, 1.0)
    assert grade.judgment is not None and grade.judgment.relation == A
    assert grade.to_dict()["recall_context"] == 1.0 and "sub_hypotheses" in grade.raw
    json.dumps(grade.to_dict())
    (body,) = server.bodies
    assert body["temperature"] == 0
    prompt = "\n".join(m["content"] for m in body["messages"])
    for text in (INSTANCE.gold_hypothesis, FINDINGS, INSTANCE.query, "replication pairs"):
        assert text in prompt


@pytest.mark.parametrize(("reply", "recall_context", "hms", "product"), [
    # one context each, matched; 1 of 2 gold variables among 2 reported: F1 0.5; relation B
    (_reply(sizes=(2, 2, 1), answer=B), 1.0, 0.25, 0.25),
    # contexts judged different: nothing is paired
    (_reply(generated=(("for everyone", []),)), 0.0, 0.0, 0.0),
    # identical context texts match even when the judge lists no match
    (_reply(generated=(("in experimental economics", []),)), 1.0, 1.0, 1.0),
    # the relation differs: the context still counts for recall_context
    (_reply(answer=C), 1.0, 0.0, 0.0),
    # two gold contexts, one found: half the recall; the product's context part is 0
    (_reply(gold=("before 2000", "after 2000"), generated=(("since 2000", [2]),)), 0.5, 0.5, 0.0),
    # two generated parts, one paired: the mean runs over both
    (_reply(generated=(("in economics", [1]), ("in psychology", []))), 1.0, 0.5, 1.0),
    # no gold sub-hypotheses: the gold counts as one part of context "None", matched by nothing
    (_reply(gold=()), 0.0, 0.0, 0.0),
    # an intersection above the counts: F1 2.0, so the HMS is 2.0 (the product stays in [0, 1])
    (_reply(sizes=(1, 1, 2)), 1.0, 2.0, 1.0),
    # a relation answer naming no option scores -1, as in DiscoveryBench (no retry)
    (_reply(sizes=(1, 1, 1), answer="They are unrelated."), 1.0, -1.0, 0.0),
    # both variable counts 0: DiscoveryBench's F1 is 0; cogym_lab's is 1
    (_reply(sizes=(0, 0, 0)), 1.0, 0.0, 1.0),
])
async def test_judgments_score_as_discoverybench_does(server, reply, recall_context, hms,
                                                      product):
    server.add(reply)
    grade = await judge_hypothesis(FINDINGS, INSTANCE, _lm(server))
    assert (grade.recall_context, grade.hms, grade.product.score) \
        == pytest.approx((recall_context, hms, product))
    assert len(server.bodies) == 1


def test_the_earlier_reply_shape_is_read_as_one_part_each():
    earlier = json.dumps({"context": {"match": True, "reason": "same data"},
                          "variables": {"gold": ["a", "b"], "findings": ["a", "b"],
                                        "matched": ["a", "b"]},
                          "relation": {"rating": "partial", "reason": "direction only"}})
    judgment = parse_judgment("Verdict: " + earlier, INSTANCE.gold_hypothesis, FINDINGS)
    score = judgment.score()
    assert (score.recall_context, score.final_score) == (1.0, 0.5)
    assert variable_f1(0, 0, 0) == 1.0 and variable_f1(2, 0, 0) == 0.0
    assert variable_f1(2, 3, 5) == pytest.approx(0.8)  # the shared count is bounded
    with pytest.raises(ValueError, match="rating"):
        parse_judgment(earlier.replace("partial", "maybe"), INSTANCE.gold_hypothesis, FINDINGS)


@pytest.mark.parametrize(("reply", "problem"), [
    (_reply(generated=(("in economics", [3]),)), "from 1 to 1"),
    (_reply().replace('"sizeB": 2', '"sizeB": "two"'), "sizeB must be a number"),
    (json.dumps({"gold_sub_hypotheses": []}), "lacks one of the keys"),
])
def test_unusable_replies_say_what_is_wrong(reply, problem):
    with pytest.raises(ValueError, match=problem):
        parse_judgment(reply, INSTANCE.gold_hypothesis, FINDINGS)


async def test_retry_after_a_bad_reply_then_success(server):
    server.add("I think the findings broadly agree.")
    server.add(_reply(answer=B))
    grade = await judge_hypothesis(FINDINGS, INSTANCE, _lm(server))
    assert grade.hms == 0.5 and grade.details["attempts"] == 2
    first, second = server.bodies
    assert len(second["messages"]) == len(first["messages"]) + 2
    assert second["messages"][-2] == {"role": "assistant",
                                      "content": "I think the findings broadly agree."}
    assert "JSON" in second["messages"][-1]["content"]
    assert "no JSON object" in second["messages"][-1]["content"]


async def test_two_bad_replies_fail_loudly(server):
    server.add("not json")
    server.add('{"relation": {"answer": "A"}}')
    with pytest.raises(JudgeParseError, match="two attempts") as info:
        await judge_hypothesis(FINDINGS, INSTANCE, _lm(server))
    assert info.value.replies == ["not json", '{"relation": {"answer": "A"}}']
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
    assert (grade.recall_context, grade.hms, grade.product.score) == (0.0, 0.0, 0.0)
    assert grade.raw == "" and grade.judgment is None
    assert server.bodies == []


async def test_judge_on_a_real_instance_sees_the_dataset_and_column_descriptions(
        use_shared_data):
    instance = load_instances(multi_table_only=True)[0]
    metadata = json.loads((split_dir() / instance.domain
                           / f"metadata_{instance.metadata_id}.json").read_text())
    with ScriptedOpenAIServer([_reply(answer=B)]) as server:
        grade = await judge_hypothesis("Axes dominate around 3000 BCE.", instance, _lm(server))
        prompt = server.bodies[0]["messages"][-1]["content"]
    assert (grade.recall_context, grade.hms) == (1.0, 0.5)
    assert instance.gold_hypothesis in prompt and instance.query in prompt
    shown = json.loads(prompt.split("<datasets>", 1)[1].split("</datasets>", 1)[0])
    # the datasets as DiscoveryBench's judge sees them: descriptions and columns, nothing else
    assert shown == [{"dataset_description": d["description"].strip(),
                      "columns": [{"name": c["name"], "description": c["description"]}
                                  for c in d["columns"]["raw"]]}
                     for d in metadata["datasets"]]
    assert "Calibrated years Before Present (1950 AD)" in prompt  # a column description
    assert instance.domain_knowledge[:60] not in prompt  # the judge does not get the knowledge
    for other in load_instances():
        metadata = json.loads((split_dir() / other.domain
                               / f"metadata_{other.metadata_id}.json").read_text())
        assert json.loads(other.datasets_for_judge()) == [
            {"dataset_description": d["description"].strip(),
             "columns": [{"name": c["name"].strip(), "description": c["description"].strip()}
                         for c in d["columns"]["raw"]]} for d in metadata["datasets"]]
