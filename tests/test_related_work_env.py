"""The Related Work env: private search, the shared library and its citation numbers, drafting
through the LM as deferred work, the judge, and a scripted session through `cogym-lab run`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.core import Coordinator, EventType, Member
from cogym_lab.envs import make_env
from cogym_lab.envs.related_work import RelatedWorkEnv
from cogym_lab.envs.related_work.search import BM25PaperIndex
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.related_scripts import RelatedWorkRolePlay

pytestmark = pytest.mark.usefixtures("use_shared_data", "no_ambient_lm")
SLICE = 3000  # papers in the test index
TEAM = [Member(role="agent"), Member(role="user", kind="user")]


@pytest.fixture(scope="module")
def index_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("paper-index")


@pytest.fixture
def index(index_cache, use_shared_data):
    return BM25PaperIndex.load_or_build(cache_dir=index_cache, limit=SLICE, progress=False)


def started(env):
    coordinator = Coordinator(env, TEAM, session_id="rw")
    start = {n.recipient: n for n in coordinator.start(0.0).notifications}
    return coordinator, start


def first_hit_ids(coordinator, role, query, n=3):
    result = coordinator.handle(role, f'SEARCH_PAPER(query="{query}")', 1.0)
    assert [x.recipient for x in result.notifications] == [role]  # a private search
    return [row["id"] for row in result.notifications[0].view["search"].content[:n]]


def test_all_tasks_load_and_only_the_user_gets_the_requirements(index):
    assert len(RelatedWorkEnv.instances()) == 100
    env = RelatedWorkEnv(instance=0, search=index)
    _, start = started(env)
    context = start["agent"].context
    assert env.task.title in context.task_description
    assert env.hidden_information() and env.task.requirements[0] in env.hidden_information()
    for requirement in env.task.requirements:
        assert requirement not in json.dumps(start["agent"].model_dump(mode="json"))


def test_library_numbers_survive_add_and_drop_and_dangling_citations_are_flagged(index):
    env = RelatedWorkEnv(instance=0, search=index)
    coordinator, _ = started(env)
    ids = first_hit_ids(coordinator, "agent", "neural network training", n=3)
    unseen = coordinator.handle("agent", 'LIBRARY_ADD_PAPER(ids="not-a-real-id")', 2.0)
    assert unseen.events[0].status == "error" and "search result" in unseen.events[0].error
    added = coordinator.handle("agent", f'LIBRARY_ADD_PAPER(ids="{ids[0]}, {ids[1]}")', 3.0)
    assert sorted(n.recipient for n in added.notifications) == ["agent", "user"]  # shared
    coordinator.handle("agent", f'LIBRARY_ADD_PAPER(ids="{ids[2]}")', 4.0)
    coordinator.handle("user", f'LIBRARY_DROP_PAPER(id="{ids[1]}")', 5.0)
    coordinator.handle("user", f'LIBRARY_NOTE(id="{ids[2]}", note="the key baseline")', 6.0)
    library = {e["id"]: e for e in env.library.to_content()}
    assert {library[ids[0]]["number"], library[ids[2]]["number"]} == {1, 3}  # 2 is not reused
    assert library[ids[2]]["note"] == "the key baseline"
    coordinator.handle("agent", f'LIBRARY_ADD_PAPER(ids="{ids[1]}")', 7.0)
    assert env.library.entries[ids[1]].number == 4
    wrote = coordinator.handle("user", 'EDITOR_UPDATE(text="### A\\nSee [1], [3] and [2].")', 8.0)
    check = wrote.notifications[0].view["draft_check"].content
    assert check["citations_outside_library"] == [2]
    assert check["unique_citations"] == 3 and check["subsections"] == 1


async def test_drafting_from_the_library_lands_in_the_editor(index):
    with ScriptedOpenAIServer() as server:
        play = RelatedWorkRolePlay("graph")
        server.responder = play
        drafter = make_lm(LMConfig(model="draft-lm", base_url=server.base_url))
        env = RelatedWorkEnv(instance=0, search=index, drafting_lm=drafter)
        coordinator, _ = started(env)
        empty = coordinator.handle("agent", 'LIBRARY_TO_DRAFT(instructions="go")', 1.5)
        assert empty.events[0].status == "error" and "library is empty" in empty.events[0].error
        ids = first_hit_ids(coordinator, "agent", "learning", n=2)
        coordinator.handle("agent", f'LIBRARY_ADD_PAPER(ids="{ids[0]}, {ids[1]}")', 2.0)
        asked = coordinator.handle("agent", 'LIBRARY_TO_DRAFT(instructions="be brief")', 3.0)
        (role, deferred), = asked.deferred
        assert role == "agent" and asked.events[0].info["deferred"] == "Drafting"
        follow_up = await deferred.work()
        landed = coordinator.handle(role, follow_up, 4.0)
        prompt = json.dumps(server.bodies[-1]["messages"])
    assert landed.events[0].action.startswith("EDITOR_UPDATE(")
    assert "[1]" in env.text and "### Foundations" in env.text
    assert env.library.entries[ids[0]].paper.title in prompt and "be brief" in prompt


async def test_the_judge_scores_the_section(index):
    with ScriptedOpenAIServer(responder=RelatedWorkRolePlay("x")) as server:
        judge = make_lm(LMConfig(model="judge-lm", base_url=server.base_url))
        env = RelatedWorkEnv(instance=0, search=index, judge_lm=judge)
        env.reset()
        env.step("user", 'EDITOR_UPDATE(text="### One\\nText [1].")')
        scores = await env.aevaluate()
        sent = server.bodies[-1]
    assert scores["rubric_score"] == 4 and scores["performance"] == 0.75
    assert sent["temperature"] == 0 and "### One" in json.dumps(sent["messages"])


def test_a_scripted_session_runs_end_to_end_through_the_command_line(
        index, index_cache, tmp_path, monkeypatch):
    env = make_env("related_work", instance=0)
    play = RelatedWorkRolePlay(env.task.topic)
    with ScriptedOpenAIServer(responder=play) as server:
        monkeypatch.setenv("COGYM_MODEL", "tool-lm")  # the drafting assistant and the judge
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        result = CliRunner().invoke(main, [
            "run", "--task", "related_work", "--instance", "0", "--team", "collaborative",
            "--env-arg", f"index_limit={SLICE}", "--env-arg", f"index_cache={index_cache}",
            "--model", "agent=agent-lm", "--model", "user=user-lm",
            "--out", str(tmp_path), "--idle-seconds", "2"])
    assert result.exit_code == 0, result.output
    assert "ended: finished" in result.output and "Delivered: True" in result.output
    (session,) = tmp_path.iterdir()
    meta = json.loads((session / "session.json").read_text())
    assert meta["scores"]["performance"] == 0.75 and play.drafts == 1 and play.judged == 1
    events = [json.loads(line) for line in (session / "events.jsonl").read_text().splitlines()]
    actions = [e.get("action", "") for e in events if e.get("actor") == "agent"]
    assert any(a.startswith("LIBRARY_TO_DRAFT(") for a in actions)
    assert any(a.startswith("EDITOR_UPDATE(") for a in actions)  # the draft, as the agent's step
    assert not [e for e in events if e["type"] == EventType.ERROR.value]


def test_drafting_without_an_lm_says_what_to_set(index):
    env = RelatedWorkEnv(instance=0, search=index)  # no drafting LM, none in the environment
    coordinator, _ = started(env)
    ids = first_hit_ids(coordinator, "agent", "learning", n=1)
    coordinator.handle("agent", f'LIBRARY_ADD_PAPER(ids="{ids[0]}")', 2.0)
    refused = coordinator.handle("agent", 'LIBRARY_TO_DRAFT(instructions="go")', 3.0)
    assert refused.events[0].status == "error" and "COGYM_MODEL" in refused.events[0].error
    assert not refused.deferred and env.text == ""
