"""The rating form's pairwise comparison with the autonomous agent (Co-Gym Appendix C.4): where
the autonomous outcome comes from (the host's baseline folders), the order the two outcomes are
shown in (drawn once per seat, kept), the answer saved through the server's endpoint and
through the kernel's wire, refused with no change when hostile, read back by the evaluation,
and the human win rate with its Wilson interval beside the LM-judged one in the report."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks
from tornado.httpclient import HTTPClientError

from cogym_lab.eval import load_session, report
from cogym_lab.eval.metrics.human_wins import (
    add_human_win_rates,
    human_win_rate,
    session_score,
    wilson_interval,
)
from cogym_lab.runtime.hosting import HostingError, SessionHost
from cogym_lab.runtime.models import PairwiseOffer, RatingRequest
from cogym_lab.runtime.pairwise import (
    NO_BASELINE_FOLDER,
    NO_MATCH,
    NOTHING_DELIVERED,
    PAIRWISE_FILE,
    find_baseline,
    make_offer,
    outcome_text,
    read_shown,
)
from cogym_lab.widgets import SessionPanel, wire
from tests.support.jupyter_api import API, as_user, server_config
from tests.support.trajectories import AUTONOMOUS_RUN, FOUR_ROUNDS, TODO_ARGS, add, write_session

HOSTILE_TEXT = "<img src=x onerror=alert(1)>\u2028\"quoted\" 🙂 " + "x" * 3000
#: Pairwise answers that are not one of the three words, and orders that are not the two sides.
BAD_CHOICES = ["OWN", "mine", "own ", "", 1, True, "none", ["own"],
               {"own": True}, "autonomous\u2028", "<script>alert(1)</script>", "tie" * 100]
BAD_ORDERS = [["own", "own"], ["own"], ["own", "autonomous", "tie"], ["a", "b"], "own,autonomous",
              [1, 2], {"0": "own"}, ["OWN", "autonomous"], True]
PERSON_TEAM = (("agent", "agent"), ("user", "person"))
AGENT_ALONE = (("agent", "agent"),)


def _autonomous(directory: Path, steps: list[tuple[str, str]] = AUTONOMOUS_RUN, *,
                env_args: dict[str, Any] | None = None, agent_type: str = "autonomous",
                trial: int | None = None) -> Path:
    """An autonomous run of the todo task written as the batch runner does."""
    folder = write_session(directory, steps, team=AGENT_ALONE, env_args=env_args,
                           agent_type=agent_type)
    if trial is not None:
        session = json.loads((folder / "session.json").read_text())
        session["batch"] = {"run": "auto", "instance": 0, "trial": trial, "seeds": {}}
        (folder / "session.json").write_text(json.dumps(session))
    return folder


# -- where the autonomous outcome comes from ----------------------------------------------------


def test_the_baseline_is_the_autonomous_run_of_the_same_task_and_instance(tmp_path: Path) -> None:
    root = tmp_path / "auto-todo"
    other_args = TODO_ARGS | {"trip": "beach"}
    _autonomous(root / "run" / "beach", env_args=other_args)  # another instance
    write_session(root / "run" / "with-a-user", FOUR_ROUNDS)  # a team with a human side
    _autonomous(root / "run" / ".replaced" / "old")  # set aside by a rerun
    _autonomous(root / "run" / "react", agent_type="react")  # alone, but not "autonomous"
    _autonomous(root / "run" / "z-trial-1", trial=1)
    _autonomous(root / "run" / "z-trial-0", [("agent", add("tent")), ("agent", "FINISH()")],
                trial=0)
    found = find_baseline([root], "todo", json.dumps(TODO_ARGS, sort_keys=True))
    assert found is not None and found.label == "auto-todo/run/z-trial-0"
    assert "tent" in json.dumps(found.outcome) and "stove" not in json.dumps(found.outcome)
    # Only the other agent type is left when the autonomous ones go: it is alone, so it counts.
    for name in ("z-trial-0", "z-trial-1"):
        (root / "run" / name / "session.json").unlink()
    found = find_baseline([root], "todo", json.dumps(TODO_ARGS, sort_keys=True))
    assert found is not None and found.label == "auto-todo/run/react"
    assert find_baseline([root], "todo", "another instance") is None
    assert find_baseline([tmp_path / "missing"], "todo", "{}") is None
    beach = find_baseline([root], "todo", json.dumps(other_args, sort_keys=True))
    assert beach is not None and beach.label == "auto-todo/run/beach"


def test_the_order_is_drawn_once_per_seat_and_kept(tmp_path: Path) -> None:
    own = write_session(tmp_path / "own", FOUR_ROUNDS, team=PERSON_TEAM)
    _autonomous(tmp_path / "auto" / "0")
    rng = random.Random(7)
    orders = {}
    for number in range(20):
        offer = make_offer(own, f"person{number}", "my outcome", [tmp_path / "auto"], rng)
        assert offer.available and [o.label for o in offer.outcomes] == ["A", "B"]
        texts = {o.side: o.text for o in offer.outcomes}
        assert texts["own"] == "my outcome" and "tent" in texts["autonomous"]
        orders[f"person{number}"] = offer.order
    assert {tuple(order) for order in orders.values()} == {("own", "autonomous"),
                                                          ("autonomous", "own")}
    # Asked again (a reload): the same order for every seat, whatever the generator says now.
    for role, order in orders.items():
        assert make_offer(own, role, "my outcome", [tmp_path / "auto"],
                          random.Random(99)).order == order
    kept = read_shown(own)
    assert {role: shown.order for role, shown in kept.items()} == orders
    assert {shown.baseline for shown in kept.values()} == {"auto/0"}
    # A file damaged by hand is drawn again rather than trusted.
    (own / PAIRWISE_FILE).write_text('{"person0": {"order": ["own", "own"]}}')
    assert read_shown(own) == {}


def test_without_a_baseline_the_form_says_why(tmp_path: Path) -> None:
    own = write_session(tmp_path / "own", FOUR_ROUNDS, team=PERSON_TEAM)
    rng = random.Random(1)
    none = make_offer(own, "user", "x", [], rng)
    assert not none.available and none.note == NO_BASELINE_FOLDER and none.outcomes == []
    _autonomous(tmp_path / "auto" / "0", env_args=TODO_ARGS | {"trip": "beach"})
    unmatched = make_offer(own, "user", "x", [tmp_path / "auto"], rng)
    assert not unmatched.available and unmatched.note == NO_MATCH
    assert not (own / PAIRWISE_FILE).exists()


def test_outcomes_are_shown_as_text() -> None:
    assert outcome_text(HOSTILE_TEXT) == HOSTILE_TEXT  # the panel escapes; nothing is lost here
    assert outcome_text({"plan": "<b>x</b>"}) == '{\n  "plan": "<b>x</b>"\n}'
    assert outcome_text(["tent", "<b>stove</b>", 3]) == "- tent\n- <b>stove</b>\n- 3"
    assert outcome_text([{"id": 1}]) == '[\n  {\n    "id": 1\n  }\n]'
    assert outcome_text(None) == outcome_text("") == outcome_text([]) == NOTHING_DELIVERED
    long = outcome_text("y" * 150_000)
    assert long.startswith("y" * 100_000) and long.endswith("(50000 more characters)")


# -- through the server's endpoints ------------------------------------------------------------


@pytest.fixture
def jp_server_config(tmp_path):
    return server_config(tmp_path / "results", "alice", "bob",
                         baseline_dirs=[str(tmp_path / "baseline")])


async def _offer(jp_fetch, session_id: str, role: Any, user: str = "alice") -> tuple[int, Any]:
    params = {} if role is None else {"role": role}
    try:
        response = await jp_fetch(*API, session_id, "pairwise", method="GET", params=params,
                                  headers=as_user(user))
    except HTTPClientError as error:
        response = error.response
    assert response is not None
    return response.code, json.loads(response.body)


async def _ended_session(api, tmp_path: Path) -> tuple[str, Path]:
    """A todo session with a person seat, ended; its results folder."""
    status, created = await api("POST", body={"task": "todo", "people": ["user"],
                                              "idle_seconds": 60})
    assert status == 201, created
    session_id = created["session_id"]
    return session_id, tmp_path / "results" / session_id


def _baseline_for(folder: Path, tmp_path: Path) -> None:
    """The autonomous run of the session's instance in the server's baseline folder."""
    env_args = json.loads((folder / "session.json").read_text())["env_args"]
    _autonomous(tmp_path / "baseline" / "auto" / "000",
                [("agent", add(HOSTILE_TEXT[:60])), ("agent", "FINISH()")], env_args=env_args)


def test_the_endpoint_offers_the_comparison_and_saves_the_answer(run, alice, bob, host,
                                                                  jp_fetch, tmp_path) -> None:
    api = alice
    async def body():
        session_id, folder = await _ended_session(api, tmp_path)
        status, early = await _offer(jp_fetch, session_id, "user")
        assert status == 409 and "has not ended" in early["message"]
        await api("DELETE", session_id)
        status, offer = await _offer(jp_fetch, session_id, "user")
        assert status == 200 and offer == {"available": False, "note": NO_MATCH,
                                           "outcomes": [], "baseline": None}
        _baseline_for(folder, tmp_path)
        status, offer = await _offer(jp_fetch, session_id, "user")
        assert status == 200 and offer["available"] and offer["baseline"] == "baseline/auto/000"
        shown = PairwiseOffer.model_validate(offer)
        texts = {o.side: o.text for o in shown.outcomes}
        assert texts["autonomous"] == f"- {HOSTILE_TEXT[:60]}"  # a checklist: one per line
        outcome = json.loads((folder / "session.json").read_text())["outcome"]
        assert texts["own"] == outcome_text(outcome)
        for _ in range(3):  # a reload shows the same order
            assert PairwiseOffer.model_validate((await _offer(jp_fetch, session_id, "user"))[1]
                                                ).order == shown.order

        # Who may ask: a seat of the session only.
        for role in ("intruder", "", "agent", "<script>alert(1)</script>", "user\u2028", None):
            status, refused = await _offer(jp_fetch, session_id, role)
            assert status == 400, (role, refused)
            assert "is not a person seat" in refused["message"]
        assert (await _offer(jp_fetch, "no-such-session", "user"))[0] == 404
        # Someone else's session: not found, for the question and for an answer alike.
        status, hidden = await _offer(jp_fetch, session_id, "user", user="bob")
        assert status == 404 and "No session" in hidden["message"]
        status, _ = await bob("POST", session_id, "rating", body={
            "role": "user", "outcome_rating": 1, "satisfaction": 1, "pairwise": "autonomous"})
        assert status == 404

        # Hostile answers are refused, naming the field, and save nothing.
        ratings_file = folder / "ratings.json"
        good = {"role": "user", "outcome_rating": 4, "satisfaction": 3}
        for choice in BAD_CHOICES:
            status, error = await api("POST", session_id, "rating", body=good | {
                "pairwise": choice})
            assert status == 400 and "pairwise" in error["message"], (choice, error)
        for order in BAD_ORDERS:
            status, error = await api("POST", session_id, "rating", body=good | {
                "pairwise": "own", "pairwise_order": order})
            assert status == 400 and "pairwise_order" in error["message"], (order, error)
        status, error = await api("POST", session_id, "rating", body=good | {
            "pairwise_order": shown.order})  # an order without an answer
        assert status == 400 and "pairwise_order" in error["message"]
        status, error = await api("POST", session_id, "rating", body=good | {
            "pairwise": "tie", "pairwise_order": list(reversed(shown.order))})
        assert status == 409 and "reload the form" in error["message"]
        assert not ratings_file.exists()

        # The answer, with the order shown and a hostile comment.
        status, saved = await api("POST", session_id, "rating", body=good | {
            "pairwise": "autonomous", "pairwise_order": shown.order, "comment": HOSTILE_TEXT})
        assert status == 201, saved
        entry = json.loads(ratings_file.read_text())["user"]
        assert entry["pairwise"] == "autonomous" and entry["pairwise_order"] == shown.order
        assert entry["pairwise_baseline"] == "baseline/auto/000"
        assert entry["comment"] == HOSTILE_TEXT
        # Without the order, the host records the order it showed.
        status, saved = await api("POST", session_id, "rating", body=good | {"pairwise": "own"})
        assert status == 201 and saved["ratings"]["user"]["pairwise_order"] == shown.order
        # And a rating without the question writes what it always wrote.
        status, saved = await api("POST", session_id, "rating", body=good)
        assert set(saved["ratings"]["user"]) == {"outcome_rating", "satisfaction", "comment",
                                                 "ts"}
        # The evaluation reads the answer back.
        await api("POST", session_id, "rating", body=good | {"pairwise": "tie"})
        record = load_session(folder)
        assert record.ratings["user"].pairwise == "tie"
        assert record.ratings["user"].pairwise_order == shown.order
        assert session_score(record) == 0.5

    run(body())


def test_an_answer_to_a_question_never_shown_is_refused(run, alice, host, tmp_path) -> None:
    api = alice

    async def body():
        session_id, folder = await _ended_session(api, tmp_path)
        await api("DELETE", session_id)
        _baseline_for(folder, tmp_path)
        status, error = await api("POST", session_id, "rating", body={
            "role": "user", "outcome_rating": 4, "satisfaction": 3, "pairwise": "own"})
        assert status == 409 and "no comparison" in error["message"]
        assert not (folder / "ratings.json").exists()
        with pytest.raises(HostingError) as refused:
            host.rate(session_id, "user", 4, 3, pairwise="own")
        assert refused.value.status == 409
        with pytest.raises(HostingError, match="pairwise"):
            host.rate(session_id, "user", 4, 3, pairwise="OWN")

    run(body())


# -- through the kernel's wire (local mode) ------------------------------------------------------


async def test_the_kernel_relays_the_question_and_the_answer(tmp_path: Path, comms) -> None:
    host = SessionHost(tmp_path / "results", baselines=[tmp_path / "baseline"])
    try:
        hosted = await host.create("todo", people=["user"], idle_seconds=60)
        session_id = hosted.session_id
        panel = SessionPanel.for_local(host, session_id, "user")
        channel = next(c for c in comms if c.comm_id == panel.comm.comm_id)
        channel.from_browser({"type": "pairwise", "id": 1})
        early = await channel.until(lambda m: m.get("type") == "pairwise_error")
        assert early["id"] == 1 and "has not ended" in early["error"]
        await host.end(session_id)
        folder = tmp_path / "results" / session_id
        _baseline_for(folder, tmp_path)
        channel.from_browser({"type": "pairwise", "id": 2})
        answer = await channel.until(lambda m: m.get("type") == "pairwise_offer")
        assert answer["id"] == 2
        offer = PairwiseOffer.model_validate(answer["offer"])
        assert offer.available and sorted(offer.order) == ["autonomous", "own"]

        channel.from_browser({"type": "rating", "id": 3, "outcome_rating": 5,
                              "satisfaction": 4, "pairwise": "OWN"})
        refused = await channel.until(lambda m: m.get("type") == "rating_error")
        assert refused["id"] == 3 and "pairwise" in refused["error"]
        channel.from_browser({"type": "rating", "id": 4, "outcome_rating": 5,
                              "satisfaction": 4, "pairwise": "own",
                              "pairwise_order": offer.order})
        rated = await channel.until(lambda m: m.get("type") == "rated")
        assert rated["id"] == 4 and rated["ratings"]["user"]["pairwise"] == "own"
        assert json.loads((folder / "ratings.json").read_text())["user"][
            "pairwise_order"] == offer.order
        panel.close()

        watcher = SessionPanel.for_local(host, session_id, "user", readonly=True)
        watching = next(c for c in comms if c.comm_id == watcher.comm.comm_id)
        watching.from_browser({"type": "pairwise", "id": 5})
        refused = await watching.until(lambda m: m.get("type") == "pairwise_error")
        assert refused["id"] == 5 and "only watches user" in refused["error"]
        watcher.close()
    finally:
        await host.close()


def test_the_wire_and_the_request_models_check_the_answer() -> None:
    message = wire.FROM_PANEL.validate_python({"type": "pairwise", "id": 9})
    assert isinstance(message, wire.PairwiseRequest)
    rating = wire.FROM_PANEL.validate_python({
        "type": "rating", "id": 1, "outcome_rating": 3, "satisfaction": 3, "pairwise": 4})
    assert isinstance(rating, wire.RatingMessage) and rating.pairwise == 4  # checked by rate()
    for choice in BAD_CHOICES:
        with pytest.raises(ValueError, match="pairwise"):
            RatingRequest.model_validate({"role": "user", "outcome_rating": 3,
                                          "satisfaction": 3, "pairwise": choice})


# -- the human win rate -------------------------------------------------------------------------


def test_the_wilson_interval_by_hand() -> None:
    z = 1.959963984540054
    # 3 wins, 1 tie, 1 loss over 5 sessions: p = (3 + 0.5) / 5 = 0.7.
    # centre = (0.7 + z²/10) / (1 + z²/5) = (0.7 + 0.384146) / 1.768292 = 0.613104
    # half = z / 1.768292 * sqrt(0.7 * 0.3 / 5 + z²/100) = 1.108394 * sqrt(0.080415) = 0.314312
    # -> [0.613104 - 0.314312, 0.613104 + 0.314312] = [0.298791, 0.927416]
    low, high = wilson_interval(3.5, 5)
    assert (low, high) == pytest.approx((0.298791, 0.927416), abs=1e-6)
    centre = (0.7 + z * z / 10) / (1 + z * z / 5)
    assert (low + high) / 2 == pytest.approx(centre)
    # Table 4's travel planning: 43 of 50 -> Wilson [0.738, 0.930]; the paper's [0.764, 0.956]
    # is the normal interval 0.86 ± 1.96 * sqrt(0.86 * 0.14 / 50) = 0.86 ± 0.0962.
    assert wilson_interval(43, 50) == pytest.approx((0.7381, 0.9305), abs=1e-4)
    assert 0.86 - z * math.sqrt(0.86 * 0.14 / 50) == pytest.approx(0.764, abs=1e-3)
    # Every answer the same: the interval keeps a width (Wald's would be [1, 1]).
    # 5 of 5: low = n / (n + z²) = 5 / 8.841459 = 0.565518, high = 1.
    assert wilson_interval(5, 5) == pytest.approx((0.565518, 1.0), abs=1e-6)
    assert wilson_interval(0, 5) == pytest.approx((0.0, 0.434482), abs=1e-6)
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


def _rated(directory: Path, *answers: str | None, agent_type: str = "collaborative") -> Path:
    """A session with a person seat per answer (``None``: that person skipped the question)."""
    team = (("agent", "agent"), *((f"p{n}", "person") for n in range(len(answers))))
    ratings = {f"p{n}": {"outcome_rating": 4, "satisfaction": 4, "ts": 1.0,
                         **({"pairwise": answer} if answer else {})}
               for n, answer in enumerate(answers)}
    return write_session(directory, [("agent", add("tent")), ("p0", "FINISH()")], team=team,
                         ratings=ratings, agent_type=agent_type)


def test_the_human_win_rate_on_hand_built_ratings(tmp_path: Path) -> None:
    sessions = [load_session(_rated(tmp_path / name, *answers)) for name, answers in [
        ("a", ("own",)), ("b", ("own",)), ("c", ("own", "tie")),  # c: (1 + 0.5) / 2 = 0.75
        ("d", ("autonomous",)), ("e", ("tie",)), ("f", (None,)), ("g", ())]]
    scores = [session_score(record) for record in sessions]
    assert scores == [1.0, 1.0, 0.75, 0.0, 0.5, None, None]  # f, g: nobody answered
    rate = human_win_rate(sessions)
    # n = 5 sessions, wins (1 + 1 + 0.75 + 0 + 0.5) = 3.25 -> 0.65; c counts neither as a win
    # nor as a tie (0.75).
    assert (rate.n, rate.wins, rate.ties, rate.losses) == (5, 2, 1, 1)
    assert rate.win_rate == pytest.approx(0.65)
    assert (rate.ci_low, rate.ci_high) == pytest.approx(wilson_interval(3.25, 5))
    assert math.isnan(human_win_rate(sessions[5:]).win_rate)

    # Beside the LM-judged columns of an existing row; a row of its own when there is none.
    rows = add_human_win_rates([{"task": "todo", "agent_type": "collaborative", "model": "m",
                                 "win_rate": 0.5}],
                               {("todo", "collaborative", "m"): sessions,
                                ("todo", "other", "m"): sessions[:2],
                                ("todo", "silent", "m"): sessions[5:]}, ["task", "agent_type",
                                                                        "model"])
    assert len(rows) == 2 and rows[0]["win_rate"] == 0.5
    assert rows[0]["human_rated"] == 5 and rows[0]["human_win_rate"] == pytest.approx(0.65)
    # other: 2 of 2 own -> 1.0, Wilson [2 / (2 + z²), 1] = [0.342, 1]
    assert rows[1]["agent_type"] == "other" and rows[1]["human_win_rate"] == 1.0
    assert rows[1]["human_win_ci_low"] == pytest.approx(2 / (2 + 1.959963984540054 ** 2))


def test_the_report_shows_the_human_win_rate_beside_the_judged_one(tmp_path: Path) -> None:
    collaborative = tmp_path / "collab"
    for number, answer in enumerate(["own", "own", "tie", "autonomous"]):
        _rated(collaborative / f"{number:03d}", answer)
    _autonomous(tmp_path / "auto" / "000")
    result = report([collaborative, tmp_path / "auto"], effort=False, failures=False,
                    audit=False)
    table = result.tables["comparison"]
    row = table[table["agent_type"] == "collaborative"].iloc[0]
    # (1 + 1 + 0.5 + 0) / 4 = 0.625; Wilson of 2.5 of 4.
    assert row["human_rated"] == 4 and row["human_win_rate"] == pytest.approx(0.625)
    assert (row["human_win_ci_low"], row["human_win_ci_high"]) == pytest.approx(
        wilson_interval(2.5, 4))
    assert math.isnan(row["win_rate"])  # no judge: the LM-judged rate is missing beside it
    text = result.to_text()
    assert "human_win_rate" in text and "Wilson" in text
    assert "human_win_rate" in result._repr_html_()
