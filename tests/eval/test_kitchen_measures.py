"""The real-time cooking measures (DPT-Agent, Appendix E) from hand-built results directories:
``session.json``, ``events.jsonl`` with ``clock`` events as the contract gives their ``info``,
and member folders with ``usage.json`` and ``latency.jsonl``. Every number is worked out by
hand in the comments. Then the inter-quartile mean, hostile tick info and latency files, and
the report's table, CSV, HTML and plot."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cogym_lab.cli.main import main
from cogym_lab.core.messages import Event, EventType
from cogym_lab.eval import load_session, report
from cogym_lab.eval.metrics.kitchen_measures import (
    cooking_measures,
    estimate,
    is_cooking,
    measure_all,
    summary_rows,
)
from cogym_lab.eval.stats.interquartile import interquartile_mean, iqm_and_se, standard_error
from cogym_lab.nodes.results import EVENTS_FILE, SESSION_FILE
from tests.support.trajectories import AUTONOMOUS_RUN, write_session

TASK = "cooking-fixture"  # no env of that name: the measures need the log alone

Step = tuple[str, str] | tuple[str, str, str]  # (role, action[, "error"])


def served(chef: str, dish: str, reward: int, credits: dict[str, int]) -> dict[str, Any]:
    return {"kind": "served", "chef": chef, "dish": dish, "reward": reward, "credits": credits}


def write_cooking(directory: Path, ticks: list[dict[str, Any]], *,
                  actions: dict[int, list[Step]] | None = None,
                  team: tuple[tuple[str, str], ...] = (("agent", "agent"), ("user", "user")),
                  usage: dict[str, dict[str, Any]] | None = None,
                  latency: dict[str, str] | None = None, layout: str = "counter_circuit",
                  spec_types: dict[str, str] | None = None, status: str = "finished",
                  scores: dict[str, Any] | None = None) -> Path:
    """A results directory as a clocked session writes it: ``ticks[i]`` is the info of tick
    ``i + 1`` (``tick`` is filled in), ``actions[n]`` the acts logged just before tick ``n``.

    ``usage`` is each member's ``usage.json``, ``latency`` the text of its ``latency.jsonl``,
    ``spec_types`` the member types the stored spec's team gives."""
    directory.mkdir(parents=True)
    members = [{"role": role, "kind": kind} for role, kind in team]
    session: dict[str, Any] = {
        "session_id": directory.name, "task": TASK, "team": members, "status": status,
        "env_args": {"layout": layout, "ticks": len(ticks)}, "end_reason": "time_up",
        "ended_at": 2000.0, "scores": scores or {}}
    if spec_types:
        session["spec"] = {"task": TASK, "team": {"name": "t", "members": {
            role: {"type": kind} for role, kind in spec_types.items()}}}
    (directory / SESSION_FILE).write_text(json.dumps(session))
    events = [Event(seq=1, time=1000.0, type=EventType.START)]

    def log(**fields: Any) -> None:
        events.append(Event(seq=len(events) + 1, time=1000.0 + len(events) * 0.25, **fields))

    for number, info in enumerate(ticks, start=1):
        for step in (actions or {}).get(number, []):
            role, action = step[0], step[1]
            refused = len(step) == 3
            log(type=EventType.ERROR if refused else EventType.ACTION, actor=role,
                action=action, status="error" if refused else "ok", private=True,
                error="no" if refused else None)
        happened = info.get("happened")
        log(type=EventType.CLOCK, info={"tick": number, **info},
            reward=sum(e["reward"] for e in (happened if isinstance(happened, list) else [])
                       if isinstance(e, dict) and type(e.get("reward")) is int))
    log(type=EventType.END, info={"reason": "time_up"})
    (directory / EVENTS_FILE).write_text(
        "".join(e.model_dump_json(exclude_defaults=True) + "\n" for e in events))
    for role, kind in team:
        folder = directory / role
        folder.mkdir(exist_ok=True)  # a role named ".." is the folder above
        (folder / "member.json").write_text(json.dumps({"role": role, "kind": kind}))
        if role in (usage or {}):
            (folder / "usage.json").write_text(json.dumps((usage or {})[role]))
        if role in (latency or {}):
            (folder / "latency.jsonl").write_text((latency or {})[role])
    return directory


# -- one session worked out by hand -----------------------------------------------------------

#: Ten ticks. The agent's chef moves in ticks 1-6 (6 of 10), the user's in 2, 4, 6 (3 of 10).
#: Served: BeefBurger +20 (agent 3, user 2 key events), LettuceBurger +15 (agent 1, user 3);
#: a wrong dish -10, a missed order -10. Score 20 - 10 - 10 + 15 = 15; gained 35.
TEN_TICKS: list[dict[str, Any]] = [
    {"score": 0, "happened": [{"kind": "order", "id": 1, "dish": "BeefBurger", "total": 120}],
     "atomic": {"agent": "up"}},
    {"score": 0, "happened": [], "atomic": {"agent": "left", "user": "interact"}},
    {"score": 20, "happened": [served("agent", "BeefBurger", 20, {"agent": 3, "user": 2})],
     "atomic": {"agent": "interact"}},
    {"score": 20, "atomic": {"agent": "down", "user": "up"}},
    {"score": 10, "happened": [{"kind": "wrong_served", "chef": "user",
                                "dish": "LettuceBurger", "reward": -10}],
     "atomic": {"agent": "right"}},
    {"score": 10, "happened": [{"kind": "fire"}], "atomic": {"agent": "interact",
                                                             "user": "interact"}},
    {"score": 0, "happened": [{"kind": "missed", "dish": "BeefBurger", "reward": -10},
                              {"kind": "fire_out", "chef": "agent"}]},
    {"score": 15, "happened": [served("user", "LettuceBurger", 15, {"agent": 1, "user": 3})]},
    {"score": 15, "happened": [{"kind": "macro_done", "chef": "agent", "macro": "SERVE"}]},
    {"score": 15},
]

#: The agent's accepted macros: PREPARE twice and SERVE once (3). A refused PREPARE, a MOVE and
#: an INTERACT are not macros executed; the user's PASS_ON counts for the user.
TEN_TICK_ACTIONS: dict[int, list[Step]] = {
    1: [("agent", 'PREPARE(food="Beef")'), ("user", 'MOVE(direction="up")')],
    2: [("agent", 'PREPARE(food="Lettuce", plate=true)', "error")],
    3: [("agent", 'SERVE(food="BeefBurger")'), ("agent", "INTERACT()")],
    5: [("user", 'PASS_ON(thing="Plate")'), ("agent", 'MOVE(direction="left")')],
    6: [("agent", 'PREPARE(food="Bread")')],
}

#: Macro latencies 1, 3, 2 (mean 2, median 2), one policy output of 4 s; the rest is not read:
#: a belief update (another kind), lines without a usable number, and a torn last line.
LATENCY = "\n".join([
    json.dumps({"kind": "macro", "seconds": 1.0, "tick": 1}),
    json.dumps({"kind": "macro", "seconds": 3.0, "tick": 3}),
    json.dumps({"kind": "belief", "seconds": 9.0, "tick": 4}),
    json.dumps({"kind": "macro", "seconds": 2, "tick": 5}),
    json.dumps({"kind": "policy", "seconds": 4.0, "tick": 6}),
    json.dumps({"kind": "macro", "seconds": "fast"}),
    json.dumps({"kind": "macro", "seconds": -1.0}),
    json.dumps({"kind": "macro", "seconds": True}),
    json.dumps({"seconds": 5.0}),
    json.dumps(["macro", 5.0]),
    '{"kind": "macro", "seconds": 1e999}',  # an infinity in JSON text
    '{"kind": "macro", "sec',
])


def ten_tick_session(directory: Path, **overrides: Any) -> Path:
    arguments: dict[str, Any] = {
        "actions": TEN_TICK_ACTIONS,
        "usage": {"agent": {"agent_type": "kitchen-dpt", "model": "m-fast"}},
        "latency": {"agent": LATENCY}, "spec_types": {"agent": "kitchen-dpt",
                                                      "user": "kitchen-fsm"}}
    return write_cooking(directory, TEN_TICKS, **(arguments | overrides))


def test_a_session_measured_by_hand(tmp_path: Path) -> None:
    record = load_session(ten_tick_session(tmp_path / "one"))
    assert is_cooking(record)
    measures = cooking_measures(record)
    assert measures is not None and measures.notes == []
    row = measures.row()
    assert (row["agent_role"], row["partner_role"]) == ("agent", "user")
    assert row["ticks"] == 10 and row["score"] == 15 and row["gained"] == 35
    assert (row["served"], row["missed"], row["wrong_served"]) == (2, 1, 1)
    assert row["agent_macros"] == 3 and row["partner_macros"] == 1
    assert row["score_efficiency"] == pytest.approx(35 / 3)
    assert (row["agent_key_events"], row["partner_key_events"]) == (4, 5)
    assert row["agent_contribution"] == pytest.approx(4 / 9)
    assert row["partner_contribution"] == pytest.approx(5 / 9)
    assert row["agent_occupancy"] == pytest.approx(0.6)
    assert row["partner_occupancy"] == pytest.approx(0.3)
    assert row["latency_macro"] == pytest.approx(2.0) and row["latency_macro_p50"] == 2.0
    assert row["latency_policy"] == pytest.approx(4.0) and row["latency_policy_p50"] == 4.0
    assert row["latency"] == pytest.approx(2.5) and row["decisions"] == 4  # 1, 3, 2, 4
    assert row["latency_p50"] == pytest.approx(2.5)


def test_the_score_falls_back_on_the_saved_scores_then_on_the_rewards(tmp_path: Path) -> None:
    quiet = [{k: v for k, v in tick.items() if k != "score"} for tick in TEN_TICKS]
    saved = write_cooking(tmp_path / "saved", quiet, scores={"score": 42})
    assert cooking_measures(load_session(saved)).score == 42  # type: ignore[union-attr]
    summed = write_cooking(tmp_path / "summed", quiet)
    assert cooking_measures(load_session(summed)).score == 15  # type: ignore[union-attr]


def test_an_agent_alone_has_no_partner(tmp_path: Path) -> None:
    ticks: list[dict[str, Any]] = [
        {"score": 0, "atomic": {"agent": "up"}},
        {"score": 20, "happened": [served("agent", "BeefBurger", 20, {"agent": 5})]},
        {"score": 20, "atomic": {"agent": "interact"}}, {"score": 20}]
    record = load_session(write_cooking(tmp_path / "alone", ticks, team=(("agent", "agent"),),
                                        actions={1: [("agent", "ASSEMBLE(food=\"Bread\")")]}))
    row = cooking_measures(record).row()  # type: ignore[union-attr]
    assert row["partner_role"] == "-" and row["agent_contribution"] == 1.0
    assert math.isnan(row["partner_occupancy"]) and math.isnan(row["partner_contribution"])
    assert row["agent_occupancy"] == 0.5 and row["score_efficiency"] == 20.0
    assert math.isnan(row["latency"])  # a member without a latency file measured none


def test_the_agent_is_the_chef_with_an_lm_even_second_in_the_team(tmp_path: Path) -> None:
    """A rule-based partner of kind agent, first in the team, is still the partner."""
    team = (("helper", "agent"), ("agent", "agent"), ("watcher", "agent"))
    ticks: list[dict[str, Any]] = [{"score": 0, "atomic": {"helper": "up", "watcher": "up"}},
                                   {"score": 0}]
    record = load_session(write_cooking(
        tmp_path / "second", ticks, team=team,
        usage={"agent": {"agent_type": "kitchen-act", "model": "m"}},
        spec_types={"helper": "kitchen-beef", "agent": "kitchen-act", "watcher": "x"}))
    measures = cooking_measures(record)
    assert measures is not None and (measures.agent, measures.partner) == ("agent", "helper")
    assert measures.chefs == ["helper", "agent"]  # the third member has no chef
    assert measures.row()["partner_occupancy"] == 0.5 and measures.row()["agent_occupancy"] == 0
    [session] = measure_all([record])
    assert session.system == (TASK, "kitchen-act", "m", "counter_circuit", "kitchen-beef")


def test_a_person_partner_and_an_unknown_member_type(tmp_path: Path) -> None:
    record = load_session(write_cooking(
        tmp_path / "person", [{"score": 0, "atomic": {}}],
        team=(("agent", "agent"), ("human", "person"))))
    [session] = measure_all([record])
    assert session.measures.partner == "human"
    assert session.system[-1] == "person" and session.system[2] == "-"  # no model known


def test_sessions_without_tick_info_are_not_measured(tmp_path: Path) -> None:
    todo = load_session(write_session(tmp_path / "todo", AUTONOMOUS_RUN,
                                      team=(("agent", "agent"),), agent_type="autonomous"))
    assert not is_cooking(todo) and cooking_measures(todo) is None
    bare_clock = load_session(write_cooking(tmp_path / "bare", [{"score": 3}, {}]))
    assert cooking_measures(bare_clock) is None  # a clock that says nothing of what it did
    assert measure_all([todo, bare_clock]) == []


def test_a_damaged_latency_file_is_left_out_with_a_note(tmp_path: Path) -> None:
    damaged = '{"kind": "macro", "seconds": 1}\nnot json\n{"kind": "macro", "seconds": 2}\n'
    record = load_session(ten_tick_session(tmp_path / "damaged",
                                           latency={"agent": damaged}))
    measures = cooking_measures(record)
    assert measures is not None and math.isnan(measures.row()["latency"])
    assert len(measures.notes) == 1 and "latency.jsonl" in measures.notes[0]
    assert measures.row()["score"] == 15  # the rest is measured as before


def test_a_role_named_dot_dot_reads_nothing_outside_the_session(tmp_path: Path) -> None:
    (tmp_path / "latency.jsonl").write_text(json.dumps({"kind": "macro", "seconds": 7}))
    record = load_session(write_cooking(tmp_path / "s", [{"score": 0, "atomic": {"..": "up"}}],
                                        team=(("..", "agent"),)))
    measures = cooking_measures(record)
    assert measures is not None and measures.agent is None and measures.chefs == []
    assert math.isnan(measures.row()["latency"])


# -- hostile tick info ----------------------------------------------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6)
                    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
ENTRY = st.fixed_dictionaries(
    {"kind": st.sampled_from(["served", "missed", "wrong_served", "order", "fire", "x"]) | JSON},
    optional={"reward": JSON, "credits": st.dictionaries(
        st.sampled_from(["agent", "user", "other"]), JSON, max_size=3) | JSON, "chef": JSON})
TICK = st.fixed_dictionaries({}, optional={
    "score": JSON, "happened": st.lists(ENTRY | JSON, max_size=4) | JSON,
    "atomic": st.dictionaries(st.sampled_from(["agent", "user", "x"]), JSON,
                              max_size=3) | JSON})


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ticks=st.lists(TICK, min_size=1, max_size=8))
def test_hostile_tick_info_never_raises_and_stays_in_range(tmp_path: Path,
                                                          ticks: list[dict[str, Any]]) -> None:
    directory = tmp_path / f"h{len(list(tmp_path.iterdir()))}"
    record = load_session(write_cooking(directory, [{"happened": [], **t} for t in ticks]))
    measures = cooking_measures(record)
    assert measures is not None
    row = measures.row()
    assert row["ticks"] == len(ticks)
    for name in ("served", "missed", "wrong_served", "agent_key_events", "partner_key_events"):
        assert row[name] >= 0
    for name in ("agent_occupancy", "partner_occupancy"):
        assert 0 <= row[name] <= 1
    for name in ("agent_contribution", "partner_contribution"):
        assert math.isnan(row[name]) or 0 <= row[name] <= 1
    assert row["gained"] >= 0 and math.isfinite(row["score"])
    if row["agent_key_events"] + row["partner_key_events"]:
        assert row["agent_contribution"] + row["partner_contribution"] == pytest.approx(1)


# -- the inter-quartile mean --------------------------------------------------------------------


def test_the_inter_quartile_mean_by_hand() -> None:
    runs = [200, -40, 10, 30, 20, 25, 15, 5]  # 8 runs: drop 2 at each end -> 10, 15, 20, 25
    assert interquartile_mean(runs) == 17.5
    assert interquartile_mean([-40, 10, 20, 30, 200]) == 20  # 5 runs: drop 1 at each end
    assert interquartile_mean([1, 2, 9]) == 4  # fewer than 4: all of them
    assert interquartile_mean(list(range(20))) == 9.5  # 20 runs: the middle 10 (5..14)
    assert math.isnan(interquartile_mean([])) and math.isnan(interquartile_mean([math.nan]))
    assert standard_error([1, 3]) == pytest.approx(1.0)  # sd sqrt(2), over sqrt(2)
    assert math.isnan(standard_error([5.0]))
    assert iqm_and_se([None, 2, 4, math.nan]) == (3.0, pytest.approx(1.0))


FINITE = st.floats(-1e6, 1e6, allow_nan=False)


@given(st.lists(FINITE, min_size=1, max_size=40), st.randoms(), FINITE)
def test_the_inter_quartile_mean_is_a_robust_centre(values: list[float], rng: Any,
                                                     shift: float) -> None:
    centre = interquartile_mean(values)
    assert min(values) - 1e-6 <= centre <= max(values) + 1e-6
    shuffled = list(values)
    rng.shuffle(shuffled)
    assert interquartile_mean(shuffled) == pytest.approx(centre, abs=1e-6)
    assert interquartile_mean([v + shift for v in values]) == pytest.approx(centre + shift,
                                                                           abs=1e-3)
    if len(values) >= 4:  # one run far out does not move it past the middle half
        ordered = sorted(values)
        wild = [*ordered[:-1], 1e12]
        assert interquartile_mean(wild) <= ordered[-1] + 1e-6


# -- the report -----------------------------------------------------------------------------------


def runs_of(root: Path, name: str, scores: list[int], *, agent: str, model: str,
            layout: str = "counter_circuit", seconds: float = 1.0) -> Path:
    """One run folder of ``len(scores)`` sessions of ``agent``; session ``i`` ends at score
    ``scores[i]`` after serving one BeefBurger (+20, agent 3 and user 2 key events), with one
    accepted macro action and decisions of ``seconds``."""
    folder = root / name
    for index, score in enumerate(scores):
        ticks = [{"score": 20, "happened": [served("agent", "BeefBurger", 20,
                                                   {"agent": 3, "user": 2})],
                  "atomic": {"agent": "interact"}},
                 {"score": score, "atomic": {"user": "up"}}]
        write_cooking(folder / f"{index:03d}", ticks, layout=layout,
                      actions={1: [("agent", 'SERVE(food="BeefBurger")')]},
                      usage={"agent": {"agent_type": agent, "model": model}},
                      latency={"agent": json.dumps({"kind": "policy", "seconds": seconds})},
                      spec_types={"agent": agent, "user": "kitchen-fsm"})
    return folder


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cooking")
    runs_of(root, "dpt", [-40, 10, 20, 30, 200], agent="kitchen-dpt", model="m-slow",
            seconds=3.0)
    runs_of(root, "react", [0, 5, 5, 10], agent="kitchen-react", model="m-slow", seconds=6.0)
    runs_of(root, "dpt-aa", [50, 60], agent="kitchen-dpt", model="m-slow",
            layout="asymmetric_advantages", seconds=3.0)
    return root


def test_the_summary_is_the_iqm_and_se_per_agent_layout_and_partner(experiment: Path) -> None:
    rows = {(r["agent_type"], r["layout"]): r
            for r in summary_rows(measure_all(load_session(p) for p in sorted(
                experiment.glob("*/*")) if p.is_dir()))}
    assert set(rows) == {("kitchen-dpt", "counter_circuit"), ("kitchen-react", "counter_circuit"),
                         ("kitchen-dpt", "asymmetric_advantages")}
    dpt = rows["kitchen-dpt", "counter_circuit"]
    assert dpt["runs"] == 5 and dpt["finished"] == 5 and dpt["partner"] == "kitchen-fsm"
    assert dpt["score"] == 20  # the middle of -40, 10, 20, 30, 200
    assert dpt["score_se"] == pytest.approx(standard_error([-40, 10, 20, 30, 200]))
    assert dpt["score_efficiency"] == 20 and dpt["score_efficiency_se"] == 0
    assert dpt["agent_contribution"] == pytest.approx(0.6)
    assert dpt["latency_policy"] == 3.0 and math.isnan(dpt["latency_macro"])
    assert dpt["agent_occupancy"] == 0.5 and dpt["partner_occupancy"] == 0.5
    assert rows["kitchen-react", "counter_circuit"]["score"] == 5  # 5, 5 of 0, 5, 5, 10
    assert rows["kitchen-dpt", "asymmetric_advantages"]["runs"] == 2
    assert estimate(20, 2.5) == "20.00 (2.50)" and estimate(math.nan, 1) == "-"
    assert estimate(3, math.nan) == "3.00"


def test_the_report_has_the_paper_table_csv_html_and_plot(experiment: Path,
                                                           tmp_path: Path) -> None:
    result = report(experiment, effort=False, out=tmp_path / "out")
    text = result.to_text()
    assert "Real-time cooking" in text and "Latency/policy (s)" in text
    table = result.cooking_table()
    dpt = table[(table["agent_type"] == "kitchen-dpt") & (table["layout"] == "counter_circuit")]
    assert dpt.iloc[0]["Score"].startswith("20.00 (") and dpt.iloc[0]["Latency/macro (s)"] == "-"
    with (tmp_path / "out" / "cooking.csv").open(encoding="utf-8") as rows:
        saved = list(csv.DictReader(rows))
    assert len(saved) == 3 and {"score", "score_se", "latency_policy"} <= set(saved[0])
    with (tmp_path / "out" / "cooking_sessions.csv").open(encoding="utf-8") as rows:
        assert len(list(csv.DictReader(rows))) == 11
    png = tmp_path / "out" / "score_latency.png"
    assert png.read_bytes().startswith(b"\x89PNG")
    html = result._repr_html_()
    assert "Real-time cooking" in html and 'alt="score latency"' in html
    assert "20.00 (" in html and "Agent contribution rate" in html  # a header's tooltip


def test_a_report_without_cooking_sessions_has_no_cooking_table(tmp_path: Path) -> None:
    write_session(tmp_path / "todo" / "000", AUTONOMOUS_RUN, team=(("agent", "agent"),),
                  agent_type="autonomous")
    result = report(tmp_path / "todo", effort=False)
    assert result.tables["cooking"].empty and "Real-time cooking" not in result.to_text()
    assert "score_latency" not in result.figures()


def test_the_cli_report_prints_the_cooking_table(experiment: Path, tmp_path: Path) -> None:
    ran = CliRunner().invoke(main, ["eval", "report", str(experiment / "react"),
                                    "--out", str(tmp_path / "cli")])
    assert ran.exit_code == 0, ran.output
    assert "Real-time cooking" in ran.output and "kitchen-react" in ran.output
    assert "5.00 (" in ran.output  # the IQM score and its SE
    assert (tmp_path / "cli" / "cooking.csv").is_file()
