"""The simulated-user audit: the programmatic checks on hand-built logs, the LM reviewer through
our real LM client (over aiohttp) against the loopback server (garbage replies included), the
``user_audit.json`` files, the report's table and ``cogym-lab eval audit [--rerun-flagged]``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main as cli
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.hidden_facts import HiddenFacts, HiddenQuantity
from cogym_lab.core.messages import ChatMessage, Event, TeamMember
from cogym_lab.envs import make_env
from cogym_lab.envs.todo import TodoEnv
from cogym_lab.eval import load_session, report
from cogym_lab.eval.judging.judges import Judge
from cogym_lab.eval.users.audit import (
    USER_ERROR_TYPES,
    aaudit,
    audit_or_read,
    audit_session,
    read_audit,
)
from cogym_lab.eval.users.checks import (
    CONTRADICTS_HIDDEN,
    FINISHED_AFTER_AGREEING,
    contradicted_claims,
)
from cogym_lab.eval.users.sources import hidden_information, instructions, user_model
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.records.label_files import AUDIT_FILE
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from cogym_lab.users import Persona, SimulatedUser
from tests.support.notified import notified
from tests.support.trajectories import add, confirm, say, write_session

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

HIDDEN = "You will not go without: rain jacket, headlamp."

#: τ²-bench's pattern: the agent offers a change, the user agrees and finishes at once.
#: Events: 1 start, 2 tent, 3 offer, 4 "Yes please", 5 agent message, 6 FINISH, 7 end.
AGREED_THEN_FINISHED = [
    ("agent", add("tent")),
    ("agent", say("I added a tent. Shall I add a headlamp too?")),
    ("user", say("Yes please, go ahead.")),
    ("agent", say("Great, adding it now.")),
    ("user", "FINISH()"),
]


def judge_for(server: ScriptedOpenAIServer) -> Judge:
    return Judge(make_lm(LMConfig(model="reviewer-lm", base_url=server.base_url, max_retries=0,
                                  timeout=30)))


def checks_of(path: Path) -> list[tuple[str, int | None]]:
    import asyncio

    audit = asyncio.run(audit_session(load_session(path), None))
    assert audit is not None and not audit.reviewed and audit.reviewer == ""
    return [(check.check, check.seq) for check in audit.checks]


# -- the programmatic checks ---------------------------------------------------------------------


def test_finishing_right_after_agreeing_to_an_unmade_change_fails_the_check(tmp_path: Path
                                                                            ) -> None:
    # The FINISH is event 6; the agreement (event 4) answered the offer of event 3, and the
    # agent's only act in between (event 5) is a message, not a change.
    assert checks_of(write_session(tmp_path / "s", AGREED_THEN_FINISHED)) == [
        (FINISHED_AFTER_AGREEING, 6)]
    audit = read_audit(tmp_path / "s")
    assert audit is None  # audit_session alone writes nothing


@pytest.mark.parametrize("steps", [
    # The agent made the change before the user finished.
    [*AGREED_THEN_FINISHED[:4], ("agent", add("headlamp")), ("user", "FINISH()")],
    # "Yes" to a plain question is no agreement to a change.
    [("agent", add("tent")), ("agent", say("Anything else you need?")),
     ("user", say("Yes, that's all, thanks.")), ("user", "FINISH()")],
    # Agreeing to end the session and then ending it is what was agreed.
    [("agent", add("tent")), ("agent", say("The list is complete. Shall we wrap up?")),
     ("user", say("Sure.")), ("user", "FINISH()")],
    # Something else the user did came between: not "right after".
    [*AGREED_THEN_FINISHED[:3], ("user", say("Also, think about a map.")), ("user", "FINISH()")],
    # A refusal is no agreement.
    [*AGREED_THEN_FINISHED[:2], ("user", say("No, not now.")), ("user", "FINISH()")],
])
def test_the_check_leaves_honest_endings_alone(tmp_path: Path, steps: list[tuple[str, str]]
                                               ) -> None:
    assert checks_of(write_session(tmp_path / "s", steps)) == []


def test_a_formal_acceptance_whose_work_was_still_running_counts_as_an_agreement(
        tmp_path: Path) -> None:
    # The coordinator applies an ordinary accepted action at once (event 3 is the accept and
    # the change); only deferred work can still be pending when the user finishes. The log is
    # edited to say the accepted action's work was deferred, and nothing followed it.
    path = write_session(tmp_path / "s", [("agent", confirm(add("first aid kit"))),
                                          ("user", 'ACCEPT_CONFIRMATION(request_id="c1")'),
                                          ("user", "FINISH()")])
    assert checks_of(path) == []  # applied in the same step: nothing undone
    events = [Event.model_validate_json(line) for line in
              (path / "events.jsonl").read_text().splitlines()]
    accept = next(e for e in events if e.type.value == "confirm_accept")
    accept.info["deferred"] = "drafting"
    (path / "events.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in events))
    finish = next(e for e in events if e.type.value == "finish")
    assert checks_of(path) == [(FINISHED_AFTER_AGREEING, finish.seq)]


def test_asking_to_drop_a_required_item_contradicts_the_hidden_information(tmp_path: Path
                                                                           ) -> None:
    # TODO_ARGS: the person insists on a rain jacket and a headlamp. Event 3 asks to do without
    # the headlamp; events 4-6 mention it without asking for that.
    path = write_session(tmp_path / "s", [
        ("agent", add("headlamp")),
        ("user", say("Actually we don't need the headlamp. Keep the rest.")),  # 3
        ("user", say("Please don't remove the headlamp.")),  # 4: negated
        ("user", say("Should we drop the headlamp?")),  # 5: a question
        ("user", say("Add a rain jacket as well.")),  # 6
        ("user", "FINISH()")])
    assert checks_of(path) == [(CONTRADICTS_HIDDEN, 3)]
    import asyncio

    audit = asyncio.run(audit_session(load_session(path), None))
    assert audit is not None and audit.flagged and "'headlamp'" in audit.checks[0].detail


TRIP = HiddenFacts(quantities=(
    HiddenQuantity("budget", 7600, ("budget",), money=True),
    HiddenQuantity("people", 7, ("people", "travellers", "adults")),
    HiddenQuantity("cities", 1, ("city", "cities"))))


@pytest.mark.parametrize(("text", "contradicted"), [
    ("Our budget is $5,000 for the whole trip.", ["budget 5000"]),
    ("Our budget is $7,600.", []),
    ("My budget is $7.6k, no more.", []),  # 7.6 x 1000 = 7600
    ("We are 3 people.", ["people 3"]),
    ("We are seven people and want one city.", []),
    ("I'd like two adult travellers to share a room.", ["people 2"]),  # one word between
    ("There will be 2 more people joining us.", []),  # relative: not the party's size
    ("The plan has 3 cities.", []),  # not in the first person: about the workspace
    ("We want one city, not 2 cities.", []),  # states the hidden value too
    ("Our budget is 9000 dollars and we are 4 people.", ["budget 9000", "people 4"]),
    ("We love museums\u2028 and $5,000 <b>budget</b>\x00", ["budget 5000"]),  # hostile text
])
def test_quantities_the_hidden_information_fixes(text: str, contradicted: list[str]) -> None:
    lines = contradicted_claims(ChatMessage(seq=1, time=0.0, sender="user", text=text), TRIP)
    assert [" ".join(line.split()[1:3]) for line in lines] == contradicted


def test_a_travel_session_is_checked_against_its_instance(use_shared_data: Path,
                                                          tmp_path: Path) -> None:
    # Instance 0 of the travel task: a party of 7, a budget of $7,600, one city (its CSV row).
    facts = make_env("travel_planning", instance=0).hidden_facts()
    assert {q.name: q.value for q in facts.quantities} == {"budget": 7600, "people": 7,
                                                           "cities": 1}
    path = write_session(tmp_path / "s", [
        ("user", say("We are 7 people.")),  # 2: agrees with the hidden information
        ("user", say("Our budget is $5,000 for the whole trip.")),  # 3
        ("user", "FINISH()")], task="travel_planning", env_args={"instance": 0})
    assert checks_of(path) == [(CONTRADICTS_HIDDEN, 3)]


def test_a_task_without_structured_facts_is_not_checked_and_says_so(tmp_path: Path) -> None:
    import asyncio

    path = write_session(tmp_path / "s", AGREED_THEN_FINISHED)
    data = json.loads((path / "session.json").read_text())
    (path / "session.json").write_text(json.dumps(data | {"task": "no-such-task"}))
    audit = asyncio.run(audit_session(load_session(path), None))
    assert audit is not None and any("contradiction check did not run" in n for n in audit.notes)
    assert [c.check for c in audit.checks] == [FINISHED_AFTER_AGREEING]  # needs no facts
    # A session without a simulated user has nothing to audit.
    alone = write_session(tmp_path / "alone", [("agent", add("tent")), ("agent", "FINISH()")],
                          team=(("agent", "agent"),))
    assert asyncio.run(audit_session(load_session(alone), None)) is None


# -- what the user was given -----------------------------------------------------------------


async def write_user_call_log(server: ScriptedOpenAIServer, session: Path) -> None:
    """Let a real SimulatedUser answer one question of the agent, logging to ``session/user``."""
    lm = make_lm(LMConfig(model="user-lm", base_url=server.base_url, max_retries=0))
    user = SimulatedUser(lm, HIDDEN, persona=Persona())
    coordinator = Coordinator(TodoEnv(), [TeamMember(role="agent"),
                                          TeamMember(role="user", kind="user")],
                              session_id="u")
    first = {n.recipient: n for n in notified(coordinator, coordinator.start(0.0))}
    context = first["user"].context.model_copy(update={"results_dir": str(session / "user")})
    user.start(context)
    asked = coordinator.handle("agent", say("Is it cold there?"), 1.0)
    server.extend(["Thought: a question.\nChoice: 1",
                   "Thought: rain.\nMessage: Yes please, go ahead."])
    await user.act(next(n for n in notified(coordinator, asked) if n.recipient == "user"))
    await lm.aclose()


async def test_the_hidden_information_and_instructions_come_from_the_users_call_log(
        tmp_path: Path, server: ScriptedOpenAIServer) -> None:
    session = write_session(tmp_path / "s", AGREED_THEN_FINISHED)
    await write_user_call_log(server, session)
    record = load_session(session)
    assert hidden_information(record, "user") == (HIDDEN, "call log")
    given = instructions(record, "user")
    assert "## When asked to decide" in given and "## When asked to answer" in given
    assert "one piece" in given  # the lazy persona's rule, as the user was sent it
    assert user_model(record) == "scripted"  # its usage.json, else its call log:
    (session / "user" / "usage.json").unlink()
    assert user_model(load_session(session)) == "user-lm"
    # Without a call log the task's own hidden information is used (the env is rebuilt).
    bare = load_session(write_session(tmp_path / "bare", AGREED_THEN_FINISHED))
    assert hidden_information(bare, "user") == (HIDDEN, "task")
    assert user_model(bare) == "scripted"


# -- the LM reviewer ------------------------------------------------------------------------


REVIEW = {"errors": [
    # Verified (event 4) and hindered: critical.
    {"type": "premature_end", "severity": "hindered", "quote": "Yes please, go ahead.",
     "explanation": "It finished before the headlamp was added."},
    # Verified but it helped the agent: counted, not critical.
    {"type": "Revealed hidden information too early", "severity": "Helped the agent",
     "quote": "Shall I add a headlamp too?", "explanation": "x"},
    # Made up: not in the log, so not verified and not critical although hindered.
    {"type": "invented_preference", "severity": "hindered", "quote": "I hate tents."},
    {"type": "rude_tone", "severity": "minor", "quote": "Yes please"},  # unknown type: dropped
    {"type": "ignored_question", "severity": "catastrophic", "quote": "x"},  # bad severity
    "the user was fine",  # not an object: dropped
]}


async def test_the_reviewer_tags_errors_checked_against_the_log(
        tmp_path: Path, server: ScriptedOpenAIServer) -> None:
    session = write_session(tmp_path / "s", AGREED_THEN_FINISHED)
    await write_user_call_log(server, session)
    server.add("Here is my review:\n```json\n" + json.dumps(REVIEW) + "\n```")
    record = load_session(session)
    audit, reused = await audit_or_read(record, judge_for(server))
    assert audit is not None and not reused and audit.reviewed
    assert audit.reviewer == "reviewer-lm" and audit.dropped == 3
    assert [(e.type, e.severity, e.verified, e.seq, e.critical) for e in audit.errors] == [
        ("premature_end", "hindered", True, 4, True),
        ("early_disclosure", "helped", True, 3, False),
        ("invented_preference", "hindered", False, None, False)]
    assert [c.check for c in audit.checks] == [FINISHED_AFTER_AGREEING]
    assert audit.flagged
    prompt = server.bodies[-1]["messages"][-1]["content"]
    assert HIDDEN in prompt and "## When asked to answer" in prompt  # what the user was given
    assert "least 4 items" in prompt  # the request, rebuilt from the task
    assert all(f'"{key}"' in prompt for key in USER_ERROR_TYPES)
    assert "[M2] user (user) says: Yes please, go ahead." in prompt
    # Written to user_audit.json and read back from it next time, with no LM call.
    assert read_audit(session) == audit
    calls = len(server.bodies)
    again, reused = await audit_or_read(load_session(session), judge_for(server))
    assert reused and again == audit and len(server.bodies) == calls
    # --force asks again.
    server.add('{"errors": []}')
    fresh, reused = await audit_or_read(load_session(session), judge_for(server), force=True)
    assert fresh is not None and not reused and fresh.errors == [] and fresh.flagged  # check
    assert len(server.bodies) == calls + 1


GARBAGE = [
    Reply(garbage=True),  # not JSON at all: the LM call fails
    Reply(status=500, error="overloaded"),
    "I think the user behaved well.",  # no JSON object, then
    '{"errors": [{"type": "premature_end", "severity": "hindered", "quote": "Yes ple',  # cut
]
WRONG_TYPES = ['{"errors": "none"}', '{"errors": [{"type": 5, "severity": null}, 7, null]}']
UNKNOWN = ['{"errors": [{"type": "rudeness", "severity": "minor", "quote": "x"}]}',
           '{"errors": [{"type": "premature_end", "severity": "terrible", "quote": "x"}]}']


@pytest.mark.parametrize("replies", [GARBAGE[:1], GARBAGE[1:2], GARBAGE[2:], WRONG_TYPES,
                                     UNKNOWN],
                         ids=["not-json", "http-error", "prose-then-truncated", "wrong-types",
                              "unknown-types"])
async def test_an_unusable_review_leaves_only_the_checks_and_is_tried_again(
        tmp_path: Path, server: ScriptedOpenAIServer, replies: list[str | Reply]) -> None:
    session = write_session(tmp_path / "s", AGREED_THEN_FINISHED)
    server.extend(replies)
    audit, _ = await audit_or_read(load_session(session), judge_for(server))
    assert audit is not None and not audit.reviewed and audit.errors == []
    assert audit.flagged  # the programmatic check still flags it
    assert "the reviewer gave no usable review" in audit.notes
    assert read_audit(session) is None  # not written: the next run asks again
    if len(replies) == 2:  # a bad reply gets one retry that names the problem
        assert "could not be used" in server.bodies[1]["messages"][-1]["content"]


async def test_hostile_text_in_the_log_and_the_review_is_kept_safe(
        tmp_path: Path, server: ScriptedOpenAIServer) -> None:
    hostile = "Fine\u2028<script>alert(1)</script> \x00 \ud83d"
    session = write_session(tmp_path / "s", [("agent", add("tent")),
                                             ("user", say(hostile)), ("user", "FINISH()")])
    # The reviewer quotes the message with its U+2028 as a plain space and in other case, and
    # writes a lone surrogate in its explanation (the server sends it as a JSON escape).
    server.add(json.dumps({"errors": [
        {"type": "ignored_question", "severity": "minor",
         "quote": "fine <SCRIPT>alert(1)</script>", "explanation": "odd \ud800 text\u2029"}]}))
    audit, _ = await audit_or_read(load_session(session), judge_for(server))
    assert audit is not None and audit.errors[0].verified and audit.errors[0].seq == 3
    raw = (session / AUDIT_FILE).read_bytes().decode("utf-8")  # valid UTF-8 on disk
    saved = read_audit(session)
    assert saved is not None and "\ufffd" in saved.errors[0].explanation
    assert "\ud800" not in raw


# -- the report ----------------------------------------------------------------------------------


def reviewer(body: dict[str, Any]) -> str:
    """The judges of a report: every message labelled, and the user reviewed by what the log
    shows: "Sure thing" is a verified hindered error (plus a made-up one), the rest none."""
    prompt = body["messages"][-1]["content"]
    if "Label each of the" in prompt:
        numbers = sorted({int(n) for n in __import__("re").findall(r"\[M(\d+)\]", prompt)})
        return json.dumps({"labels": [{"n": n} for n in numbers]})
    if "You are checking the simulated person" in prompt:
        errors = []
        if "Sure thing" in prompt:
            errors = [{"type": "ignored_question", "severity": "hindered", "quote": "Sure thing"},
                      {"type": "invented_preference", "severity": "helped",
                       "quote": "I need a kayak"},  # not in the log
                      {"type": "invented_preference", "severity": "helped",
                       "quote": "a blue tent"}]
        return json.dumps({"errors": errors})
    return "no idea"


def test_the_report_gives_the_simulators_error_rates_per_task_and_team(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    # Team "collaborative": A fails the τ²-bench check (no reviewer error); B has two verified
    # errors (one hindered: flagged) and one unverified; C is clean.
    write_session(runs / "A", AGREED_THEN_FINISHED)
    write_session(runs / "B", [("agent", add("tent")), ("agent", say("Which colour?")),
                               ("user", say("Sure thing, a blue tent.")), ("user", "FINISH()")])
    write_session(runs / "C", [("agent", add("tent")), ("user", "FINISH()")])
    # Team "autonomous": D is clean.
    write_session(runs / "D", [("agent", add("tent")), ("user", "FINISH()")],
                  agent_type="autonomous")
    with ScriptedOpenAIServer(responder=reviewer) as server:
        judge = make_lm(LMConfig(model="judge-lm", base_url=server.base_url, max_retries=0))
        result = report([runs], judge=judge, effort=False, failures=False)
    table = result.tables["user_audit"]
    rows = {row["agent_type"]: row for row in table.to_dict("records")}
    collab = rows["collaborative"]
    assert (collab["audited"], collab["reviewed"], collab["user_model"]) == (3, 3, "scripted")
    # Verified errors per session: A 0, B 2, C 0.
    assert collab["with_errors"] == pytest.approx(1 / 3)
    assert collab["errors_per_session"] == pytest.approx(2 / 3)
    assert collab["ignored_question"] == pytest.approx(1 / 3)
    assert collab["invented_preference"] == pytest.approx(1 / 3)  # the made-up one is not
    assert collab["premature_end"] == 0.0
    assert (collab["hindered"], collab["helped"]) == (pytest.approx(1 / 3), pytest.approx(1 / 3))
    assert collab["unverified"] == 1
    assert collab["checks_failed"] == pytest.approx(1 / 3)  # A
    assert collab["flagged"] == pytest.approx(2 / 3)  # A (check) and B (hindered, verified)
    assert rows["autonomous"]["flagged"] == 0.0
    # The task's row over both teams: 4 audited, 2 flagged, 2 verified errors.
    everyone = rows["all"]
    assert (everyone["audited"], everyone["flagged"]) == (4, 0.5)
    assert everyone["errors_per_session"] == pytest.approx(2 / 4)
    sessions = result.tables["sessions"].set_index("session_id")
    assert (sessions.loc["B", "user_errors"], bool(sessions.loc["B", "user_flagged"])) == (2, True)
    assert "Simulated-user audit" in result.to_text()
    for name in "ABCD":  # written where each session is
        assert (runs / name / AUDIT_FILE).is_file()
    # Without a judge the files are read back; nothing new is asked.
    again = report([runs], effort=False, failures=False)
    assert again.tables["user_audit"].equals(table)


def test_a_report_without_a_judge_runs_the_checks_in_memory(tmp_path: Path) -> None:
    write_session(tmp_path / "A", AGREED_THEN_FINISHED)
    result = report([tmp_path], effort=False, failures=False)
    row = result.tables["user_audit"].iloc[0]
    assert (row["audited"], row["reviewed"], row["flagged"]) == (1, 0, 1.0)
    assert math.isnan(row["with_errors"])  # no reviewed session: no error rate
    assert not (tmp_path / "A" / AUDIT_FILE).exists()


# -- the command -------------------------------------------------------------------------------


def test_eval_audit_flags_and_reruns_sessions_of_a_run(tmp_path: Path) -> None:
    from cogym_lab.eval import run

    out = tmp_path / "run"
    run("todo", "example", "0:2", out=out, progress=False)
    first_id = json.loads((out / "000" / "session.json").read_text())["session_id"]

    def judge(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        # Instance 0 (camping) ignored the agent: a verified, hindering error. Not instance 1.
        if "camping" in prompt:
            return json.dumps({"errors": [{"type": "ignored_question", "severity": "hindered",
                                           "quote": "Please bring a rain jacket and a headlamp"}]})
        return '{"errors": []}'

    runner = CliRunner()
    with ScriptedOpenAIServer(responder=judge) as server:
        audit_args = ["eval", "audit", str(out), "--judge", "reviewer-lm", "--judge-base-url",
                      server.base_url]
        first = runner.invoke(cli, audit_args)
        assert first.exit_code == 0, first.output
        assert "2 sessions, 2 with a simulated user (0 audited before), 1 user errors, " \
               "1 flagged" in first.output
        assert f"flagged {out / '000'}: ignored_question (hindered) at event 3" in first.output
        asked = len(server.bodies)
        second = runner.invoke(cli, audit_args)  # audited before: read back, no LM call
        assert "(2 audited before)" in second.output and len(server.bodies) == asked
        rerun = runner.invoke(cli, [*audit_args, "--rerun-flagged"])
        assert rerun.exit_code == 0, rerun.output
    assert f"Reran 0 in {out}: 2/2 sessions finished, 0 failed" in rerun.output
    # The flagged session ran again in its folder; the old one was moved aside, not deleted.
    assert json.loads((out / "000" / "session.json").read_text())["session_id"] != first_id
    assert not (out / "000" / AUDIT_FILE).exists() and (out / "001" / AUDIT_FILE).exists()
    replaced = list((out / ".replaced").rglob("session.json"))
    assert [json.loads(p.read_text())["session_id"] for p in replaced] == [first_id]
    assert [p.name for p in (out / ".replaced").rglob(AUDIT_FILE)] == [AUDIT_FILE]


async def test_aaudit_over_a_folder_counts_sessions_without_a_user(tmp_path: Path) -> None:
    write_session(tmp_path / "A", AGREED_THEN_FINISHED)
    write_session(tmp_path / "alone", [("agent", "FINISH()")], team=(("agent", "agent"),))
    audited = await aaudit([tmp_path], None)
    assert sorted((a.record.path.name, a.audit is not None) for a in audited) == [
        ("A", True), ("alone", False)]
    assert read_audit(tmp_path / "A") is not None  # checks only, written: no judge could do more
