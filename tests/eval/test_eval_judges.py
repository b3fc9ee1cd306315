"""The LM judges, through our real LM client (over aiohttp) against the scripted loopback
OpenAI-compatible server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from cogym_lab.eval import load_session
from cogym_lab.eval.judging.judges import Judge, extract_json, make_judge
from cogym_lab.eval.metrics.autonomy import controlled_autonomy
from cogym_lab.eval.metrics.initiative import initiative_counts, initiative_entropy
from cogym_lab.eval.metrics.rounds import split_rounds
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.lm.config import ENV_BASE_URL
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.support.trajectories import FOUR_ROUNDS, add, say, write_session

pytestmark = pytest.mark.usefixtures("no_ambient_lm")


def judge_for(server: ScriptedOpenAIServer) -> Judge:
    return Judge(make_lm(LMConfig(model="judge-lm", base_url=server.base_url, max_retries=0,
                                  timeout=30)))


def numbered(body: dict[str, Any]) -> list[tuple[int, str]]:
    """(number, sender role) of every [Mn] line in the judge's prompt."""
    return [(int(n), role) for n, role in
            re.findall(r"^\[M(\d+)\] (\w+) \(", body["messages"][-1]["content"], re.M)]


def label_by_sender(initiative_of: dict[str, set[int]]) -> Any:
    """A message judge that marks initiative for the listed message numbers of each sender."""
    def respond(body: dict[str, Any]) -> str:
        labels = [{"n": n, "initiative": n in initiative_of.get(role, set()),
                   "kind": "task" if n in initiative_of.get(role, set()) else "none",
                   "confirmation": False, "halt": False} for n, role in numbered(body)]
        return "Here are the labels:\n```json\n" + json.dumps({"labels": labels}) + "\n```"
    return respond


def chat(tmp_path: Path, senders: list[str]) -> Path:
    steps = [(sender, say(f"message {i} from {sender}")) for i, sender in enumerate(senders, 1)]
    return write_session(tmp_path / "chat", steps + [("user", "FINISH()")])


async def test_message_labels_give_the_papers_h_init_examples(tmp_path: Path,
                                                              server: ScriptedOpenAIServer
                                                              ) -> None:
    # Eleven messages, all taking initiative: 5 by the agent, 6 by the user -> H_init 0.994.
    senders = ["user", "agent"] * 5 + ["user"]
    record = load_session(chat(tmp_path / "a", senders))
    server.responder = label_by_sender({"agent": set(range(1, 12)), "user": set(range(1, 12))})
    labels = await judge_for(server).label_messages(record, "Pack for a camping trip.")
    assert labels is not None and [label.n for label in labels] == list(range(1, 12))
    counts = initiative_counts([m.sender for m in record.messages],
                               [label.initiative for label in labels])
    assert counts == {"agent": 5, "user": 6}
    assert initiative_entropy(counts, record.roles) == pytest.approx(0.994, abs=5e-4)
    prompt = server.bodies[0]["messages"][-1]["content"]
    assert "Pack for a camping trip." in prompt and "[M11] user (user) says: message 11" in prompt
    assert server.bodies[0]["model"] == "judge-lm"


async def test_initiative_taken_only_by_some_messages(tmp_path: Path,
                                                      server: ScriptedOpenAIServer) -> None:
    # Four messages: the agent takes initiative once (M1), the user three times (M2-M4) -> 0.811
    record = load_session(chat(tmp_path, ["agent", "user", "user", "user", "agent"]))
    server.responder = label_by_sender({"agent": {1}, "user": {2, 3, 4}})
    labels = await judge_for(server).label_messages(record)
    counts = initiative_counts([m.sender for m in record.messages],
                               [label.initiative for label in labels or []])
    assert initiative_entropy(counts, record.roles) == pytest.approx(0.811, abs=5e-4)
    # When only the user takes initiative, the agent's share is zero and so is H_init.
    server.responder = label_by_sender({"user": {2, 3, 4}})
    labels = await judge_for(server).label_messages(record)
    counts = initiative_counts([m.sender for m in record.messages],
                               [label.initiative for label in labels or []])
    assert initiative_entropy(counts, record.roles) == 0.0


async def test_an_unusable_reply_gets_one_retry(tmp_path: Path,
                                                server: ScriptedOpenAIServer) -> None:
    record = load_session(chat(tmp_path, ["agent", "user"]))
    server.add("I think both messages show initiative.")  # no JSON
    server.add('{"labels": [{"n": 1, "initiative": true, "kind": "dialogue"}]}')  # one missing
    server.add('{"labels": [{"n": 1, "initiative": true, "kind": "dialogue"}, '
               '{"n": 2, "halt": true}]}')
    judge = judge_for(server)
    assert await judge.label_messages(record) is None  # bad, then incomplete: given up
    labels = await judge.label_messages(record)
    assert labels is not None and labels[0].kind == "dialogue" and labels[1].halt
    retry = server.bodies[1]["messages"]
    assert retry[-2]["role"] == "assistant" and "could not be used" in retry[-1]["content"]
    assert "no JSON object" in retry[-1]["content"]
    assert len(server.bodies[2]["messages"]) == 2  # the next call starts afresh
    # Labels feed controlled autonomy: the user's message halts the agent.
    assert controlled_autonomy(record, labels).halts == 1


async def test_a_failing_lm_costs_only_the_judgement(tmp_path: Path,
                                                     server: ScriptedOpenAIServer) -> None:
    record = load_session(chat(tmp_path, ["agent"]))
    server.add(Reply(status=400, error="bad request"))
    assert await judge_for(server).label_messages(record) is None
    assert await judge_for(server).label_messages(load_session(
        write_session(tmp_path / "quiet", [("agent", add("tent"))]))) == []  # nothing to ask


async def test_pairwise_judge_undoes_its_presentation_order(server: ScriptedOpenAIServer
                                                            ) -> None:
    # The judge prefers whichever outcome lists a rain jacket, wherever it is shown.
    def prefer_rain_jacket(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        first = prompt.split("<outcome_A>")[1].split("</outcome_A>")[0]
        return json.dumps({"winner": "A" if "rain jacket" in first else "B", "reason": "rain"})

    server.responder = prefer_rain_jacket
    judge = judge_for(server)
    verdicts = [await judge.compare("Pack.", ["tent", "rain jacket"], ["tent"], key=f"i{i}")
                for i in range(8)]
    assert verdicts == ["A"] * 8
    shown_first = [b["messages"][-1]["content"].split("<outcome_A>")[1][:40]
                   for b in server.bodies]
    assert any("rain jacket" in s for s in shown_first)  # both orders were used
    assert any("rain jacket" not in s for s in shown_first)
    server.responder = lambda body: '{"winner": "tie"}'
    assert await judge.compare("Pack.", "x", "y", key="i0") == "tie"


async def test_progress_ratings_per_round(tmp_path: Path, server: ScriptedOpenAIServer) -> None:
    record = load_session(write_session(tmp_path / "s", FOUR_ROUNDS))
    rounds = split_rounds(record)
    server.add('{"ratings": [{"round": 1, "rating": 2}, {"round": 2, "rating": 2}, '
               '{"round": 3, "rating": 4}, {"round": 4, "rating": 5}]}')
    ratings = await judge_for(server).rate_progress(record, rounds, ["a", "b", "c", "d"],
                                                    "Pack.")
    assert ratings == [2, 2, 4, 5]
    prompt = server.bodies[0]["messages"][-1]["content"]
    assert "## Round 4" in prompt and 'ADD_ITEM(text="rain jacket")' in prompt
    assert "Outcome at the end of the round:\nd" in prompt
    server.add('{"ratings": [{"round": 1, "rating": 9}]}')  # out of range, then still short
    server.add('{"ratings": [{"round": 1, "rating": 3}]}')
    assert await judge_for(server).rate_progress(record, rounds) is None


async def test_failure_annotation_with_evidence(tmp_path: Path,
                                                server: ScriptedOpenAIServer) -> None:
    record = load_session(write_session(tmp_path / "s", FOUR_ROUNDS))
    server.add(json.dumps({
        "communication": {"present": True, "evidence": ["Shall I add anything else?"]},
        "situational_awareness": {"present": False, "evidence": []},
        "planning": {"present": True, "evidence": ["Done: headlamp added."]},
        "environment_awareness": {"present": False, "evidence": []},
        "personalisation": {"present": False, "evidence": []}}))
    annotation = await judge_for(server).annotate_failures(record, "Pack.")
    assert annotation is not None
    assert annotation.present() == {"communication": True, "situational_awareness": False,
                                    "planning": True, "environment_awareness": False,
                                    "personalisation": False}
    prompt = server.bodies[0]["messages"][-1]["content"]
    assert "Final outcome:" in prompt and "rain jacket" in prompt


def test_make_judge_from_a_model_name(monkeypatch: pytest.MonkeyPatch,
                                      server: ScriptedOpenAIServer) -> None:
    monkeypatch.setenv(ENV_BASE_URL, server.base_url)
    judge = make_judge("judge-model")
    assert judge is not None and judge.name == "judge-model"
    assert judge.lm.config.temperature == 0.0 and judge.lm.config.base_url == server.base_url
    assert make_judge(None) is None and make_judge(judge) is judge
    assert extract_json('prose {"a": [1, {"b": 2}]} more') == {"a": [1, {"b": 2}]}
    with pytest.raises(ValueError):
        extract_json("no json here")
