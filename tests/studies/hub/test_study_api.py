"""The study's REST API on a real (in-process) Jupyter server with two identities: consent,
steps, sessions through the session host, answers checked against their items (hostile text
too), leaving and coming back, anonymous ids, and the events emitted through jupyter_events."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks
from tornado.httpclient import HTTPClientError

from cogym_lab.studies.hub.telemetry import STUDY_EVENTS_SCHEMA
from tests.support.hub_study import LABELS, SECRET_NAMES, TASK_LOAD, study_folder
from tests.support.jupyter_api import as_user, server_config


@pytest.fixture
def study_dir(tmp_path):
    folder = tmp_path / "study"
    study_folder(folder)
    return folder


@pytest.fixture
def jp_server_config(tmp_path, study_dir):
    config = server_config(tmp_path / "results", "alice", "bob")
    config["ServerApp"]["jpserver_extensions"]["cogym_lab.studies.hub"] = True
    config["ServerApp"]["root_dir"] = str(tmp_path)
    config["CogymStudy"] = {"study_dir": str(study_dir)}
    return config


def study_api(jp_fetch, user):
    async def call(method: str, path: str, body: Any = None, raw: bytes | None = None):
        kwargs: dict[str, Any] = {"method": method, "headers": as_user(user)}
        if method == "POST":
            kwargs["body"] = raw if raw is not None else json.dumps(body or {})
        try:
            response = await jp_fetch("cogym", "study", "api", *path.split("/"), **kwargs)
        except HTTPClientError as error:
            response = error.response
        return response.code, json.loads(response.body or b"null")

    return call


@pytest.fixture
def alice(jp_fetch):
    return study_api(jp_fetch, "alice")


@pytest.fixture
def bob(jp_fetch):
    return study_api(jp_fetch, "bob")


def no_secret_in(answer: Any) -> None:
    text = json.dumps(answer)
    for name in SECRET_NAMES:
        assert name not in text, f"{name} shown to a participant: {text}"
    assert "example" not in text  # the team's name says which system it is


async def walk_to_session(api) -> dict:
    status, state = await api("POST", "consent", {"agree": True})
    assert status == 200, state
    assert state["step"]["kind"] == "instructions"
    status, state = await api("POST", "steps/instructions/done")
    assert status == 200, state
    assert state["step"]["kind"] == "session"
    return state


async def play_session(api, state: dict) -> dict:
    step = state["step"]["id"]
    status, started = await api("POST", f"steps/{step}/start")
    assert status == 200, started
    session = started["step"]["session"]
    again = await api("POST", f"steps/{step}/start")  # coming back: the same session
    assert again[1]["step"]["session"] == session
    status, done = await api("POST", f"steps/{step}/done")
    assert status == 200, done
    return done


async def events_of(study_dir, participant: str, wanted: int) -> list[dict]:
    for _ in range(200):  # the listener writes them in tasks of the server's loop
        events = [json.loads(line) for line in
                  (study_dir / "events.jsonl").read_text().splitlines()] \
            if (study_dir / "events.jsonl").exists() else []
        mine = [event for event in events if event["participant"] == participant]
        if len(mine) >= wanted:
            return mine
        await asyncio.sleep(0.05)
    return mine


def test_a_participant_walks_the_study_and_sees_only_labels(run, alice, bob, study_dir,
                                                                  jp_serverapp):
    async def body():
        seen: list[dict] = []

        async def listen(logger, schema_id, data):
            seen.append(data)

        jp_serverapp.event_logger.add_listener(schema_id=STUDY_EVENTS_SCHEMA, listener=listen)
        status, state = await alice("GET", "state")
        assert status == 200, state
        assert state["step"] == {"id": "consent", "kind": "consent", "title": "Consent",
                                 "text": "You agree to take part in this study. <b>markup stays "
                                         "text</b>"}
        assert state["participant"].startswith("p-") and "alice" not in json.dumps(state)
        _, bob_state = await bob("GET", "state")
        assert bob_state["participant"] != state["participant"]
        # the study's order: alice arrived first (row 0 of the Latin square), bob second
        titles = []
        state = await walk_to_session(alice)
        while state["step"]["kind"] != "done":
            no_secret_in(state)
            kind, step = state["step"]["kind"], state["step"]["id"]
            if kind == "session":
                titles.append(state["step"]["title"])
                state = await play_session(alice, state)
            elif step.startswith("after"):
                assert state["step"]["about"] in LABELS
                status, state = await alice("POST", f"steps/{step}/answers",
                                            {"answers": {"satisfied": 4, "comment": "ok \u2028"}})
                assert status == 200, state
            else:
                ranking = next(i for i in state["step"]["items"] if i["kind"] == "ranking")
                assert ranking["labels"] == titles
                status, state = await alice("POST", f"steps/{step}/answers", {"answers": {
                    "rank": list(reversed(titles)), "again": "yes", "load": TASK_LOAD}})
                assert status == 200, state
        assert titles == list(LABELS)
        assert state["status"] == "finished"
        saved = json.loads((study_dir / "participants" / f"{state['participant']}.json").read_text())
        assert saved["sequence"] == list(SECRET_NAMES)
        assert len(saved["sessions"]) == 2
        assert {a["value"] for a in saved["answers"] if a["item"] == "comment"} == {"ok \u2028"}
        # bob's order is the other row of the square
        bob_state = await walk_to_session(bob)
        assert bob_state["step"]["title"] == LABELS[1]
        # telemetry: through jupyter_events, and into the study's events file
        events = await events_of(study_dir, state["participant"], 10)
        names = [event["event"] for event in events]
        assert names[:2] == ["assigned", "step_started"]
        for name in ("consented", "session_started", "session_ended", "answer_submitted",
                     "step_finished"):
            assert name in names
        assert {e["event"] for e in seen} >= {"consented", "answer_submitted"}
        assert "alice" not in (study_dir / "events.jsonl").read_text()

    run(body())


def test_another_participants_state_is_refused(run, alice, bob):
    async def body():
        _, mine = await alice("GET", "state")
        status, answer = await bob("GET", f"participants/{mine['participant']}")
        assert status == 403, answer
        status, own = await alice("GET", f"participants/{mine['participant']}")
        assert status == 200 and own["participant"] == mine["participant"]
        status, answer = await bob("POST", "steps/consent/done")  # no route names a participant
        assert status == 409

    run(body())


def test_steps_go_in_order(run, alice):
    async def body():
        status, answer = await alice("POST", "steps/instructions/done")
        assert status == 409 and "not the current step" in answer["message"]
        status, answer = await alice("POST", "consent", {"agree": "yes"})
        assert status == 400
        await walk_to_session(alice)
        status, answer = await alice("POST", "steps/session-0/done")
        assert status == 409 and "has not started" in answer["message"]
        status, answer = await alice("POST", "steps/session-0/fly")
        assert status == 404

    run(body())


HOSTILE = [
    ({"satisfied": 6}, "not from 1 to 5"),
    ({"satisfied": True}, "whole number"),
    ({"satisfied": "4"}, "whole number"),
    ({}, "an answer is needed"),
    ({"satisfied": 3, "comment": "nul\x00"}, "NUL"),
    ({"satisfied": 3, "comment": "x" * 6000}, "at most 5000"),
    ({"satisfied": 3, "comment": 12}, "must be text"),
    ({"satisfied": 3, "other": 1}, "has no item"),
]


def test_answers_are_checked_against_their_items(run, alice, study_dir):
    async def body():
        state = await walk_to_session(alice)
        await play_session(alice, state)
        for given, words in HOSTILE:
            status, answer = await alice("POST", "steps/after-0/answers", {"answers": given})
            assert status == 400 and words in answer["message"], (given, answer)
        status, answer = await alice("POST", "steps/after-0/answers", raw=json.dumps(
            {"answers": {"satisfied": 3, "comment": "y" * 1_100_000}}).encode())
        assert status == 413, answer
        # the server's text policy: a lone surrogate becomes U+FFFD before anything reads it
        markup = "<script>alert(1)</script>\u2028</div>a\ud800b"
        status, state = await alice("POST", "steps/after-0/answers",
                                    {"answers": {"satisfied": 3, "comment": markup}})
        assert status == 200, state
        saved = json.loads((study_dir / "participants" / f"{state['participant']}.json").read_text())
        assert saved["answers"][-1]["value"] == markup.replace("\ud800", "\ufffd")

    run(body())


def test_end_questionnaire_checks_rankings_and_task_load(run, alice):
    async def body():
        state = await walk_to_session(alice)
        for _ in range(2):
            state = await play_session(alice, state)
            _, state = await alice("POST", f"steps/{state['step']['id']}/answers",
                                   {"answers": {"satisfied": 2}})
        assert state["step"]["id"] == "final-end"
        bad = [
            ({"rank": ["Assistant A"], "again": "yes", "load": TASK_LOAD}, "rank each"),
            ({"rank": ["Assistant A", "Assistant A"], "again": "yes", "load": TASK_LOAD},
             "rank each"),
            ({"rank": list(LABELS), "again": "maybe", "load": TASK_LOAD}, "choose one"),
            ({"rank": list(LABELS), "again": "no", "load": {**TASK_LOAD, "mental": 42}},
             "step of 5"),
            ({"rank": list(LABELS), "again": "no", "load": {"mental": 5}}, "give each"),
        ]
        for given, words in bad:
            status, answer = await alice("POST", "steps/final-end/answers", {"answers": given})
            assert status == 400 and words in answer["message"], (given, answer)

    run(body())


def test_leaving_and_coming_back_resumes_the_same_step(run, alice, study_dir):
    async def body():
        _, first = await alice("POST", "visit")
        state = await walk_to_session(alice)
        _, started = await alice("POST", f"steps/{state['step']['id']}/start")
        await alice("POST", "left")
        _, back = await alice("POST", "visit")
        assert back["step"] == started["step"]  # the same step, the same session
        events = await events_of(study_dir, first["participant"], 8)
        names = [event["event"] for event in events]
        assert "left" in names and names[-1] == "returned"

    run(body())


def test_anonymous_ids_are_salted_hashes_of_the_login(run, study_dir, tmp_path):
    async def body():
        folder = study_folder(study_dir)  # the same folder: the same salt
        other = study_folder(tmp_path / "other")
        assert folder.anonymous_id("alice") == folder.anonymous_id("alice")
        assert folder.anonymous_id("alice") != other.anonymous_id("alice")
        assert folder.anonymous_id("alice") != folder.anonymous_id("bob")


    run(body())