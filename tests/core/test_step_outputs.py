"""Typed step outputs (Cocoa §4.2.3) through a real coordinator: each output item's kind (given,
read from its fields, or the step's format's), the per-step output format (SET_STEP_FORMAT,
in proposals and in ADD_STEP), refusals that change nothing, hostile text kept as given and
replayed, and old logs (items without a kind) still read."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import Event, TeamMember
from cogym_lab.core.plans import PlanState, StepOutput
from cogym_lab.core.step_outputs import OUTPUT_FORMATS, infer_kind
from cogym_lab.core.text import clean_text
from cogym_lab.envs import make_env
from cogym_lab.nodes.restore import replay_events
from tests.support.hostile import NASTY, hostile_text

TEAM = [TeamMember(role="agent", kind="agent"), TeamMember(role="user", kind="user")]
STEPS = [{"description": "Find papers", "assignee": "agent", "output_format": "paper_list"},
         {"description": "Name the authors", "assignee": "person"},
         {"description": "Sum up", "assignee": "agent", "output_format": "text"}]


class Planned:
    """A planned todo session with a three-step plan picked, driven by hand."""

    def __init__(self) -> None:
        self.env = make_env("todo", plans=True)
        self.coordinator = Coordinator(self.env, TEAM, session_id="outputs")
        self.events: list[Event] = list(self.coordinator.start(0.0).events)
        self.clock = 0.0
        self.ok("agent", "PROPOSE_PLANS", plans=[{"title": "t", "steps": STEPS}])
        self.ok("user", "SELECT_PLAN", index=0)

    def act(self, role: str, name: str, **args: Any) -> Event:
        self.clock += 1.0
        events = self.coordinator.handle(role, {"name": name, "args": args}, self.clock).events
        self.events += events
        return events[0]

    def ok(self, role: str, name: str, **args: Any) -> Event:
        event = self.act(role, name, **args)
        assert event.status == "ok", event.error
        return event

    def plan(self) -> dict[str, Any]:
        return self.env.plan_board.content()

    def step(self, number: int) -> dict[str, Any]:
        return self.plan()["plan"]["steps"][number - 1]


def assert_replays(team: Planned) -> None:
    """The session's log, replayed on a fresh coordinator, gives the same state."""
    fresh = Coordinator(make_env("todo", **team.env.env_args()), TEAM, session_id="outputs")
    for _ in replay_events(fresh, team.events):
        pass
    assert fresh.snapshot() == team.coordinator.snapshot()


def test_items_get_their_kind_from_their_fields_or_the_steps_format() -> None:
    team = Planned()
    assert [s["output_format"] for s in team.plan()["plan"]["steps"]] == \
        ["paper_list", None, "text"]
    team.ok("user", "RUN_STEP", step="s1")
    team.ok("agent", "COMPLETE_STEP", step="s1", text="two", items=[
        {"id": "1706.03762", "title": "Attention", "authors": "Vaswani et al.", "year": 2017},
        {"id": "p2", "title": "A paper the format tells"},  # a bare title: the format's kind
        {"name": "Ada", "affiliation": "Somewhere"},
        {"topic": "machine translation"},
        {"source": "df.describe()", "output": "count 3"},
        {"kind": "entity", "text": "which metric?"},
        {"colour": "blue"}])  # a format's kind for what the fields do not tell
    kinds = [item["kind"] for item in team.step(1)["output"]["items"]]
    assert kinds == ["paper", "paper", "author", "topic", "cell", "entity", "paper"]
    # the context pool, which later steps work from, holds the same items with their kinds
    assert team.plan()["context"][0]["items"][0] == {
        "kind": "paper", "id": "1706.03762", "title": "Attention", "authors": "Vaswani et al.",
        "year": 2017}


def test_without_a_format_an_item_whose_fields_tell_nothing_has_no_kind() -> None:
    assert infer_kind({"Flight Number": "F1", "Price": 120}) is None
    assert infer_kind({"id": "x"}) is None
    assert infer_kind({"id": "x", "title": "a question"}) == "entity"
    assert infer_kind({"Price": 120}, "table") == "record"


def test_the_output_format_is_set_cleared_and_a_done_step_goes_stale() -> None:
    team = Planned()
    team.ok("user", "SET_STEP_FORMAT", step="s2", format="author_list")
    assert team.step(2)["output_format"] == "author_list"
    team.ok("user", "RUN_ALL")
    team.ok("agent", "COMPLETE_STEP", step="s1", text="", items=[{"title": "P"}])
    team.ok("user", "COMPLETE_STEP", step="s2", text="", items=[{"name": "Ada"}])
    assert team.step(2)["output"]["items"][0]["kind"] == "author"  # the format's kind
    team.ok("agent", "COMPLETE_STEP", step="s3", text="In short: Ada.")
    team.ok("agent", "SET_STEP_FORMAT", step="s1", format=" TOPIC_LIST ")  # anyone, any case
    assert team.step(1)["output_format"] == "topic_list"
    assert [s["status"] for s in team.plan()["plan"]["steps"]] == ["stale"] * 3
    team.ok("user", "SET_STEP_FORMAT", step="s1", format="")
    assert team.step(1)["output_format"] is None


def test_add_step_takes_a_format_and_a_proposal_step_too() -> None:
    team = Planned()
    team.ok("user", "ADD_STEP", description="List open questions", assignee="person",
            output_format="entity_list")
    assert team.plan()["plan"]["steps"][-1]["output_format"] == "entity_list"


@pytest.mark.parametrize(("name", "args", "match"), [
    ("SET_STEP_FORMAT", {"step": "s1", "format": "poem"}, "output format is one of"),
    ("SET_STEP_FORMAT", {"step": "s1", "format": "<b>x</b>\x00"}, "output format is one of"),
    ("SET_STEP_FORMAT", {"step": "s9", "format": "text"}, "No step 's9'"),
    ("ADD_STEP", {"description": "x", "output_format": "essay"}, "output format is one of"),
    ("COMPLETE_STEP", {"step": "s1", "items": [{"kind": "planet", "title": "Mars"}]},
     "kind is one of"),
    ("COMPLETE_STEP", {"step": "s1", "items": ["just text"]}, "list of objects"),
    ("PROPOSE_PLANS", {"plans": [{"steps": [{"description": "x", "output_format": 3}]}]},
     "output format is one of"),
])
def test_a_bad_format_or_kind_is_refused_and_changes_nothing(name, args, match) -> None:
    team = Planned()
    team.ok("user", "RUN_STEP", step="s1")
    before = team.coordinator.snapshot()["views"]
    event = team.act("agent", name, **args)
    assert event.status == "error" and match in (event.error or ""), event.error
    assert team.coordinator.snapshot()["views"] == before


def test_hostile_item_fields_are_kept_as_given_and_replay() -> None:
    team = Planned()
    team.ok("user", "RUN_STEP", step="s1")
    megabyte = "é<script>" * 110_000  # over 1 MB of text in one field
    items = [{"title": text, "authors": text, "year": 2020} for text in NASTY] + [
        {"title": megabyte, "authors": "A", "year": 1}, {"kind": "entity", "text": "\u2028\x00"}]
    team.ok("agent", "COMPLETE_STEP", step="s1", text="<img src=x onerror=alert(1)>",
            items=items)
    shown = team.step(1)["output"]
    # kept as given, but for lone surrogates, which the session's text policy makes U+FFFD
    assert [item["title"] for item in shown["items"][:len(NASTY)]] == [
        clean_text(text) for text in NASTY]
    assert shown["items"][len(NASTY)]["title"] == megabyte
    assert shown["text"] == "<img src=x onerror=alert(1)>"
    assert_replays(team)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields=st.dictionaries(hostile_text, st.one_of(hostile_text, st.integers(), st.none()),
                              max_size=4),
       shape=st.sampled_from(["", *OUTPUT_FORMATS]))
def test_any_item_is_taken_or_refused_whole_and_replays(fields, shape) -> None:
    team = Planned()
    team.ok("user", "SET_STEP_FORMAT", step="s1", format=shape)
    team.ok("user", "RUN_STEP", step="s1")
    before = team.coordinator.snapshot()["views"]
    event = team.act("agent", "COMPLETE_STEP", step="s1", items=[fields])
    if event.status == "error":
        assert team.coordinator.snapshot()["views"] == before
        return
    item = team.step(1)["output"]["items"][0]
    assert {k: v for k, v in item.items() if k != "kind"} == {
        clean_text(k): clean_text(v) if isinstance(v, str) else v
        for k, v in fields.items() if k != "kind"}
    json.dumps(team.plan())  # the content stays plain JSON
    assert_replays(team)


def test_an_old_logs_items_without_a_kind_still_read() -> None:
    old = StepOutput.model_validate({"items": [{"id": "x", "title": "t"}], "text": "old"})
    assert old.items[0].kind is None and old.items[0].as_dict() == {"id": "x", "title": "t"}
    state = PlanState.model_validate({"request": "r", "plan": {"title": "", "steps": [
        {"id": "s1", "description": "d", "assignee": "agent", "status": "done",
         "output": {"items": [{"id": "x"}], "text": ""}}]}})
    step = state.plan.steps[0] if state.plan else None
    assert step is not None and step.output_format is None
    assert state.model_dump(mode="json")["plan"]["steps"][0]["output"]["items"] == [
        {"kind": None, "id": "x"}]
