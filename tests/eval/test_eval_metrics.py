"""Every evaluation metric on hand-built trajectories, against values worked out by hand."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from scipy import stats

from cogym_lab.eval import load_session
from cogym_lab.eval.judging.failures import prevalence, verified_evidence
from cogym_lab.eval.judging.labels import FailureAnnotation, FailureFinding, MessageLabel
from cogym_lab.eval.metrics.autonomy import controlled_autonomy, party_actions, user_env_act_ratio
from cogym_lab.eval.metrics.effort import (
    EffortTrace,
    carry_forward,
    effort_tokens,
    scaling_curve,
    stop_round,
    summarise,
)
from cogym_lab.eval.metrics.initiative import initiative_entropy, initiative_shares
from cogym_lab.eval.metrics.outcome import (
    bootstrap_win_rate,
    collab_score,
    delivered_performance,
    mean_and_se,
    paired_test,
    performance_scale,
    win_score,
)
from cogym_lab.eval.metrics.rounds import ReplayFailed, grade_rounds, split_rounds
from cogym_lab.eval.session_metrics import SessionMetrics
from cogym_lab.records.trajectory import find_sessions
from tests.support.trajectories import (
    AUTONOMOUS_RUN,
    FOUR_ROUNDS,
    add,
    confirm,
    say,
    write_session,
)

# -- initiative entropy (Co-Gym Equation 1) ------------------------------------------------------


def test_initiative_entropy_reproduces_the_papers_worked_examples() -> None:
    # 5/11 vs 6/11: -(5/11 log2 5/11 + 6/11 log2 6/11) = 0.4545*1.1375 + 0.5455*0.8745 = 0.994
    assert initiative_entropy({"agent": 5, "user": 6}, ["agent", "user"]) == \
        pytest.approx(0.994, abs=5e-4)
    # 1/4 vs 3/4: -(0.25 log2 0.25 + 0.75 log2 0.75) = 0.5 + 0.311 = 0.811
    assert initiative_entropy({"agent": 1, "user": 3}, ["agent", "user"]) == \
        pytest.approx(0.811, abs=5e-4)
    # 5/5 vs 0/5: one party has zero share, so H_init = 0 by definition
    assert initiative_entropy({"agent": 5, "user": 0}, ["agent", "user"]) == 0.0


def test_initiative_entropy_counts_only_team_members() -> None:
    # The environment is not a party: its count changes nothing (still 1/4 vs 3/4).
    assert initiative_entropy({"agent": 1, "user": 3, "env": 40}, ["agent", "user"]) == \
        pytest.approx(0.811, abs=5e-4)
    # A member with no count at all has zero share.
    assert initiative_entropy({"agent": 4}, ["agent", "user"]) == 0.0
    # Three parties use log base 3: equal thirds give exactly 1.
    assert initiative_entropy({"a": 2, "b": 2, "c": 2}, ["a", "b", "c"]) == pytest.approx(1.0)
    # Nobody took initiative: undefined, unless a protocol says otherwise (the release: 0).
    assert math.isnan(initiative_entropy({}, ["agent", "user"]))
    assert initiative_entropy({}, ["agent", "user"], without_initiative=0.0) == 0.0
    assert initiative_shares({"agent": 1, "user": 3}, ["agent", "user"]) == \
        {"agent": 0.25, "user": 0.75}


@pytest.mark.parametrize("protocol", ["cogym", "cogym_lab"])
def test_a_session_without_initiative_follows_its_protocol(tmp_path: Path, protocol: str) -> None:
    steps = [("agent", say("Hello.")), ("user", say("Hi.")), ("user", "FINISH()")]
    record = load_session(write_session(tmp_path / "s", steps, protocol=protocol))
    labels = [MessageLabel(n=1), MessageLabel(n=2)]  # the judge: nobody took initiative
    row = SessionMetrics(record, labels=labels).row()
    assert row["protocol"] == protocol
    if protocol == "cogym":
        assert row["h_init"] == 0.0  # the release counts it as 0 ...
    else:
        assert math.isnan(row["h_init"])  # ... cogym_lab leaves it undefined (out of the mean)


# -- reading results directories ------------------------------------------------------------------


def test_load_session_reads_events_messages_tokens_and_ratings(tmp_path: Path) -> None:
    path = write_session(tmp_path / "run" / "0", FOUR_ROUNDS, tokens={"agent": (100, 40),
                                                                       "user": (50, 10)},
                         ratings={"user": {"outcome_rating": 4, "satisfaction": 5,
                                           "comment": "good"}})
    (tmp_path / "run" / "run.json").write_text('{"config": {"team": "collaborative"}}')
    record = load_session(path)
    assert record.task == "todo" and record.finished and record.delivered
    assert record.kinds == {"agent": "agent", "user": "user"}
    assert record.agent_roles == ["agent"] and record.human_roles == ["user"]
    assert record.agent_type == "collaborative" and record.model == "scripted"
    assert record.run_name == "run"
    assert record.outcome == ["tent", "stove", "headlamp", "rain jacket"]
    assert record.performance == 1.0  # coverage 2/2, size 4/4
    assert len(record.events) == 13
    assert [m.sender for m in record.messages] == ["agent", "user", "agent", "user", "agent",
                                                    "user"]
    assert record.messages[1].text == "Please add a headlamp."
    assert record.tokens["agent"].completion == 40 and record.tokens["user"].total == 60
    assert record.ratings["user"].satisfaction == 5
    assert record.rating_values("outcome_rating") == [4]
    assert find_sessions([tmp_path / "run"]) == [path]
    assert find_sessions([path]) == [path]


def test_a_crashed_session_is_read_up_to_its_last_whole_line(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s", FOUR_ROUNDS[:4], end=None)
    with (path / "events.jsonl").open("a") as log:
        log.write('{"seq": 99, "time": 1')  # cut short
    record = load_session(path)
    assert record.status == "running" and not record.finished
    assert len(record.events) == 5  # start, 3 agent acts, 1 user message
    with pytest.raises(FileNotFoundError):
        load_session(tmp_path / "nowhere")


# -- outcome metrics ------------------------------------------------------------------------------


def test_delivery_performance_and_collab_score(tmp_path: Path) -> None:
    done = load_session(write_session(tmp_path / "a", AUTONOMOUS_RUN))
    empty = load_session(write_session(tmp_path / "b", [("agent", "FINISH()")]))
    assert done.delivered and done.performance == 0.25  # (0/2 + 2/4) / 2
    assert not empty.delivered and math.isnan(empty.performance)
    assert collab_score(done.delivered, done.performance) == 0.25
    assert collab_score(empty.delivered, empty.performance) == 0.0
    # Task performance averages the delivered sessions only.
    assert delivered_performance([done, empty]) == [0.25]
    mean, se = mean_and_se([0.25, 0.75])  # sd = 0.3536, se = 0.3536 / sqrt(2) = 0.25
    assert mean == 0.5 and se == pytest.approx(0.25)


def test_win_scores_and_bootstrap_interval() -> None:
    assert win_score(True, False, None) == 1.0  # only the collaborative side delivered
    assert win_score(False, True, "A") == 0.0
    assert win_score(False, False, "A") is None
    assert win_score(True, True, "tie") == 0.5
    assert win_score(True, True, None) is None
    everything = bootstrap_win_rate([1.0] * 10)
    assert (everything.win_rate, everything.ci_low, everything.ci_high) == (1.0, 1.0, 1.0)
    # 7 wins, 1 tie, 2 losses: (7 + 0.5) / 10 = 0.75, and the interval holds it.
    mixed = bootstrap_win_rate([1.0] * 7 + [0.5] + [0.0] * 2)
    assert mixed.n == 10 and mixed.win_rate == 0.75
    assert 0.4 < mixed.ci_low < 0.75 < mixed.ci_high <= 1.0
    assert bootstrap_win_rate([1.0] * 7 + [0.5] + [0.0] * 2) == mixed  # seeded: reproducible


def test_paired_t_test_and_mcnemar() -> None:
    system, baseline = [0.9, 0.8, 0.7, 0.95], [0.5, 0.6, 0.7, 0.6]
    result = paired_test(system, baseline)
    expected = stats.ttest_rel(system, baseline)
    assert result.test == "paired t-test"
    assert result.p_value == pytest.approx(expected.pvalue)
    assert result.mean_difference == pytest.approx((0.4 + 0.2 + 0 + 0.35) / 4)
    # A pass-or-fail score: McNemar's exact test on the discordant pairs. Here the system alone
    # passes 6 instances and the baseline alone 0: p = 2 * 0.5^6 = 0.03125.
    binary = paired_test([1] * 6 + [1, 0], [0] * 6 + [1, 0], "dichotomous")
    assert binary.test == "McNemar (exact)" and binary.statistic == 6
    assert binary.p_value == pytest.approx(0.03125)
    assert paired_test([1.0], [0.0]).test == "-"
    with pytest.raises(ValueError, match="unknown scale"):
        paired_test([1, 0], [0, 1], "binary")  # type: ignore[arg-type]


def test_the_test_follows_the_declared_scale_not_the_values() -> None:
    # Tabular Analysis under cogym: one instance's recall is 0.5 (one of two hypotheses found).
    # The test stays a pass/fail one: the pairs are compared by which side scored higher (the
    # exact sign test: McNemar's, where every score is 0 or 1), never silently a t-test.
    system, baseline = [1, 1, 1, 1, 1, 0.5, 1, 0], [0, 0, 0, 0, 0, 0, 1, 1]
    partial = paired_test(system, baseline, "dichotomous")
    assert partial.test == "sign test (exact)"
    assert partial.statistic == 6 and partial.p_value == pytest.approx(
        stats.binomtest(6, 7, 0.5).pvalue)  # 6 pairs for the system, 1 against, 1 tie
    # A graded score whose values happen to be 0 or 1 is t-tested all the same.
    graded = paired_test([1, 1, 0, 1], [0, 1, 0, 0], "graded")
    assert graded.test == "paired t-test"
    assert graded.p_value == pytest.approx(stats.ttest_rel([1, 1, 0, 1], [0, 1, 0, 0]).pvalue)


def test_each_task_declares_its_performance_scale() -> None:
    assert performance_scale("tabular_analysis", "cogym") == "dichotomous"  # Co-Gym Table 3
    assert performance_scale("tabular_analysis", "cogym_lab") == "graded"
    for task in ("travel_planning", "related_work", "todo"):
        assert performance_scale(task, "cogym") == "graded"
    assert performance_scale("no_such_task", "cogym") == "graded"


# -- process metrics ------------------------------------------------------------------------------


def test_party_actions_and_user_env_act_ratio(tmp_path: Path) -> None:
    steps = [
        ("agent", add("tent")),
        ("user", add("map")),  # the user acts on the workspace directly
        ("user", say("I added a map; please add a headlamp.")),
        ("agent", add("headlamp")),
        ("agent", "WAIT_TEAMMATE_CONTINUE()"),
        ("agent", add("tent")),  # refused: already listed
        ("user", add("torch")),
        ("user", "FINISH()"),
    ]
    record = load_session(write_session(tmp_path / "s", steps))
    actions = party_actions(record)
    assert (actions["agent"].task_actions, actions["agent"].collaboration_acts,
            actions["agent"].waits, actions["agent"].refused) == (2, 0, 1, 1)
    assert (actions["user"].task_actions, actions["user"].collaboration_acts,
            actions["user"].messages) == (2, 2, 1)
    # User: 2 task actions (map, torch) over 2 + 2 collaboration acts (message, finish) = 0.5
    assert user_env_act_ratio(record) == 0.5
    silent = load_session(write_session(tmp_path / "t", AUTONOMOUS_RUN))
    assert math.isnan(user_env_act_ratio(silent))


def test_controlled_autonomy_from_the_log_and_from_message_labels(tmp_path: Path) -> None:
    steps = [
        ("agent", confirm(add("stove"))),
        ("user", 'ACCEPT_CONFIRMATION(request_id="c1")'),  # answered
        ("agent", confirm(add("tent"))),
        ("user", 'REJECT_CONFIRMATION(request_id="c2")'),  # answered
        ("agent", confirm(add("map"))),  # never answered
        ("agent", say("Shall I add a headlamp?")),  # M1: a confirmation question, answered
        ("user", say("Yes please.")),  # M2
        ("agent", say("Should I also add a chair?")),  # M3: a question never answered
        ("agent", say("Adding a chair now.")),  # M4
        ("user", say("Stop, no chair!")),  # M5: a halt
        ("user", "PAUSE_AGENT()"),  # a halt
        ("user", "FINISH()"),
    ]
    record = load_session(write_session(tmp_path / "s", steps))
    assert record.outcome == ["stove"]  # the accepted request ran as the agent's action
    assert party_actions(record)["agent"].task_actions == 1
    formal = controlled_autonomy(record)
    assert (formal.confirmation_requests, formal.confirmations_answered, formal.halts) == \
        (3, 2, 1)
    labels = [MessageLabel(n=1, confirmation=True), MessageLabel(n=2, confirms=True),
              MessageLabel(n=3, confirmation=True), MessageLabel(n=4),
              MessageLabel(n=5, halt=True)]
    judged = controlled_autonomy(record, labels)
    # 3 formal + 2 judged questions; 2 formal + 1 judged answered; 1 pause + 1 judged halt.
    assert (judged.confirmation_requests, judged.confirmations_answered, judged.halts) == \
        (5, 3, 2)
    # The Co-Gym release (protocol "cogym", this session's): CA+ is M1, answered by M2 right
    # away (M3's next message is the agent's own M4); CA- is M5 alone, reported apart.
    assert judged.rule == "release_counts" and judged.total == 1
    assert judged.reported_halts == 1
    # cogym_lab's own rule: 3 answered confirmations + 2 halts.
    lab = controlled_autonomy(record, labels, rule="answered_and_halts")
    assert lab.total == 5 and lab.reported_halts == 2


def test_controlled_autonomy_under_cogym_is_what_the_release_counts(tmp_path: Path) -> None:
    """CA+ and CA- as the Co-Gym release computes them. The expected numbers (CA+ 2, CA- 1) are
    what the release's own ``AnalyzeControlledAutonomy.forward``
    (``collaborative_gym/eval/controlled_autonomy.py``) returned when run, outside this
    repository, on the event log this trajectory makes under its ``TaskEnvNode`` (waits are not
    logged; messages are its "collaborative" events), with its two LM judges replaced by the
    verdicts the labels below give: effective confirmation "Yes" for (M1, M2) and (M8, M9) and
    "No" for (M6, M7), the only pairs it asked about; halting "Yes" for M5 alone."""
    steps = [
        ("agent", say("Shall I add a headlamp?")),  # M1: answered right away, yes
        ("agent", "WAIT_TEAMMATE_CONTINUE()"),  # not an event of the release: M2 still next
        ("user", say("Yes please.")),  # M2
        ("agent", add("headlamp")),
        ("agent", say("Should I also add a chair?")),  # M3: the agent speaks next, not counted
        ("agent", say("Adding a chair now.")),  # M4
        ("user", say("Stop, no chair!")),  # M5: a halt (CA-)
        ("agent", say("Which colour do you like?")),  # M6: the reply does not answer it
        ("user", say("I want to go camping.")),  # M7
        ("agent", say("Would you like a map? Or a torch.")),  # M8: answered with a no
        ("user", add("tent")),  # a task action between: the release reads messages only
        ("user", say("No thanks, neither.")),  # M9
        ("agent", say("Done. Anything else")),  # M10: no "?", so never a question
        ("user", say("No.")),  # M11: the judge would say it answers; M10 asked nothing
        ("user", "FINISH()"),
    ]
    record = load_session(write_session(tmp_path / "s", steps, protocol="cogym"))
    labels = [MessageLabel(n=n) for n in range(1, 12)]
    for n in (2, 9, 11):
        labels[n - 1] = MessageLabel(n=n, confirms=True)
    labels[4] = MessageLabel(n=5, halt=True)
    for n in (1, 3, 8):
        labels[n - 1] = MessageLabel(n=n, confirmation=True)
    result = controlled_autonomy(record, labels)
    assert (result.total, result.reported_halts) == (2, 1)  # the release's CA+ and CA-
    row = SessionMetrics(record, labels=labels).row()
    assert (row["controlled_autonomy"], row["halts"]) == (2, 1)  # reported apart
    # cogym_lab: M1 and M8 were answered by a human before the agent spoke again, M3 was not
    # (the agent's M4 came first), plus the halt: 2 + 1.
    assert controlled_autonomy(record, labels, rule="answered_and_halts").total == 3


# -- collaborative effort scaling ------------------------------------------------------------------


async def test_rounds_split_at_human_collaboration_acts_and_are_graded(tmp_path: Path) -> None:
    record = load_session(write_session(tmp_path / "s", FOUR_ROUNDS))
    rounds = split_rounds(record)
    # Round 1: start + 3 agent acts; each user message after agent activity opens a round;
    # the user's FINISH and the END stay in round 4.
    assert [[e.seq for e in r.events] for r in rounds] == [[1, 2, 3, 4], [5, 6, 7], [8, 9],
                                                          [10, 11, 12, 13]]
    graded = await grade_rounds(record, rounds)
    assert [g.changed for g in graded] == [True, True, False, True]
    assert [g.agent_changed for g in graded] == [True, True, False, True]
    # {tent, stove}: (0 + 2/4)/2 = 0.25; + headlamp: (1/2 + 3/4)/2 = 0.625; + rain jacket: 1.0
    scores = [g.scores["performance"] if g.changed else None for g in graded]
    assert scores == [0.25, 0.625, None, 1.0]
    assert carry_forward(scores) == [0.25, 0.625, 0.625, 1.0]


def test_consecutive_human_acts_stay_in_one_round(tmp_path: Path) -> None:
    steps = [("user", say("Hi, I need rain gear.")), ("user", say("And a headlamp.")),
             ("agent", add("rain jacket")), ("user", say("Thanks.")), ("user", say("More?"))]
    record = load_session(write_session(tmp_path / "s", steps))
    # Messages before any agent activity belong to round 1; two in a row share a round.
    assert [[e.seq for e in r.events] for r in split_rounds(record)] == [[1, 2, 3, 4],
                                                                         [5, 6, 7]]


async def test_a_log_that_does_not_replay_gives_no_grades(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s", FOUR_ROUNDS)
    lines = (path / "events.jsonl").read_text().splitlines()
    (path / "events.jsonl").write_text("\n".join(lines[:1] + lines[2:]) + "\n")  # drop seq 2
    record = load_session(path)
    with pytest.raises(ReplayFailed):
        await grade_rounds(record, split_rounds(record))


def test_refinement_gain_and_usability_drop_by_hand() -> None:
    # P = [0.25, 0.625, 0.625, 1.0], first update in round 1, progress ratings [2, 2, 4, 5].
    trace = EffortTrace([0.25, 0.625, 0.625, 1.0], first_update=1, progress=[2, 2, 4, 5])
    assert (trace.utility_first_update, trace.utility_final, trace.utility_max) == \
        (0.25, 1.0, 1.0)
    assert trace.refinement_gain == 0.75  # max P - P_1 = 1.0 - 0.25
    # tau=1: round 1 is unsatisfactory (2 < 3), so the person stops there: 0.25 - 1.0
    # tau=2: rounds 1-2 are two unsatisfactory rounds in a row: stop at 2: 0.625 - 1.0
    # tau=3: never three in a row: stays to the end: 1.0 - 1.0
    assert [stop_round(trace.progress, tau) for tau in (1, 2, 3)] == [1, 2, 4]
    assert [trace.usability_drop(tau) for tau in (1, 2, 3)] == [-0.75, -0.375, 0.0]
    assert math.isnan(EffortTrace([0.5]).usability_drop(1))  # no ratings, no drop


def test_refinement_gain_is_overall_minus_first_when_no_agent_updated() -> None:
    # The user alone changed the outcome (rounds 2 and 3); no agent update: no first update to
    # refine, so P_k' is the overall utility and the gain 0.
    user_only = EffortTrace([0.0, 0.4, 0.6])
    assert (user_only.utility_first_update, user_only.utility_max) == (0.6, 0.6)
    assert user_only.refinement_gain == 0.0
    untouched = EffortTrace([0.0, 0.0])  # nobody changed anything
    assert (untouched.utility_first_update, untouched.refinement_gain) == (0.0, 0.0)
    assert math.isnan(EffortTrace([]).refinement_gain)  # no rounds at all
    # Over sessions, mean G = mean overall - mean first, with every session counted.
    traces = [EffortTrace([0.25, 0.625, 0.625, 1.0], first_update=1), user_only, untouched]
    summary = summarise(traces)
    assert summary["refinement_gain"] == pytest.approx(
        summary["utility_overall"] - summary["utility_first_update"])
    assert summary["utility_first_update"] == pytest.approx((0.25 + 0.6 + 0.0) / 3)
    assert summary["refinement_gain"] == pytest.approx(0.75 / 3)


async def test_a_session_without_an_agent_update_has_first_equal_overall(tmp_path: Path) -> None:
    from cogym_lab.eval.session_metrics import measure_session

    steps = [("agent", say("What do you need?")), ("user", add("tent")),
             ("agent", say("Anything else?")), ("user", add("stove")), ("user", "FINISH()")]
    record = load_session(write_session(tmp_path / "s", steps))
    row = (await measure_session(record, None, failures=False, audit=False)).row()
    assert row["utility_first_update"] == row["utility_overall"] > 0
    assert row["refinement_gain"] == 0.0


def test_effort_summary_across_sessions_by_hand() -> None:
    first = EffortTrace([0.25, 0.625, 0.625, 1.0], first_update=1, progress=[2, 2, 4, 5])
    second = EffortTrace([0.0, 0.5], first_update=2, progress=[3, 3])
    summary = summarise([first, second])
    # first updates: 0.25 and 0.5 -> 0.375; finals 1.0 and 0.5 -> 0.75; max 1.0, 0.5 -> 0.75
    assert summary["utility_first_update"] == 0.375
    assert summary["utility_final"] == 0.75 and summary["utility_overall"] == 0.75
    # G: 0.75 and 0.0 -> 0.375; relative: 0.375 / 0.375 = 1.0
    assert summary["refinement_gain"] == 0.375 and summary["refinement_gain_rel"] == 1.0
    # D@1: -0.75 and 0 -> -0.375; relative to the mean final utility: -0.375 / 0.75 = -0.5
    assert summary["usability_drop@1"] == -0.375 and summary["usability_drop@1_rel"] == -0.5
    assert summary["usability_drop@2"] == -0.1875 and summary["usability_drop@3"] == 0.0
    assert summary["rounds"] == 3.0


def test_scaling_curve_by_hand() -> None:
    curve = scaling_curve([EffortTrace([0.25, 0.625, 0.625, 1.0]), EffortTrace([0.25])])
    assert [p["round"] for p in curve] == [0, 1, 2, 3, 4]
    assert [p["running"] for p in curve] == [2, 2, 1, 1, 1]
    # The ended session keeps its final 0.25: round 2 averages 0.625 and 0.25 = 0.4375, with
    # SE = sd(0.625, 0.25) / sqrt(2) = 0.2652 / 1.4142 = 0.1875.
    assert [p["mean"] for p in curve] == [0.0, 0.25, 0.4375, 0.4375, 0.625]
    assert curve[2]["se"] == pytest.approx(0.1875)


def test_effort_tokens_and_a_persons_words(tmp_path: Path) -> None:
    simulated = load_session(write_session(tmp_path / "a", FOUR_ROUNDS,
                                           tokens={"agent": (900, 300), "user": (400, 60)}))
    assert effort_tokens(simulated) == (300, 60)
    person = load_session(write_session(
        tmp_path / "b", [("user", say("one two three")), ("agent", add("tent"))],
        team=(("agent", "agent"), ("user", "person")), tokens={"agent": (10, 7)}))
    # A person has no LM: their effort is the words of their acts,
    # 'SEND_TEAMMATE_MESSAGE(message="one two three")' -> 3 words.
    assert effort_tokens(person) == (7, 3)


# -- failure analysis -----------------------------------------------------------------------------


def test_failure_prevalence_and_evidence_check(tmp_path: Path) -> None:
    record = load_session(write_session(tmp_path / "s", FOUR_ROUNDS))
    found = FailureAnnotation(
        communication=FailureFinding(present=True, evidence=["Shall I add  anything else?",
                                                             "a sentence nobody wrote"]),
        planning=FailureFinding(present=True, evidence=[]))
    clean = FailureAnnotation()
    assert verified_evidence(record, found)["communication"] == ["Shall I add  anything else?"]
    shares = prevalence([found, clean, clean, found])
    assert shares["communication"] == 0.5 and shares["planning"] == 0.5
    assert shares["situational_awareness"] == 0.0
    assert all(math.isnan(v) for v in prevalence([]).values())


async def test_rounds_are_graded_by_a_real_tasks_own_grader(tmp_path: Path,
                                                            use_shared_data: Path) -> None:
    # Travel Planning, instance 0: the agent writes a plan, the user asks for a change, the
    # agent rewrites it. Each round's utility must be what the task's grader gives that plan.
    from cogym_lab.core import Action
    from cogym_lab.core.grammar import format_action
    from cogym_lab.envs import make_env
    from tests.support.travel_scripts import simple_plan

    env = make_env("travel_planning", instance=0)
    plan = simple_plan(env.task, env.db)
    shorter = plan.split("\n\nDay 2:")[0]  # only the first day
    steps = [("agent", format_action(Action(name="EDITOR_UPDATE", args={"text": shorter}))),
             ("user", say("Please plan every day of the trip.")),
             ("agent", format_action(Action(name="EDITOR_UPDATE", args={"text": plan}))),
             ("user", "FINISH()")]
    record = load_session(write_session(tmp_path / "travel", steps, task="travel_planning",
                                        env_args={"instance": 0}))
    graded = await grade_rounds(record, split_rounds(record))
    expected = []
    for text in (shorter, plan):
        env.plan_text = text
        expected.append(env.evaluate()["performance"])
    assert [g.scores["performance"] for g in graded] == pytest.approx(expected)
    assert expected[0] != expected[1]  # each round got its own grade
