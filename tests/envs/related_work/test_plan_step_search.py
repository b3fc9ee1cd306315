"""Search inside a person's plan step (SEARCH_IN_STEP) on Related Work with the bundled sample
corpus: in a whole session with the plan-aware agent on a scripted LM, the person takes a step,
searches from it, and completes it without items; the step's output holds the search's papers,
and the agent's next step works from them. Through a coordinator: who may search from which
step, and a refused search changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from cogym_lab.agents import PlanAwareAgent
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import EventType, TeamMember
from cogym_lab.core.plan_env import PLAN_COMPONENT
from cogym_lab.datasets import DATA_ENV_VAR
from cogym_lab.envs import make_env
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.results import read_events, read_session
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.plan_scripts import PLAN, RelatedWorkPlanPlay, StepTwoPerson

pytestmark = pytest.mark.usefixtures("no_ambient_lm")
QUERY = "entity relation extraction"


@pytest.fixture(scope="module")
def sample_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def on_the_sample(tmp_path, sample_cache, monkeypatch):
    """No data folder, a fresh home, one cache (so one sample index) for the module."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(sample_cache))
    monkeypatch.delenv(DATA_ENV_VAR, raising=False)


class SearchingPerson(StepTwoPerson):
    """Picks the plan, takes step s2, searches from it, completes it keeping what it found."""

    def work_on(self, step: dict[str, Any]) -> str:
        if not (step["output"] or {}).get("pending"):
            return f'SEARCH_IN_STEP(step="s2", query="{QUERY}")'
        return 'COMPLETE_STEP(step="s2", text="Kept what my search found.")'


def test_a_person_searches_from_their_step_and_the_results_are_its_output(on_the_sample,
                                                                          tmp_path):
    env = make_env("related_work", instance=0, plans=True)
    with ScriptedOpenAIServer(responder=RelatedWorkPlanPlay(env.task.topic)) as server:
        lm = make_lm(LMConfig(model="agent-lm", base_url=server.base_url, api_key="sk-test",
                              backoff=0.01))
        env.drafting_lm = make_lm(LMConfig(model="draft-lm", base_url=server.base_url))
        session = Session(env, {"agent": PlanAwareAgent(lm, use_scratchpad=False),
                                "user": SearchingPerson()},
                          kinds={"agent": "agent", "user": "user"}, results_dir=tmp_path / "s",
                          config=SessionConfig(idle_seconds=2, timeout=60))
        result = session.run_sync()
        bodies = server.bodies
    assert result.end_reason == "finished"
    searched = [e for e in read_events(tmp_path / "s")
                if e.type is EventType.ACTION and (e.action or "").startswith("SEARCH_IN_STEP")]
    assert len(searched) == 1 and searched[0].actor == "user"
    assert sorted(searched[0].recipients) == ["agent", "user"]  # the plan is shared
    final = read_session(tmp_path / "s")["final_state"]
    plan = next(c["content"] for c in final["views"]["agent"]["components"]
                if c["name"] == PLAN_COMPONENT)
    s2 = plan["plan"]["steps"][1]
    assert s2["status"] == "done" and s2["completed_by"] == "user"
    expected = [hit.paper.id for hit in env.search.search(QUERY, k=10)]
    assert [item["id"] for item in s2["output"]["items"]] == expected
    assert s2["output"]["searches"] == [f"SEARCH_PAPER: {QUERY}"]
    assert s2["output"]["text"] == "Kept what my search found." and not s2["output"]["pending"]
    # The agent's next step works from the person's search, and keeps two of its papers.
    s3 = next(b["messages"][-1]["content"] for b in bodies
              if "You are carrying out step s3" in b["messages"][-1]["content"])
    assert expected[0] in s3
    assert set(env.library.entries) == set(expected[-2:])
    assert [s["status"] for s in plan["plan"]["steps"]] == ["done"] * len(PLAN["steps"])


def _planned(assignee: str = "person") -> tuple[Any, Coordinator]:
    env = make_env("related_work", instance=0, plans=True)
    coordinator = Coordinator(env, [TeamMember(role="agent"),
                                    TeamMember(role="user", kind="user")], session_id="p")
    coordinator.start(0.0)
    plans = [{"title": "t", "steps": [{"description": "Find papers", "assignee": assignee},
                                      {"description": "Draft", "assignee": "agent"}]}]
    for when, (role, name, args) in enumerate([
            ("agent", "PROPOSE_PLANS", {"plans": plans}),
            ("user", "SELECT_PLAN", {"index": 0}),
            ("user", "RUN_STEP", {"step": "s1"})], 1):
        assert coordinator.handle(role, {"name": name, "args": args}, when).events[0].status \
            == "ok"
    return env, coordinator


@pytest.mark.parametrize(("assignee", "role", "args", "match"), [
    ("person", "agent", {"step": "s1", "query": QUERY}, "only the person side searches"),
    ("agent", "user", {"step": "s1", "query": QUERY}, "running and assigned to the agent"),
    ("person", "user", {"step": "s2", "query": QUERY}, "not run and assigned to the agent"),
    ("person", "user", {"step": "s9", "query": QUERY}, "No step 's9'"),
    ("person", "user", {"step": "s1", "query": "  "}, "SEARCH_PAPER needs a query"),
    ("person", "user", {"step": "s1", "query": QUERY, "search": "LIBRARY_NOTE"},
     "not one of the task's searches: SEARCH_PAPER"),
])
def test_a_search_from_a_step_that_does_not_wait_for_the_person_is_refused(
        on_the_sample, assignee, role, args, match):
    env, coordinator = _planned(assignee)
    before = coordinator.snapshot()["views"]
    event = coordinator.handle(role, {"name": "SEARCH_IN_STEP", "args": args}, 9.0).events[0]
    assert event.status == "error" and match in (event.error or ""), event.error
    assert coordinator.snapshot()["views"] == before


def test_two_searches_add_up_and_items_given_on_completion_replace_them(on_the_sample):
    env, coordinator = _planned()
    coordinator.handle("user", f'SEARCH_IN_STEP(step="s1", query="{QUERY}")', 5.0)
    coordinator.handle("user", 'SEARCH_IN_STEP(step="s1", query="machine translation")', 6.0)
    output = env.plan_board.step("s1").output
    first = [hit.paper.id for hit in env.search.search(QUERY, k=10)]
    second = [hit.paper.id for hit in env.search.search("machine translation", k=10)]
    assert {i.kind for i in output.items} == {"paper"}  # search rows: title, authors, year
    assert [i.field("id") for i in output.items] == first + [i for i in second if i not in first]
    assert output.pending and env.plan_board.step("s1").status == "needs_input"
    assert env.results["user"][0]["id"] == second[0]  # the person's own results, as a search
    done = coordinator.handle("user", {"name": "COMPLETE_STEP", "args": {
        "step": "s1", "text": "one", "items": [{"id": first[0]}]}}, 7.0)
    assert done.events[0].status == "ok"
    output = env.plan_board.step("s1").output
    paper = env.search.get(first[0])
    # the item named the paper by id: the task filled in the rest, for the paper card
    assert [i.as_dict() for i in output.items] == [{
        "kind": "paper", "title": paper.title, "authors": paper.short_authors(),
        "year": paper.year, "url": paper.url, "id": first[0]}] and len(output.searches) == 2
