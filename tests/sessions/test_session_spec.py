"""``SessionSpec`` and ``build_session``: one description of a session, one place that builds it,
one error type that names the field at fault, and a results directory that is enough to run
its session again."""

from __future__ import annotations

import ast
import dataclasses
import json
import re

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from cogym_lab.cli.main import main
from cogym_lab.lm import shared_clients
from cogym_lab.nodes import SessionConfig
from cogym_lab.nodes.results import read_events, read_session
from cogym_lab.runtime.models import CreateRequest, HostingRecord
from cogym_lab.sessions import (
    Limits,
    SessionBuildError,
    SessionSpec,
    build_one_member,
    build_session,
)
from cogym_lab.sessions.setup_guide import SetupGuide
from cogym_lab.teams import load_team
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "cogym_lab"


def test_the_limits_are_exactly_the_session_settings() -> None:
    assert set(Limits.model_fields) == {f.name for f in dataclasses.fields(SessionConfig)}


def test_a_spec_is_strict_and_names_the_field_at_fault() -> None:
    with pytest.raises(ValidationError, match="instance"):
        SessionSpec.model_validate({"task": "todo", "instance": "3"})
    with pytest.raises(ValidationError, match="colour"):
        SessionSpec.model_validate({"task": "todo", "colour": "red"})
    with pytest.raises(ValidationError, match="more than once"):
        SessionSpec(task="todo", people=["user", "user"])
    with pytest.raises(ValidationError, match="people"):
        SessionSpec(task="todo", people=["../etc"])


def test_flat_limits_and_one_lm_table_are_read_as_the_nested_form() -> None:
    flat = SessionSpec.model_validate({"task": "todo", "idle_seconds": 5, "lm": {"model": "m"},
                                       "settings": {"max_events": 9}})
    assert flat.limits.overrides() == {"idle_seconds": 5, "max_events": 9}
    assert flat.lm_for("agent") == {"model": "m"} == flat.lm_for("tools")
    nested = SessionSpec.model_validate({"task": "todo", "limits": {"idle_seconds": 5},
                                         "lm": {"*": {"model": "m"}, "user": {"model": "u"}}})
    assert nested.lm_for("user") == {"model": "u"} and nested.lm_for("agent") == {"model": "m"}


def test_what_is_stored_has_no_secret_and_reads_back_as_the_same_spec() -> None:
    spec = SessionSpec(task="todo", instance=0, lm={"*": {"model": "m", "api_key": "sk-x"}},
                       limits=Limits(idle_seconds=3))
    stored = spec.stored()
    assert "sk-x" not in json.dumps(stored)
    assert stored == {"task": "todo", "instance": 0, "lm": {"*": {"model": "m"}},
                      "limits": {"idle_seconds": 3.0}}
    assert SessionSpec.model_validate(stored) == spec.without_secrets()


def test_an_older_hosting_record_reads_as_a_spec() -> None:
    record = HostingRecord.model_validate({
        "session_id": "s", "team": "example", "people": ["user"], "created_at": 1.0,
        "request": {"task": "todo", "instance": None, "env_args": {}, "team": "example",
                    "people": ["user"], "lm": None, "notebook": None, "protocol": None,
                    "settings": {"idle_seconds": 30}}})
    assert record.spec.task == "todo" and record.spec.limits.idle_seconds == 30


def test_a_create_request_is_a_spec_and_its_sharing() -> None:
    request = CreateRequest.model_validate({"task": "todo", "people": ["user"],
                                            "seat_tokens": ["user"]})
    assert request.spec() == SessionSpec(task="todo", people=["user"])


@pytest.mark.parametrize(("fields", "field", "words"), [
    ({"task": "no-such-task"}, "task", "Unknown task"),
    ({"task": "todo", "instance": 99}, "instance", "no instance 99"),
    ({"task": "todo", "env_args": {"trip": "moon"}}, "env_args", "Unknown trip"),
    ({"task": "todo", "team": "no-such-team"}, "team", "No team"),
    ({"task": "travel_planning", "team": "example"}, "team", "plays only todo"),
    ({"task": "todo", "protocol": "nope"}, "protocol", "Unknown scoring protocol"),
    ({"task": "todo", "notebook": {"path": "a.ipynb", "kernel_id": "k"}}, "notebook",
     "does not run in a notebook"),
])
def test_a_spec_that_cannot_be_built_says_which_field(fields, field, words) -> None:
    with pytest.raises(SessionBuildError) as raised:
        build_session(SessionSpec.model_validate(fields))
    assert raised.value.field == field and words in raised.value.message


def test_a_member_without_a_model_is_an_error_or_a_guide(monkeypatch) -> None:
    for name in ("COGYM_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    spec = SessionSpec(task="todo", team="collaborative", people=["user"])
    with pytest.raises(SessionBuildError) as raised:
        build_session(spec)
    assert raised.value.field == "lm"
    guided = build_session(spec, guides=True)
    assert guided.guided == ["agent"] and isinstance(guided.members["agent"], SetupGuide)
    assert [(m.role, m.kind) for m in guided.team] == [("agent", "agent"), ("user", "person")]


def test_the_built_session_carries_its_resolved_spec_and_kinds() -> None:
    session = build_session(SessionSpec(task="todo"))
    assert session.spec.team == "example" and session.spec.protocol == "cogym"
    assert {m.role: m.kind for m in session.team} == {"agent": "agent", "user": "user"}
    assert session.lms == {}
    spec_team = SessionSpec(task="todo", team=load_team("example"))
    assert build_session(spec_team).spec.team_name == "example"


def test_a_member_for_its_own_process_is_built_alone() -> None:
    member, kind = build_one_member(SessionSpec(task="todo"), "user")
    assert kind == "user" and type(member).__name__ == "ExampleUser"
    with pytest.raises(SessionBuildError, match="no member 'boss'"):
        build_one_member(SessionSpec(task="todo"), "boss")


def test_a_results_directory_is_enough_to_run_its_session_again(tmp_path) -> None:
    runner = CliRunner()
    first = runner.invoke(main, ["run", "--quiet", "--out", str(tmp_path / "a"),
                                 "--env-arg", "min_items=4", "--idle-seconds", "2"])
    assert first.exit_code == 0, first.output
    (original,) = (tmp_path / "a").iterdir()
    stored = read_session(original)["spec"]
    assert stored["env_args"] == {"min_items": 4} and stored["team"] == "example"
    again = runner.invoke(main, ["run", "--quiet", "--out", str(tmp_path / "b"),
                                 "--spec", str(original / "session.json")])
    assert again.exit_code == 0, again.output
    (rerun,) = (tmp_path / "b").iterdir()
    assert read_session(rerun)["spec"] == stored
    assert read_session(rerun)["outcome"] == read_session(original)["outcome"]
    assert [(e.type, e.actor, e.action) for e in read_events(rerun)] == \
        [(e.type, e.actor, e.action) for e in read_events(original)]
    refused = runner.invoke(main, ["run", "--spec", str(original / "session.json"),
                                   "--task", "todo"])
    assert refused.exit_code == 2 and "cannot be given with --spec" in refused.output


def test_only_the_builder_constructs_a_session() -> None:
    """Every entry point goes through ``build_session``: no other module calls ``Session(``."""
    callers = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # (a jupyter_client Session takes keywords only; ours takes an env first)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Session" \
                    and node.args:
                callers.append(path.relative_to(PACKAGE).as_posix())
    assert callers == ["sessions/build.py"]


async def test_a_session_closes_the_lm_clients_it_was_built_with() -> None:
    """A hosted session's LMs hold a shared HTTP client (and its connections) until closed: the
    session lets go of them when it ends, not the garbage collector."""

    def respond(body: dict) -> str:
        last = body["messages"][-1]["content"]
        finish = re.search(r"^(\d+)\. finish", last, re.M)
        if finish:
            return f"Thought: done.\nChoice: {finish.group(1)}"
        return "Thought: done.\nAction: FINISH()"

    before = shared_clients.clients_open()
    with ScriptedOpenAIServer(responder=respond) as server:
        session = build_session(SessionSpec(
            task="todo", team="collaborative",
            lm={"*": {"model": "m", "base_url": server.base_url, "timeout": 10}},
            limits=Limits(idle_seconds=2, timeout=60)))
        lms = list(session.lms.values())
        assert lms
        await session.run()
        assert server.chat_requests  # the members did call their LMs
    assert all(lm._client is None for lm in lms)  # type: ignore[attr-defined]
    assert shared_clients.clients_open() == before


def test_outside_seats_are_team_members_named_once_and_never_a_persons() -> None:
    with pytest.raises(ValidationError, match="more than once"):
        SessionSpec(task="todo", outside=["agent", "agent"])
    with pytest.raises(ValidationError, match="in both people and outside"):
        SessionSpec(task="todo", people=["user"], outside=["user"])
    with pytest.raises(SessionBuildError) as refused:
        build_session(SessionSpec(task="todo", team="example", outside=["stranger"]))
    assert "stranger" in str(refused.value)
    session = build_session(SessionSpec(task="todo", team="example", outside=["agent"]))
    assert session.members["agent"] is None  # the seat is left for the outside agent
    assert {m.role: m.kind for m in session.team}["agent"] == "agent"  # and stays an agent's
