"""The simulated user's own per-round progress ratings (effort scaling, paper 002 §4): asked with
``rate_progress``, given through our real LM client (over aiohttp) against the loopback
OpenAI-compatible server (garbage replies included), written to ``<session>/<user>/progress.jsonl``,
placed in the log's rounds, and used by the usability drop, with the judge as an option and as the
fallback."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import TeamMember
from cogym_lab.envs import make_env
from cogym_lab.envs.todo import TodoEnv
from cogym_lab.eval import load_session
from cogym_lab.eval.judging.judges import Judge
from cogym_lab.eval.metrics.effort import effort_tokens
from cogym_lab.eval.metrics.progress import user_progress
from cogym_lab.eval.metrics.rounds import split_rounds
from cogym_lab.eval.session_metrics import measure_session
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.member_node import merge_notifications
from cogym_lab.teams import load_team
from cogym_lab.teams.build import build_team
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from cogym_lab.users import Persona, SimulatedUser
from cogym_lab.users.progress import PROGRESS_FILE, read_rating, read_ratings
from tests.support.lm_scripts import TodoRolePlay, chat_lines, checklist, user_choice
from tests.support.notified import notified
from tests.support.trajectories import FOUR_ROUNDS, add, say, write_session

HIDDEN = "You will not go without: rain jacket, headlamp."
RATING_ASK = "Rating: <one number from 1 to 5>"  # the last line of the rating prompt
RATING_REPAIR = "That rating could not be used"

pytestmark = pytest.mark.usefixtures("no_ambient_lm")


def _user(server: ScriptedOpenAIServer, tmp_path: Path, rate: bool = True
          ) -> tuple[SimulatedUser, Coordinator]:
    """A simulated user (on the loopback server) in a todo session driven by hand."""
    lm = make_lm(LMConfig(model="user-lm", base_url=server.base_url, backoff=0.01,
                          max_retries=0))
    user = SimulatedUser(lm, HIDDEN, persona=Persona(rate_progress=rate))
    coordinator = Coordinator(TodoEnv(), [TeamMember(role="agent"),
                                          TeamMember(role="user", kind="user")], session_id="p")
    first = {n.recipient: n for n in notified(coordinator, coordinator.start(0.0))}
    context = first["user"].context
    assert context is not None
    user.start(context.model_copy(update={"results_dir": str(tmp_path / "user")}))
    return user, coordinator


def _to_user(coordinator: Coordinator, role: str, action: str, now: float) -> Any:
    transition = coordinator.handle(role, action, now)
    return next(n for n in notified(coordinator, transition) if n.recipient == "user")


def _lines(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "user" / PROGRESS_FILE
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# -- reading a rating ------------------------------------------------------------------------


@pytest.mark.parametrize(("reply", "rating"), [
    ("Thought: better.\nRating: 4", 4), ("Rating: 5.", 5), ("rating:2", 2),
    ("Thought: meh\nRating: **3**", 3), ("Rating: 1 (no progress)", 1)])
def test_a_rating_is_read_from_its_line(reply: str, rating: int) -> None:
    assert read_rating(reply) == rating


@pytest.mark.parametrize("reply", [
    "", "I think it went well.", "Rating: four", "Rating: 4/5", "Rating: 3.5", "Rating: 7",
    "Rating: 0", "Rating: 2 or 3", "Rating: -1", "Rating:", "Rating: 45", "```json\n{}\n```",
    "Rating: \ud83d\u2028<script>"])
def test_garbage_is_no_rating(reply: str) -> None:
    with pytest.raises(ValueError):
        read_rating(reply)


# -- the simulated user rates the rounds ------------------------------------------------------


async def _act_with(server: ScriptedOpenAIServer, user: SimulatedUser, notification: Any,
                    replies: list[str | Reply]) -> str | None:
    """``user.act`` with exactly ``replies`` scripted, every one of them used."""
    before = len(server.bodies)
    server.extend(replies)
    action = await user.act(notification)
    assert len(server.bodies) - before == len(replies)
    return action


def _hand_back(coordinator: Coordinator, action: str | None, now: float) -> Any:
    """The user's message taking effect: the notification of it the user then gets."""
    assert action is not None and action.startswith("SEND_TEAMMATE_MESSAGE(")
    return _to_user(coordinator, "user", action, now)


async def test_the_user_rates_each_round_it_hands_back_and_the_last_at_the_end(
        server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    user, coordinator = _user(server, tmp_path)
    # Round 1: the agent adds a tent and asks (the user's node hands it both events in one
    # notification, as it merges what came meanwhile); the user answers.
    asked = merge_notifications([_to_user(coordinator, "agent", add("tent"), 1.0),
                                 _to_user(coordinator, "agent", say("Is it cold there?"), 2.0)])
    answer = await _act_with(server, user, asked, ["Thought: a question.\nChoice: 1",
                                                   "Message: It rains a lot."])
    assert _lines(tmp_path) == []  # the round ends when the answer takes effect
    echo = _hand_back(coordinator, answer, 3.0)
    # Notified of its answer, the user rates the round it ended, then makes its next move.
    assert await _act_with(server, user, echo, ["Thought: a tent is a start.\nRating: 3",
                                                "Choice: 3"]) is None
    first = {"round": 1, "rating": 3, "seq": echo.seq - 1}  # the question, the round's last
    assert _lines(tmp_path) == [first] and first["seq"] == asked.seq
    rating_prompt = server.bodies[-2]["messages"]
    assert rating_prompt[-1]["content"].endswith(RATING_ASK)
    assert 'agent: ADD_ITEM(text="tent")' in rating_prompt[-1]["content"]
    assert "Is it cold there?" in rating_prompt[-1]["content"]
    assert "when the work was handed back to the agent" in rating_prompt[-1]["content"]
    assert HIDDEN in rating_prompt[0]["content"]  # rated against what only the user knows

    # Round 2: the user lets the agent work (no hand-back, no rating), then answers while the
    # agent adds a map it has not seen yet: the log puts the map in round 2, and so does the
    # user once notified of its answer. Two garbage ratings leave round 2 unrated.
    worked = _to_user(coordinator, "agent", add("stove"), 4.0)
    assert [move.name for move in user.options()] == ["ANSWER", "FEEDBACK", "NOTHING", "FINISH"]
    assert await _act_with(server, user, worked, ["Choice: 3"]) is None
    told = _to_user(coordinator, "agent", say("Anything else?"), 5.0)
    sent = await _act_with(server, user, told, ["Choice: 1", "Message: Please add a headlamp."])
    unseen = _to_user(coordinator, "agent", add("map"), 6.0)
    echo = merge_notifications([unseen, _hand_back(coordinator, sent, 7.0)])
    assert await _act_with(server, user, echo, [
        "Thought: fine.\nRating: four", "Thought: sorry.\nRating: 4/5", "Choice: 3"]) is None
    repair = server.bodies[-2]["messages"]
    assert RATING_REPAIR in repair[-1]["content"] and "four" in repair[-2]["content"]
    assert 'agent: ADD_ITEM(text="map")' in server.bodies[-3]["messages"][-1]["content"]
    assert len(_lines(tmp_path)) == 1

    # Round 3 ends with the session: the user rates it as it ends.
    final = merge_notifications([
        _to_user(coordinator, "agent", add("headlamp"), 8.0),
        next(n for n in notified(coordinator, coordinator.end(9.0, "finished"))
             if n.recipient == "user")])
    server.extend(["Thought: the headlamp is in.\nRating: 5"])
    await user.end(final)
    assert _lines(tmp_path) == [first, {"round": 3, "rating": 5, "seq": final.seq}]
    last = server.bodies[-1]["messages"][-1]["content"]
    assert 'agent: ADD_ITEM(text="headlamp")' in last and "when the session ended" in last
    usage = json.loads((tmp_path / "user" / "usage.json").read_text())
    assert usage["by_purpose"]["progress_rating"]["calls"] == 3  # rounds 1, 2 and 3
    assert usage["by_purpose"]["progress_rating:repair"]["calls"] == 1


async def test_a_failing_or_garbled_rating_call_never_costs_the_next_move(
        server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    user, coordinator = _user(server, tmp_path)
    failures: list[list[str | Reply]] = [
        [Reply(status=500)],  # an HTTP error
        [Reply(garbage=True)],  # a body that is not JSON at all
        ["The round was fine, I guess.", "```json\n{\"score\": \"good\"}\n```"],  # prose,
        [Reply(None)],  # then JSON without a rating (after the repair); a reply without text
    ]
    now = 0.0
    for number, replies in enumerate(failures, start=1):
        now += 1.0
        _to_user(coordinator, "agent", add(f"item {number}"), now)
        asked = _to_user(coordinator, "agent", say("More?"), now + 0.1)
        sent = await _act_with(server, user, asked, ["Choice: 1", f"Message: Answer {number}."])
        echo = _hand_back(coordinator, sent, now + 0.2)
        # The failed rating, then the move: the user still feedbacks, unhurt.
        move = await _act_with(server, user, echo, [*replies, "Choice: 2",
                                                    f"Message: Feedback {number}."])
        assert move == f'SEND_TEAMMATE_MESSAGE(message="Feedback {number}.")'
        assert not user.lm_failing and _lines(tmp_path) == []
        coordinator.handle("user", move, now + 0.3)  # no agent act since: no new round
    assert user.round.index == len(failures) + 1  # the count of rounds went on all the same


async def test_without_rate_progress_nothing_is_asked(server: ScriptedOpenAIServer,
                                                      tmp_path: Path) -> None:
    user, coordinator = _user(server, tmp_path, rate=False)
    _to_user(coordinator, "agent", add("tent"), 1.0)
    asked = _to_user(coordinator, "agent", say("Cold?"), 2.0)
    assert await _act_with(server, user, asked, ["Choice: 1", "Message: Yes."]) is not None
    final = next(n for n in notified(coordinator, coordinator.end(3.0, "finished"))
                 if n.recipient == "user")
    await user.end(final)
    assert len(server.bodies) == 2 and _lines(tmp_path) == []


async def test_steps_the_user_cannot_see_still_make_a_round(server: ScriptedOpenAIServer,
                                                            tmp_path: Path) -> None:
    """A private act (a search) reaches only the agent; its step count, which every member
    is sent, tells the user that the agent worked."""
    user, coordinator = _user(server, tmp_path)
    watch = user.round
    assert watch.observe(_to_user(coordinator, "agent", say("Hello"), 1.0), {"user"}) == []
    ended = watch.observe(_to_user(coordinator, "user", say("Hi"), 2.0), {"user"})
    assert [r.index for r in ended] == [1] and ended[0].acts == ['agent: SEND_TEAMMATE_MESSAGE('
                                                                 'message="Hello")']
    # The agent searches privately: nothing shown, but its count rises by two.
    quiet = _to_user(coordinator, "user", say("Still there?"), 3.0)
    assert watch.observe(quiet, {"user"}) == []  # no agent act yet: the same round goes on
    counted = quiet.model_copy(update={"step_counts": {
        **quiet.step_counts, "agent": quiet.step_counts["agent"] + 2}})
    assert watch.observe(counted, {"user"}) == [] and watch.agent_acted
    ended = watch.observe(_to_user(coordinator, "user", say("Found it?"), 4.0), {"user"})
    assert [r.index for r in ended] == [2] and ended[0].acts == []
    assert "steps of its own that you could not see" in ended[0].acts_text()


def test_the_team_file_switches_it_on(tmp_path: Path) -> None:
    team_file = tmp_path / "rating-team.toml"
    team_file.write_text(
        '[members.agent]\ntype = "collaborative"\n\n[members.user]\ntype = "simulated"\n\n'
        "[members.user.options]\nrate_progress = true\n", encoding="utf-8")
    env = make_env("todo", instance=0)
    lm = {"model": "m", "base_url": "http://127.0.0.1:9/v1"}
    members, _ = build_team(load_team(team_file), env, {"agent": lm, "user": lm})
    assert isinstance(members["user"], SimulatedUser)
    assert members["user"].persona.rate_progress is True
    members, _ = build_team(load_team("collaborative"), env, {"agent": lm, "user": lm})
    assert members["user"].persona.rate_progress is False  # off unless asked for


# -- a whole session ---------------------------------------------------------------------------


class RatingRolePlay(TodoRolePlay):
    """The todo role play, with a simulated user who also rates: 1 + the items on the list,
    at most 5; every third rating first comes back as garbage, then repaired."""

    def __init__(self) -> None:
        super().__init__()
        self.given: list[int] = []
        self.asked = 0
        self.repaired = 0

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        last = body["messages"][-1]["content"]
        if body["model"] == "user-lm" and last.endswith(RATING_ASK):
            self.asked += 1
            if self.asked % 3 == 0:
                return "Thought: hard to say.\nRating: somewhere around four"
            return self._rate(body)
        if body["model"] == "user-lm" and RATING_REPAIR in last:
            self.repaired += 1
            return self._rate(body)
        return super().__call__(body)

    def _rate(self, body: dict[str, Any]) -> str:
        items = body["messages"][0]["content"].count("- [")
        rating = min(5, 1 + items)
        self.given.append(rating)
        return f"Thought: {items} items.\nRating: {rating}"

    def plan(self, body: dict[str, Any]) -> str:
        # The agent reports after every second item and waits for the answer, so the session
        # has several hand-backs (rounds); a plain answer sends it back to work.
        lines, items = chat_lines(body), checklist(body)
        reports = sum(line.startswith("[you]") for line in lines)
        if len(items) < self.min_items:
            if lines and lines[-1].startswith("[you]"):
                return "Thought: waiting for the answer.\nDecision: 3"
            if items and len(items) % 2 == 0 and reports < len(items) // 2:
                return "Thought: report.\nDecision: 2"
            return "Thought: back to work.\nDecision: 1"
        return super().plan(body)

    def user_decide(self, body: dict[str, Any]) -> str:
        # Answer every agent message once (a hand-back each time), then finish as before.
        items, lines = checklist(body), chat_lines(body)
        if lines and lines[-1].startswith("[agent]") and len(items) < self.min_items:
            return "Thought: reply.\n" + user_choice(body, "answer")
        return super().user_decide(body)


def test_a_whole_session_leaves_one_rating_per_round(tmp_path: Path) -> None:
    play = RatingRolePlay()
    with ScriptedOpenAIServer(responder=play) as server:
        env = make_env("todo", instance=0)
        settings = {"base_url": server.base_url, "backoff": 0.01}
        members, kinds = build_team(load_team("collaborative-planning"), env, {
            "agent": {"model": "agent-lm", **settings}, "user": {"model": "user-lm", **settings}})
        members["user"] = SimulatedUser(members["user"].lm, env.hidden_information(),
                                        persona=Persona(rate_progress=True))
        Session(env, members, kinds=kinds, results_dir=tmp_path,
                config=SessionConfig(idle_seconds=2, timeout=90)).run_sync()
    written = read_ratings(tmp_path / "user")
    assert [r.rating for r in written] == play.given and written
    record = load_session(tmp_path)
    rounds = split_rounds(record)
    assert len(rounds) >= 3 and play.repaired >= 1  # hand-backs, and a repaired rating
    placed = user_progress(record, rounds)
    # Every round of the log got the user's rating: the last one given in it.
    assert placed.ratings is not None and len(placed.ratings) == len(rounds)
    starts = [r.events[0].seq for r in rounds]
    expected = {}
    for line in written:
        expected[max(i for i, s in enumerate(starts) if s <= line.seq)] = line.rating
    assert placed.ratings == [expected[i] for i in range(len(rounds))]
    # The user's effort leaves out what it wrote to rate.
    usage = record.members["user"]["usage"]
    rating_tokens = sum(row["completion_tokens"] for purpose, row in
                        usage["by_purpose"].items() if purpose.startswith("progress_rating"))
    assert rating_tokens > 0
    assert effort_tokens(record)[1] == usage["completion_tokens"] - rating_tokens


# -- the effort metrics use them -----------------------------------------------------------------

#: FOUR_ROUNDS' rounds (tests/support/trajectories.py): seqs 1-4, 5-7, 8-9, 10-13.
#: P = [0.25, 0.625, 0.625, 1.0], the first update in round 1.
ROUND_ENDS = [4, 7, 9, 13]


def _four_rounds(tmp_path: Path, lines: list[str]) -> Path:
    directory = write_session(tmp_path / "four", FOUR_ROUNDS,
                              tokens={"agent": (900, 300), "user": (500, 120)})
    (directory / "user" / PROGRESS_FILE).write_text("\n".join(lines) + "\n")
    return directory


def _line(round_: int, rating: int, seq: int) -> str:
    return json.dumps({"round": round_, "rating": rating, "seq": seq})


def _judge(server: ScriptedOpenAIServer) -> Judge:
    return Judge(make_lm(LMConfig(model="judge-lm", base_url=server.base_url, max_retries=0)))


def _judge_says(ratings: list[int]) -> str:
    return json.dumps({"ratings": [{"round": k, "rating": r}
                                   for k, r in enumerate(ratings, start=1)]})


async def test_the_usability_drop_uses_the_users_ratings(tmp_path: Path) -> None:
    # The user's ratings [2, 2, 4, 5], one at the end of each round; an earlier rating of round
    # 1 (seq 2: 5) is replaced by its later one (seq 4: 2); garbage lines are skipped.
    directory = _four_rounds(tmp_path, [
        _line(1, 5, 2), _line(1, 2, 4), "not json", '{"round": 2, "rating": 9, "seq": 7}',
        '{"round": "2", "rating": 2, "seq": 7}', _line(2, 2, 7), _line(3, 4, 9),
        _line(4, 5, 13)])
    metrics = await measure_session(load_session(directory), None, failures=False,
                                    audit=False)
    trace = metrics.effort
    assert trace is not None and trace.progress == [2, 2, 4, 5]
    assert trace.progress_source == "user"
    # tau=1: the first round rated below 3 is round 1 -> D@1 = P_1 - P_4 = 0.25 - 1.0 = -0.75
    # tau=2: rounds 1 and 2 are two in a row -> stop at 2: D@2 = 0.625 - 1.0 = -0.375
    # tau=3: never three in a row -> stays to the end: D@3 = 0
    assert trace.usability_drop(1) == pytest.approx(-0.75)
    assert trace.usability_drop(2) == pytest.approx(-0.375)
    assert trace.usability_drop(3) == 0.0
    row = metrics.row()
    assert row["progress_source"] == "user" and row["usability_drop@2"] == pytest.approx(-0.375)


async def test_the_judge_is_the_fallback_and_an_option(tmp_path: Path,
                                                       server: ScriptedOpenAIServer) -> None:
    # The user rated rounds 1, 2 and 4 but not 3 (its LM failed there): the judge rates all.
    directory = _four_rounds(tmp_path, [_line(1, 2, 4), _line(2, 2, 7), _line(4, 5, 13)])
    record = load_session(directory)
    server.responder = lambda body: _judge_says([1, 4, 4, 4])
    metrics = await measure_session(record, _judge(server), failures=False, audit=False)
    trace = metrics.effort
    assert trace is not None and trace.progress == [1, 4, 4, 4]
    assert trace.progress_source == "judge"
    assert any("rated the progress of 3 of 4 rounds; the judge's are used" in note
               for note in metrics.notes)
    # D@1 with the judge's ratings: round 1 rated 1 -> 0.25 - 1.0 = -0.75; D@2: no two in a
    # row below 3 -> 0.
    assert trace.usability_drop(1) == pytest.approx(-0.75) and trace.usability_drop(2) == 0.0
    # Without a judge, no usability drop, and the note says why.
    bare = await measure_session(record, None, failures=False, audit=False)
    assert bare.effort is not None and bare.effort.progress is None
    assert math.isnan(bare.row()["usability_drop@1"])
    assert any("no judge was given" in note for note in bare.notes)

    # Complete user ratings, but the report asks for the judge: the judge's are used.
    complete = _four_rounds(tmp_path / "b", [_line(k, 2, seq)
                                             for k, seq in enumerate(ROUND_ENDS, 1)])
    asked = len(server.bodies)
    judged = await measure_session(load_session(complete), _judge(server), failures=False,
                                   audit=False, progress="judge")
    assert judged.effort is not None and judged.effort.progress == [1, 4, 4, 4]
    assert judged.effort.progress_source == "judge"
    assert any(b["messages"][-1]["content"].count("## Round") == 4
               for b in server.bodies[asked:])
    # The same session with the default: the user's own, and no progress call to the judge.
    asked = len(server.bodies)
    own = await measure_session(load_session(complete), _judge(server), failures=False,
                                audit=False)
    assert own.effort is not None and own.effort.progress == [2, 2, 2, 2]
    assert not any("## Round" in b["messages"][-1]["content"] for b in server.bodies[asked:])
    with pytest.raises(ValueError, match="progress must be one of"):
        await measure_session(load_session(complete), None, failures=False, audit=False,
                              progress="everyone")  # type: ignore[arg-type]


def test_rating_tokens_are_not_the_users_effort(tmp_path: Path) -> None:
    directory = write_session(tmp_path / "t", FOUR_ROUNDS,
                              tokens={"agent": (900, 300), "user": (500, 120)})
    usage_file = directory / "user" / "usage.json"
    usage = json.loads(usage_file.read_text())
    usage["by_purpose"] = {"decide": {"completion_tokens": 60},
                           "answer": {"completion_tokens": 35},
                           "progress_rating": {"completion_tokens": 20},
                           "progress_rating:repair": {"completion_tokens": 5}}
    usage_file.write_text(json.dumps(usage))
    # 120 completion tokens, of which 20 + 5 rated progress: the user's effort is 95.
    assert effort_tokens(load_session(directory)) == (300, 95)
