"""Sessions belong to the user who created them: two (and three) real identities on one real
in-process Jupyter server, told apart by an identity provider that gives each user a token.

A second user cannot list, read, act in, rate, follow or end another's session; a seat reaches
them only through an explicit share (by name in the create request, or a seat token), and each
user reads only the views of the seats they hold.
"""

from __future__ import annotations

import json

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks
from tornado.httpclient import HTTPClientError

from tests.support.jupyter_api import (
    API,
    as_user,
    receive_until,
    server_config,
    session_api,
    wait_until,
)


@pytest.fixture
def jp_server_config(tmp_path):
    return server_config(tmp_path / "results", "alice", "bob", "carol")


@pytest.fixture
def carol(jp_fetch):
    return session_api(jp_fetch, "carol")


def started(snapshot) -> bool:
    return snapshot["state"] is not None


async def ws_status(jp_ws_fetch, user: str, session_id: str, role: str) -> int:
    """The status a user's WebSocket to a seat gets (101 when it opens)."""
    try:
        ws = await jp_ws_fetch(*API, session_id, "ws", params={"role": role},
                               headers=as_user(user))
    except HTTPClientError as refused:
        return refused.code
    ws.close()
    return 101


def test_a_session_is_its_creators_and_no_one_elses(run, alice, bob, jp_ws_fetch):
    async def body():
        status, created = await alice("POST", body={"task": "todo", "people": ["user"],
                                                    "idle_seconds": 60})
        assert status == 201, created
        session_id = created["session_id"]
        assert (created["seats"], created["owned"]) == (["user"], True)

        mine = await wait_until(alice, session_id, started)
        assert set(mine["state"]["views"]) == {"user"}  # never the agent's own view

        status, listing = await bob("GET")
        assert (status, listing) == (200, {"sessions": []})
        rating = {"role": "user", "outcome_rating": 1, "satisfaction": 1}
        for method, path, payload in [
                ("GET", (session_id,), None),
                ("POST", (session_id, "actions"), {"role": "user", "action": "WAIT()"}),
                ("POST", (session_id, "rating"), rating),
                ("POST", (session_id, "resume"), None),
                ("POST", (session_id, "interrupt"), None),
                ("DELETE", (session_id,), None)]:
            status, answer = await bob(method, *path, body=payload)
            assert status == 404, (method, path, answer)
            assert session_id in answer["message"]
        assert await ws_status(jp_ws_fetch, "bob", session_id, "user") == 404

        status, still = await alice("GET", session_id)
        assert (status, still["status"], still["ratings"]) == (200, "running", {})
        assert await ws_status(jp_ws_fetch, "alice", session_id, "user") == 101
        status, ended = await alice("DELETE", session_id)
        assert (status, ended["status"]) == (200, "finished")

    run(body())


def test_a_seat_given_by_name_is_that_users_only(run, alice, bob, carol, jp_ws_fetch):
    async def body():
        status, created = await alice("POST", body={
            "task": "todo", "people": ["user", "guest"], "seat_users": {"guest": "bob"},
            "idle_seconds": 60})
        assert status == 201, created
        session_id = created["session_id"]
        assert created["seats"] == ["user"]

        status, listing = await bob("GET")
        assert [(s["session_id"], s["seats"], s["owned"]) for s in listing["sessions"]] == [
            (session_id, ["guest"], False)]
        theirs = await wait_until(bob, session_id, started)
        assert set(theirs["state"]["views"]) == {"guest"}
        mine = await wait_until(alice, session_id, started)
        assert set(mine["state"]["views"]) == {"user"}

        status, accepted = await bob("POST", session_id, "actions", body={
            "role": "guest", "action": {"name": "ADD_ITEM", "args": {"text": "bob's tent"}}})
        assert (status, accepted["role"]) == (200, "guest")
        await wait_until(alice, session_id, lambda s: "bob's tent" in json.dumps(s["state"]))
        status, refused = await bob("POST", session_id, "actions",
                                    body={"role": "user", "action": "WAIT()"})
        assert status == 403 and "not yours" in refused["message"]
        assert await ws_status(jp_ws_fetch, "bob", session_id, "user") == 403
        ws = await jp_ws_fetch(*API, session_id, "ws", params={"role": "guest"},
                               headers=as_user("bob"))
        first = await receive_until(ws, lambda n: n.get("recipient") == "guest")
        assert first[-1]["recipient"] == "guest"
        ws.close()

        status, refused = await bob("DELETE", session_id)
        assert status == 403 and "Only the user who created" in refused["message"]
        status, rated = await bob("POST", session_id, "rating", body={
            "role": "guest", "outcome_rating": 4, "satisfaction": 5})
        assert (status, set(rated["ratings"])) == (201, {"guest"})
        status, refused = await bob("POST", session_id, "rating", body={
            "role": "user", "outcome_rating": 1, "satisfaction": 1})
        assert status == 403
        assert (await alice("GET", session_id))[1]["ratings"] == {}  # bob's rating is his

        assert (await carol("GET"))[1] == {"sessions": []}
        assert (await carol("GET", session_id))[0] == 404
        assert (await alice("DELETE", session_id))[0] == 200

    run(body())


def test_a_seat_token_opens_one_seat_once(run, alice, bob, carol, tmp_path):
    async def body():
        status, created = await alice("POST", body={
            "task": "todo", "people": ["user", "guest"], "seat_tokens": ["guest"],
            "idle_seconds": 60})
        assert status == 201, created
        session_id, token = created["session_id"], created["seat_tokens"]["guest"]
        assert created["seats"] == ["user"]
        hosting = (tmp_path / "results" / session_id / "hosting.json").read_text()
        assert token not in hosting  # only its digest is kept

        assert (await bob("GET", session_id))[0] == 404
        status, refused = await bob("POST", session_id, "seats", body={"token": "guess"})
        assert status == 404 and "seat token works once" in refused["message"]
        status, claimed = await bob("POST", session_id, "seats", body={"token": token})
        assert (status, claimed) == (200, {"session_id": session_id, "role": "guest"})
        status, refused = await carol("POST", session_id, "seats", body={"token": token})
        assert status == 404  # used already

        snapshot = await wait_until(bob, session_id, started)
        assert (snapshot["seats"], set(snapshot["state"]["views"])) == (["guest"], {"guest"})
        assert "seat_tokens" not in snapshot
        status, _ = await bob("POST", session_id, "actions", body={
            "role": "guest", "action": {"name": "ADD_ITEM", "args": {"text": "token tent"}}})
        assert status == 200
        assert (await alice("GET", session_id))[1]["seats"] == ["user"]
        assert (await alice("DELETE", session_id))[0] == 200

    run(body())


def test_sharing_names_only_person_seats(run, alice):
    async def body():
        for share in ({"seat_users": {"agent": "bob"}}, {"seat_tokens": ["nobody"]},
                      {"seat_users": {"guest": "bob"}, "seat_tokens": ["guest"]}):
            status, refused = await alice("POST", body={"task": "todo", "people": ["guest"],
                                                        **share})
            assert status == 400, (share, refused)
        assert (await alice("GET"))[1] == {"sessions": []}

    run(body())
