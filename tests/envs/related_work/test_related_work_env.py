"""The Related Work env: private search, the shared library and its citation numbers, drafting
through the LM as deferred work, the judge and the scoring protocols, the flagging of required
papers the offline search cannot find, hidden strings, and a scripted session through
`cogym-lab run`."""

from __future__ import annotations

import gzip
import json
import shutil
import socket

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import EventType, TeamMember
from cogym_lab.envs import make_env
from cogym_lab.envs.related_work import RelatedWorkEnv
from cogym_lab.envs.related_work.corpus import BASE_FILE, SUPPLEMENT_FILE
from cogym_lab.envs.related_work.instances import (
    HIDDEN_STRING_MIN_WORDS,
    UNFINDABLE_NOTE,
    load_tasks,
)
from cogym_lab.envs.related_work.search import ArxivLiveSearch, BM25PaperIndex
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.notified import notified
from tests.support.related_scripts import RelatedWorkRolePlay, judge_replies

pytestmark = pytest.mark.usefixtures("use_shared_data", "no_ambient_lm")
SLICE = 3000  # papers in the test index
TEAM = [TeamMember(role="agent"), TeamMember(role="user", kind="user")]


@pytest.fixture(scope="module")
def index_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("paper-index")


@pytest.fixture
def index(index_cache, use_shared_data):
    return BM25PaperIndex.load_or_build(cache_dir=index_cache, limit=SLICE, progress=False)


def started(env):
    coordinator = Coordinator(env, TEAM, session_id="rw")
    start = {n.recipient: n for n in notified(coordinator, coordinator.start(0.0))}
    return coordinator, start


def first_hit_ids(coordinator, role, query, n=3):
    result = coordinator.handle(role, f'SEARCH_PAPER(query="{query}")', 1.0)
    assert [x.recipient for x in notified(coordinator, result)] == [role]  # a private search
    return [row["id"] for row in notified(coordinator, result)[0].view["search"].content[:n]]


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
    assert sorted(n.recipient for n in notified(coordinator, added)) == ["agent", "user"]  # shared
    coordinator.handle("agent", f'LIBRARY_ADD_PAPER(ids="{ids[2]}")', 4.0)
    coordinator.handle("user", f'LIBRARY_DROP_PAPER(id="{ids[1]}")', 5.0)
    coordinator.handle("user", f'LIBRARY_NOTE(id="{ids[2]}", note="the key baseline")', 6.0)
    library = {e["id"]: e for e in env.library.to_content()}
    assert {library[ids[0]]["number"], library[ids[2]]["number"]} == {1, 3}  # 2 is not reused
    assert library[ids[2]]["note"] == "the key baseline"
    coordinator.handle("agent", f'LIBRARY_ADD_PAPER(ids="{ids[1]}")', 7.0)
    assert env.library.entries[ids[1]].number == 4
    wrote = coordinator.handle("user", 'EDITOR_UPDATE(text="### A\\nSee [1], [3] and [2].")', 8.0)
    check = notified(coordinator, wrote)[0].view["draft_check"].content
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
    assert env.protocol == "cogym" and not env.delivered()  # nothing in the library
    assert scores["rubric_score"] == 4 and scores["performance"] == 0.0
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
    assert meta["env_args"]["protocol"] == "cogym"  # the default: the release's s / 5
    assert meta["scores"]["performance"] == 0.8 and meta["scores"]["rubric_score"] == 4
    assert play.drafts == 1 and play.judged == 1
    events = [json.loads(line) for line in (session / "events.jsonl").read_text().splitlines()]
    actions = [e.get("action", "") for e in events if e.get("actor") == "agent"]
    assert any(a.startswith("LIBRARY_TO_DRAFT(") for a in actions)
    assert any(a.startswith("EDITOR_UPDATE(") for a in actions)  # the draft, as the agent's step
    assert not [e for e in events if e["type"] == EventType.ERROR.value]


def test_a_session_configured_by_flags_alone_drafts_and_is_judged(tmp_path, index_cache):
    """No LM in the environment: --model and --base-url reach the members and the task's own
    drafting assistant and judge alike."""
    env = make_env("related_work", instance=0)
    play = RelatedWorkRolePlay(env.task.topic)
    with ScriptedOpenAIServer(responder=play) as server:
        result = CliRunner().invoke(main, [
            "run", "--task", "related_work", "--instance", "0", "--team", "collaborative",
            "--env-arg", f"index_limit={SLICE}", "--env-arg", f"index_cache={index_cache}",
            "--model", "flag-lm", "--base-url", server.base_url,
            "--out", str(tmp_path), "--idle-seconds", "2"])
        models = {body["messages"][0]["content"].split(" ", 3)[2]: body["model"]
                  for body in server.bodies}
    assert result.exit_code == 0, result.output
    assert "Delivered: True" in result.output and play.drafts == 1 and play.judged == 1
    assert set(models.values()) == {"flag-lm"}  # members, drafting and judging alike
    (session,) = tmp_path.iterdir()
    assert json.loads((session / "session.json").read_text())["scores"]["rubric_score"] == 4


def test_drafting_without_an_lm_says_what_to_set(index):
    env = RelatedWorkEnv(instance=0, search=index)  # no drafting LM, none in the environment
    coordinator, _ = started(env)
    ids = first_hit_ids(coordinator, "agent", "learning", n=1)
    coordinator.handle("agent", f'LIBRARY_ADD_PAPER(ids="{ids[0]}")', 2.0)
    refused = coordinator.handle("agent", 'LIBRARY_TO_DRAFT(instructions="go")', 3.0)
    assert refused.events[0].status == "error" and "COGYM_MODEL" in refused.events[0].error
    assert not refused.deferred and env.text == ""


# --- scoring by protocol ---------------------------------------------------------------------

def _with_a_paper(env, coordinator) -> None:
    ids = first_hit_ids(coordinator, "agent", "learning", n=1)
    coordinator.handle("agent", f'LIBRARY_ADD_PAPER(ids="{ids[0]}")', 2.0)


@pytest.mark.parametrize(("protocol", "score", "performance"),
                         [("cogym", 3, 0.6), ("cogym", 5, 1.0), ("cogym", 1, 0.2),
                          ("cogym_lab", 3, 0.5), ("cogym_lab", 5, 1.0), ("cogym_lab", 1, 0.0)])
async def test_performance_follows_the_protocol(index, protocol, score, performance):
    async with ScriptedOpenAIServer() as server:
        server.extend(judge_replies(score))
        judge = make_lm(LMConfig(model="judge-lm", base_url=server.base_url, temperature=0))
        env = RelatedWorkEnv(instance=0, search=index, judge_lm=judge, protocol=protocol)
        coordinator, _ = started(env)
        _with_a_paper(env, coordinator)
        coordinator.handle("user", 'EDITOR_UPDATE(text="### One\\nText [1].")', 3.0)
        assert env.delivered() and env.env_args()["protocol"] == protocol
        scores = await env.aevaluate()
    assert scores["rubric_score"] == score and scores["performance"] == performance
    assert len(server.bodies) == 1


async def test_an_empty_library_is_delivered_only_under_cogym_lab(index):
    scores = {}
    async with ScriptedOpenAIServer() as server:
        server.extend(judge_replies(4) * 2)
        judge = make_lm(LMConfig(model="judge-lm", base_url=server.base_url, temperature=0))
        for protocol in ("cogym", "cogym_lab"):
            env = RelatedWorkEnv(instance=0, search=index, judge_lm=judge, protocol=protocol)
            env.reset()
            assert not env.delivered()  # no text: undelivered under both
            env.step("user", 'EDITOR_UPDATE(text="### One\\nWritten without the library [1].")')
            scores[protocol] = (env.delivered(), await env.aevaluate())
    assert scores["cogym"][0] is False and scores["cogym_lab"][0] is True
    assert scores["cogym"][1]["performance"] == 0.0  # the release: undelivered scores nothing
    assert scores["cogym_lab"][1]["performance"] == 0.75
    assert scores["cogym"][1]["rubric_score"] == scores["cogym_lab"][1]["rubric_score"] == 4


def test_an_unknown_protocol_is_refused():
    with pytest.raises(ValueError, match="scoring protocol"):
        RelatedWorkEnv(instance=0, protocol="release")


# --- required papers the offline search cannot find ------------------------------------------

def _paper(id_: str, title: str, **fields) -> dict:
    return {"id": id_, "title": title, "abstract": f"A study of {title.lower()}.",
            "authors": ["Grace Hopper"], "year": 2022, "categories": ["cs.LG"], "url": "",
            "source": "test", **fields}


def _write(path, records) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory, datasets_dir):
    """A data directory with the real tasks and a corpus that holds task 15's paper, one of task
    26's two (only in the supplement, spelled differently), and task 2's paper in the first file
    but removed by the supplement."""
    tasks = load_tasks(datasets_dir)
    root = tmp_path_factory.mktemp("small-data")
    folder = root / "related_work"
    folder.mkdir()
    for name in ("test.json", "rubric.txt"):
        shutil.copyfile(datasets_dir / "related_work" / name, folder / name)
    filler = [_paper(f"f:{n}", f"Filler study number {n} of graph learning") for n in range(30)]
    _write(folder / BASE_FILE, filler + [
        _paper("p:15", tasks[15].cited_titles[0]),
        _paper("p:2", tasks[2].cited_titles[0]),
    ])
    _write(folder / SUPPLEMENT_FILE, [
        _paper("p:26", tasks[26].cited_titles[0].upper() + "."),
        _paper("p:fix", "A correction", supersedes=["p:2"]),
    ])
    return root, tasks, root / "cache"


def _note_count(text: str) -> int:
    return text.count(UNFINDABLE_NOTE)


def test_a_missing_required_paper_is_flagged_for_the_simulated_user(small_corpus):
    root, tasks, cache = small_corpus
    env = RelatedWorkEnv(instance=2, data_dir=str(root), index_cache=str(cache))
    hidden = env.hidden_information()
    (title,) = tasks[2].cited_titles  # in the first file, but superseded
    line = next(line for line in hidden.splitlines() if title in line)
    assert line.endswith(UNFINDABLE_NOTE) and "not findable in the offline paper search" in line
    assert _note_count(hidden) == 1 and env.unfindable_titles() == [title]


def test_a_present_required_paper_is_not_flagged(small_corpus):
    root, tasks, cache = small_corpus
    present = RelatedWorkEnv(instance=15, data_dir=str(root), index_cache=str(cache))
    assert _note_count(present.hidden_information()) == 0 and present.unfindable_titles() == []
    assert present.hidden_information() == tasks[15].hidden_information()
    mixed = RelatedWorkEnv(instance=26, data_dir=str(root), index_cache=str(cache))
    found, missing = tasks[26].cited_titles
    hidden = mixed.hidden_information()
    assert _note_count(hidden) == 1 and mixed.unfindable_titles() == [missing]
    assert next(line for line in hidden.splitlines() if found in line).endswith(f'"{found}".')


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_nothing_is_flagged_with_the_live_search_or_without_cited_papers(small_corpus):
    root, tasks, _ = small_corpus
    live = ArxivLiveSearch(f"http://127.0.0.1:{_closed_port()}/api/query", timeout=1)
    env = RelatedWorkEnv(instance=2, data_dir=str(root), search=live)
    assert env.hidden_information() == tasks[2].hidden_information()  # and no network call
    assert _note_count(env.hidden_information()) == 0
    plain = RelatedWorkEnv(instance=0, data_dir=str(root), index_cache=str(root / "none"))
    assert plain.hidden_information() == tasks[0].hidden_information()
    assert plain.search is None  # a task that names no paper never needs the index


# --- hidden strings --------------------------------------------------------------------------

def test_hidden_strings_are_the_content_hints_not_titles(use_shared_data):
    tasks = load_tasks()
    env = RelatedWorkEnv(instance=0)
    strings = env.hidden_strings()
    passage = " ".join(str(tasks[0].raw_requirements[0][1]).split())
    assert strings[0] == passage and len(strings) == 3  # the passage and its 2 long sentences
    for task in tasks:
        strings = task.hidden_strings()
        assert all(len(s.split()) >= HIDDEN_STRING_MIN_WORDS for s in strings)
        hidden = task.hidden_information()
        assert all(s in hidden for s in strings)  # exactly as the simulated user gets them
        for title in task.cited_titles:
            assert title not in strings
        headings = [str(v) for code, v in task.raw_requirements if code == "RH"]
        assert not set(headings) & set(strings)
    assert sum(bool(t.hidden_strings()) for t in tasks) == 80  # the tasks with a long PS


def test_the_paper_search_says_it_fills_the_search_results():
    """The panel puts a search box over ``search`` for it: Enter there searches."""
    specs = {spec.name: spec for spec, _ in RelatedWorkEnv._handlers.values()}
    assert specs["SEARCH_PAPER"].searches == "search"
    assert [spec.name for spec in specs.values() if spec.searches] == ["SEARCH_PAPER"]
