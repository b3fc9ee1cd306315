"""The turn-taking ablation end to end: the collaborative team on real Travel Planning instances,
its LMs (agent, simulated user, the task's tools) scripted on the loopback server and reached
through our real LM client (over aiohttp), run by the batch runner once with Co-Gym's notification
protocol and once with ``interaction="turns"``; then the report compares the two runs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import pytest

from cogym_lab.core.messages import Event, EventType
from cogym_lab.eval import RunSummary, report, run
from cogym_lab.lm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from cogym_lab.nodes import replay
from cogym_lab.nodes.results import read_events, read_session
from cogym_lab.records.trajectory import load_session
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.eval_scripts import RouteByInstance, travel_routes

pytestmark = pytest.mark.timeout(600)
INSTANCES = [0, 1]
MODELS = {"agent": "agent-lm", "user": "user-lm", "tools": "tool-lm"}


@dataclass
class Ablation:
    notifications: RunSummary
    turns: RunSummary
    base: Path
    base_url: str


@pytest.fixture(scope="module")
def ablation(datasets_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Ablation:
    """Both interactions on the same instances, with the same team and models."""
    base = tmp_path_factory.mktemp("ablation")
    with pytest.MonkeyPatch.context() as patch:
        for name in (ENV_API_KEY, ENV_BASE_URL, ENV_MODEL):
            patch.delenv(name, raising=False)
        patch.setenv("COGYM_DATA", str(datasets_dir))
        with ScriptedOpenAIServer(responder=RouteByInstance(travel_routes(INSTANCES))) as server:
            runs = {mode: run("travel_planning", "collaborative", INSTANCES, out=base / mode,
                              concurrency=2, models=MODELS, base_urls=server.base_url,
                              idle_seconds=5, timeout=240, progress=False,
                              interaction=None if mode == "notifications" else mode)
                    for mode in ("notifications", "turns")}
            base_url = server.base_url
    return Ablation(runs["notifications"], runs["turns"], base, base_url)


def _sessions(summary: RunSummary) -> list[Path]:
    return [Path(summary.out) / entry.directory for entry in summary.sessions]


def _acts(events: list[Event]) -> list[Event]:
    """The members' own acts: not the results of slow work, nor the env's events."""
    return [e for e in events if e.actor is not None and not e.info.get("follow_up")]


def test_both_interactions_deliver_every_instance_and_say_which_they_ran(ablation):
    for summary, mode in ((ablation.notifications, "notifications"), (ablation.turns, "turns")):
        assert summary.counts.finished == summary.counts.delivered == len(INSTANCES)
        assert summary.session_config["interaction"] == mode  # run.json
        for directory in _sessions(summary):
            meta = read_session(directory)
            assert meta["interaction"] == mode and meta["end_reason"] == "finished"
            assert load_session(directory).interaction == mode
            assert 0 < meta["scores"]["performance"] <= 1


def test_in_turns_mode_each_member_acts_only_on_its_turn_and_once_per_turn(ablation):
    for directory in _sessions(ablation.turns):
        events = read_events(directory)
        assert all("turn" in e.info for e in events)
        assert not any(e.info.get("out_of_turn") for e in events)  # the nodes follow the rule
        turn_before = {e.seq: events[i - 1].info["turn"] for i, e in enumerate(events) if i}
        numbers = []
        for act in _acts(events):
            assert act.actor == turn_before[act.seq]["role"]  # its own turn ...
            numbers.append(turn_before[act.seq]["number"])
        assert numbers == list(range(1, len(numbers) + 1))  # ... and one act per turn
        # Strict alternation between the agent and the simulated user, the agent first.
        actors = [act.actor for act in _acts(events)]
        assert actors == ["agent", "user"] * (len(actors) // 2) + ["agent"] * (len(actors) % 2)
        # Doing nothing passed the turn: the user waited while the agent searched.
        assert [e.type for e in _acts(events) if e.actor == "user"][:3] == [EventType.WAIT] * 3
        # The simulated user was asked to decide once per turn it had: woken on its turns only.
        calls = [json.loads(line) for line in
                 (directory / "user" / "lm_calls.jsonl").read_text().splitlines()]
        decisions = [c for c in calls if c["purpose"] == "decide"]
        assert len(decisions) == sum(1 for a in _acts(events) if a.actor == "user")


def test_the_notification_protocol_lets_members_act_whenever(ablation):
    for directory in _sessions(ablation.notifications):
        events = read_events(directory)
        assert not any("turn" in e.info for e in events)
        # Under notifications the agent searched several times in a row, without the user's
        # turn between its acts: something turns mode forbids.
        actors = [act.actor for act in _acts(events)]
        assert any(a == b == "agent" for a, b in pairwise(actors))


def test_a_turns_session_replays_to_its_final_state_turn_included(ablation,
                                                                   use_shared_data):
    for directory in _sessions(ablation.turns):
        replayed = replay(directory)
        assert replayed.final_state_checked
        assert replayed.final_state["turn"] == read_session(directory)["final_state"]["turn"]


def test_the_report_compares_the_two_interactions_on_the_same_instances(ablation,
                                                                       use_shared_data):
    result = report([ablation.base / "notifications", ablation.base / "turns"], effort=False,
                    failures=False)
    summary = result.tables["summary"]
    # Two systems, never one row mixing the modes.
    assert sorted(summary["agent_type"]) == ["collaborative", "collaborative [turns]"]
    assert sorted(summary["interaction"]) == ["notifications", "turns"]
    modes = result.tables["interaction"]
    assert list(modes["interaction"]) == ["notifications", "turns"]
    assert set(modes["agent_type"]) == {"collaborative"} and set(modes["model"]) == {"agent-lm"}
    assert list(modes["sessions"]) == [2, 2] and list(modes["delivery_rate"]) == [1.0, 1.0]
    tests = result.tables["interaction_tests"].set_index("measure")
    assert list(tests.loc[["delivered", "performance", "collab_score"], "paired_instances"]) == [
        2, 2, 2]
    # The scripted agent writes the same plan in both modes, so the real grader gives the same
    # scores: no difference, and tests that find none (McNemar for 0/1 delivery).
    assert tests.loc["delivered", "test"] == "McNemar (exact)"
    assert tests.loc["performance", "difference"] == 0.0
    assert tests.loc["performance", "p_value"] == 1.0
    assert "Turn-taking ablation" in result.to_text()


def test_a_run_folder_holds_one_interaction(ablation, use_shared_data):
    with pytest.raises(ValueError, match="holds a run with interaction 'notifications', not "
                                         "'turns'"):
        run("travel_planning", "collaborative", INSTANCES, out=ablation.base / "notifications",
            models=MODELS, base_urls=ablation.base_url, progress=False, interaction="turns")
