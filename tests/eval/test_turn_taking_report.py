"""The turn-taking ablation in the report (Co-Gym §5.3, Table 6), on hand-built trajectories:
the same team and model on the same instances of the todo task, under the notification protocol
and under strict turns, every number worked out by hand in the comments.

The todo grade (tests.support.trajectories.TODO_ARGS): performance = (share of the two
must-haves, rain jacket and headlamp, listed + min(items, 4) / 4) / 2. An instance here is a
trip: the sessions of one trip pair across the two modes.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from cogym_lab.eval import report
from cogym_lab.eval.metrics.interaction import mode_rows, paired_rows
from cogym_lab.records.trajectory import load_session
from tests.support.trajectories import TODO_ARGS, add, write_session

WAIT = "WAIT_TEAMMATE_CONTINUE()"


def _write(directory: Path, trip: str, steps: list[tuple[str, str]], satisfaction: int, *,
           interaction: str, end: str | None = "finished", **args: object) -> None:
    write_session(directory, steps, env_args={**TODO_ARGS, "trip": trip, **args},
                  ratings={"user": {"satisfaction": satisfaction}}, interaction=interaction,
                  end=end)


@pytest.fixture
def ablation(tmp_path: Path) -> Path:
    notifications, turns = tmp_path / "notifications", tmp_path / "turns"
    # Under the notification protocol the agent acts several times in a row.
    # camping: 4 items, both must-haves: (2/2 + 4/4) / 2 = 1.0; satisfaction 4.
    _write(notifications / "camping", "camping",
           [("agent", add("tent")), ("agent", add("stove")), ("agent", add("rain jacket")),
            ("agent", add("headlamp")), ("user", "FINISH()")], 4, interaction="notifications")
    # beach: tent and headlamp: (1/2 + 2/4) / 2 = 0.5; satisfaction 5.
    _write(notifications / "beach", "beach",
           [("agent", add("tent")), ("agent", add("headlamp")), ("user", "FINISH()")], 5,
           interaction="notifications")
    # city: stopped by the event limit, an ending the release never evaluates: Collab 0.
    _write(notifications / "city", "city", [("agent", add("tent"))], 3,
           interaction="notifications", end="event_limit")
    # Under strict turns the agent and the user alternate (the agent first).
    # camping: tent, stove, rain jacket: (1/2 + 3/4) / 2 = 0.625; satisfaction 3.
    _write(turns / "camping", "camping",
           [("agent", add("tent")), ("user", WAIT), ("agent", add("stove")), ("user", WAIT),
            ("agent", add("rain jacket")), ("user", "FINISH()")], 3, interaction="turns")
    # beach: tent (agent), headlamp (user): (1/2 + 2/4) / 2 = 0.5; satisfaction 4.
    _write(turns / "beach", "beach",
           [("agent", add("tent")), ("user", add("headlamp")), ("agent", "FINISH()")], 4,
           interaction="turns")
    # city, run twice (two trials): tent, rain jacket, headlamp: (2/2 + 3/4) / 2 = 0.875,
    # satisfaction 2; and tent alone: (0 + 1/4) / 2 = 0.125, satisfaction 4.
    _write(turns / "city", "city",
           [("agent", add("tent")), ("user", add("rain jacket")), ("agent", add("headlamp")),
            ("user", "FINISH()")], 2, interaction="turns")
    _write(turns / "city-t1", "city", [("agent", add("tent")), ("user", "FINISH()")], 4,
           interaction="turns")
    # A fourth instance (camping with only the rain jacket a must-have), in turns mode only,
    # so it has no pair: tent alone, (0 + 1/4) / 2 = 0.125; satisfaction 5.
    _write(turns / "solo", "camping", [("agent", add("tent")), ("user", "FINISH()")], 5,
           interaction="turns", must_have=["rain jacket"])
    return tmp_path


def test_the_hand_built_sessions_are_what_the_comments_say(ablation: Path) -> None:
    performance = {path.name: load_session(path).performance
                   for path in sorted((ablation / "turns").iterdir())}
    assert performance == {"beach": 0.5, "camping": 0.625, "city": 0.875, "city-t1": 0.125,
                           "solo": 0.125}
    idle = load_session(ablation / "notifications" / "city")  # the event limit
    assert not idle.delivered and idle.interaction == "notifications"
    events = load_session(ablation / "turns" / "camping").events
    assert not any(e.info.get("out_of_turn") for e in events)  # the steps kept to the turns
    assert [e.info["turn"]["number"] for e in events if e.actor == "agent"] == [2, 4, 6]


def test_the_summary_keeps_the_two_interactions_apart(ablation: Path) -> None:
    result = report([ablation / "notifications", ablation / "turns"], effort=False,
                    failures=False)
    summary = result.tables["summary"].set_index("agent_type")
    assert sorted(summary.index) == ["collaborative", "collaborative [turns]"]
    assert summary.loc["collaborative", "interaction"] == "notifications"
    assert summary.loc["collaborative [turns]", "interaction"] == "turns"
    assert summary.loc["collaborative", "sessions"] == 3
    assert summary.loc["collaborative [turns]", "sessions"] == 5
    sessions = result.tables["sessions"]
    assert sorted(set(sessions["interaction"])) == ["notifications", "turns"]
    assert set(sessions["agent_type"]) == {"collaborative"}  # the session rows: as recorded


def test_the_ablation_table_has_both_modes_measures(ablation: Path) -> None:
    result = report([ablation / "notifications", ablation / "turns"], effort=False,
                    failures=False)
    modes = result.tables["interaction"].set_index("interaction")
    assert list(modes.index) == ["notifications", "turns"]
    notifications, turns = modes.loc["notifications"], modes.loc["turns"]
    assert (notifications["sessions"], notifications["instances"]) == (3, 3)
    assert (turns["sessions"], turns["instances"]) == (5, 4)  # city twice
    # Delivery: 2 of 3 (city hit the event limit); 5 of 5.
    assert notifications["delivery_rate"] == pytest.approx(2 / 3)
    assert turns["delivery_rate"] == 1.0
    # Task performance over the delivered sessions: (1.0 + 0.5) / 2 = 0.75;
    # (0.625 + 0.5 + 0.875 + 0.125 + 0.125) / 5 = 2.25 / 5 = 0.45.
    assert notifications["performance"] == pytest.approx(0.75)
    assert turns["performance"] == pytest.approx(0.45)
    # Collab Score over all sessions: (1.0 + 0.5 + 0) / 3 = 0.5; turns as its performance.
    assert notifications["collab_score"] == pytest.approx(0.5)
    assert turns["collab_score"] == pytest.approx(0.45)
    # Satisfaction: (4 + 5 + 3) / 3 = 4.0; (3 + 4 + 2 + 4 + 5) / 5 = 3.6.
    assert notifications["satisfaction"] == pytest.approx(4.0)
    assert turns["satisfaction"] == pytest.approx(3.6)
    assert math.isnan(notifications["h_init"])  # no judge: no initiative labels
    text = result.to_text()
    assert "Turn-taking ablation (Co-Gym §5.3, Table 6)" in text
    assert "Turn-taking ablation: paired tests" in text


def test_the_paired_tests_use_the_instances_run_in_both_modes(ablation: Path) -> None:
    result = report([ablation / "notifications", ablation / "turns"], effort=False,
                    failures=False)
    tests = result.tables["interaction_tests"].set_index("measure")
    assert list(tests.index) == ["delivered", "performance", "collab_score", "satisfaction"]
    # solo ran in turns mode only: no pair. city's two trials count once, with their mean.

    # Delivered, per instance (camping, beach, city): [1, 1, 0] and [1, 1, 1]: all 0/1, so
    # McNemar's exact test; one discordant pair, for turns: binomial(0 of 1) gives p = 1.
    # Difference: (0 + 0 - 1) / 3 = -1/3.
    delivered = tests.loc["delivered"]
    assert delivered["test"] == "McNemar (exact)" and delivered["paired_instances"] == 3
    assert delivered["difference"] == pytest.approx(-1 / 3)
    assert (delivered["statistic"], delivered["p_value"]) == (0.0, 1.0)

    # Performance counts delivered sessions only, so city has none under notifications: the
    # pairs are camping (1.0, 0.625) and beach (0.5, 0.5). Differences 0.375 and 0: mean
    # 0.1875, sample sd sqrt(2 * 0.1875^2) = 0.2652, se 0.2652 / sqrt(2) = 0.1875, so t = 1.0
    # on 1 degree of freedom, whose two-sided p is 1 - (2 / pi) * atan(1) = 0.5.
    performance = tests.loc["performance"]
    assert performance["paired_instances"] == 2 and performance["test"] == "paired t-test"
    assert (performance["notifications"], performance["turns"]) == (0.75, 0.5625)
    assert performance["difference"] == pytest.approx(0.1875)
    assert performance["statistic"] == pytest.approx(1.0)
    assert performance["p_value"] == pytest.approx(0.5)

    # Collab Score: camping (1.0, 0.625), beach (0.5, 0.5), city (0, (0.875 + 0.125) / 2 =
    # 0.5). Differences 3/8, 0, -1/2: mean -1/24 = -0.041667; deviations 10/24, 1/24, -11/24,
    # whose squares sum to 222/576; sd sqrt(111/576) = 0.438986; se 0.438986 / sqrt(3) =
    # 0.253448; t = -0.041667 / 0.253448 = -0.164399. On 2 degrees of freedom
    # P(|T| > |t|) = 1 - |t| / sqrt(2 + t^2) = 1 - 0.164399 / 1.423737 = 1 - 0.115470 = 0.884530.
    collab = tests.loc["collab_score"]
    assert collab["paired_instances"] == 3
    # Means over the three: (1.0 + 0.5 + 0) / 3 = 0.5 and (0.625 + 0.5 + 0.5) / 3 = 0.541667.
    assert collab["notifications"] == pytest.approx(0.5)
    assert collab["turns"] == pytest.approx(1.625 / 3)
    assert collab["difference"] == pytest.approx(-0.041667, abs=1e-6)
    assert collab["statistic"] == pytest.approx(-0.164399, abs=1e-6)
    assert collab["p_value"] == pytest.approx(0.884530, abs=1e-6)

    # Satisfaction (Table 6's tested item): camping (4, 3), beach (5, 4), city (3, (2 + 4) /
    # 2 = 3). Differences 1, 1, 0: mean 2/3; deviations 1/3, 1/3, -2/3, squares summing to
    # 2/3; sd sqrt(1/3) = 0.57735; se 0.57735 / sqrt(3) = 1/3; t = 2.0; on 2 degrees of
    # freedom p = 1 - 2 / sqrt(6) = 0.183503.
    satisfaction = tests.loc["satisfaction"]
    assert (satisfaction["notifications"], satisfaction["turns"]) == (4.0, pytest.approx(
        10 / 3))
    assert satisfaction["difference"] == pytest.approx(2 / 3)
    assert satisfaction["statistic"] == pytest.approx(2.0)
    assert satisfaction["p_value"] == pytest.approx(1 - 2 / math.sqrt(6))


def _row(instance: str, interaction: str, h_init: float) -> dict:
    return {"task": "todo", "agent_type": "collaborative", "model": "m", "instance": instance,
            "interaction": interaction, "delivered": True, "performance": 1.0,
            "collab_score": 1.0, "h_init": h_init, "satisfaction": math.nan}


def test_h_init_is_compared_like_the_other_measures() -> None:
    # H_init needs the judge's labels; here the session rows carry it directly.
    rows = [_row("0", "notifications", 0.9), _row("1", "notifications", 0.8),
            _row("0", "turns", 0.6), _row("1", "turns", 0.8), _row("2", "turns", 0.1)]
    modes = {row["interaction"]: row for row in mode_rows(rows)}
    assert modes["notifications"]["h_init"] == pytest.approx(0.85)  # (0.9 + 0.8) / 2
    assert modes["turns"]["h_init"] == pytest.approx(0.5)  # (0.6 + 0.8 + 0.1) / 3
    tests = {row["measure"]: row for row in paired_rows(rows)}
    assert "satisfaction" not in tests  # nobody rated: no pair to test
    # Pairs 0 and 1: differences 0.3 and 0; mean 0.15, se 0.15, t = 1 on 1 degree of freedom,
    # p = 0.5 (as the performance above).
    h_init = tests["h_init"]
    assert h_init["paired_instances"] == 2
    assert h_init["difference"] == pytest.approx(0.15)
    assert h_init["statistic"] == pytest.approx(1.0) and h_init["p_value"] == pytest.approx(0.5)


def test_systems_run_in_one_mode_only_get_no_ablation_rows() -> None:
    rows = [_row("0", "notifications", 0.9), _row("0", "notifications", 0.8)]
    assert mode_rows(rows) == [] and paired_rows(rows) == []
