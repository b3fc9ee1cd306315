"""Honest replay: the state a log rebuilds is compared with the final state the session saved."""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.core import Component
from cogym_lab.core.state_diff import MISSING, first_difference
from cogym_lab.envs import registry
from cogym_lab.envs.todo import ExampleAgent, ExampleUser, TodoEnv
from cogym_lab.nodes import Session, SessionConfig, SessionResult
from cogym_lab.nodes.replay import FinalStateMismatch, ReplayMismatch, replay
from cogym_lab.nodes.results import read_events, read_session, update_session

KINDS = {"agent": "agent", "user": "user"}


@dataclass
class TitledTodo(TodoEnv):
    """The todo task with its trip in the checklist's title, so that the trip shows in views."""

    name = "todo-titled"

    def public_components(self) -> list[Component]:
        return [component.model_copy(update={"title": f"Packing checklist: {self.trip}"})
                for component in super().public_components()]


@dataclass
class ForgetfulTodo(TitledTodo):
    """A task whose env_args() forgets the trip: replay rebuilds it for the default trip."""

    name = "todo-forgetful"

    def env_args(self) -> dict[str, Any]:
        return {key: value for key, value in super().env_args().items() if key != "trip"}


@pytest.fixture(autouse=True)
def variant_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register the variants for replay to find, only for the length of a test."""
    for env_class in (TitledTodo, ForgetfulTodo):
        monkeypatch.setitem(registry._registered, env_class.name, env_class)


def run_beach_session(results_dir: Path, env_class: type[TodoEnv] = TodoEnv) -> SessionResult:
    """A whole session of the example team on a beach trip, written to ``results_dir``."""
    env = env_class(trip="beach", min_items=4, must_have=["hat"])
    members = {"agent": ExampleAgent(), "user": ExampleUser(["hat"], min_items=4)}
    session = Session(env, members, kinds=KINDS, results_dir=results_dir,
                      config=SessionConfig(idle_seconds=2))
    return session.run_sync()


def edit_session(results_dir: Path, **env_args: Any) -> None:
    """Change ``session.json``'s env_args as a hand (or a bug) might."""
    saved = read_session(results_dir)
    update_session(results_dir, env_args={**saved["env_args"], **env_args})


# -- replay against the saved final state ------------------------------------------------------


def test_a_finished_session_replays_to_the_state_it_saved(tmp_path):
    result = run_beach_session(tmp_path)
    assert result.end_reason == "finished"
    replayed = replay(tmp_path)
    assert replayed.final_state_checked and replayed.note is None
    assert len(replayed.events) == result.events
    assert replayed.final_state == read_session(tmp_path)["final_state"]


def test_a_session_whose_env_differs_on_replay_raises_naming_the_first_difference(tmp_path):
    run_beach_session(tmp_path, TitledTodo)
    assert replay(tmp_path).final_state_checked  # as saved, it replays
    edit_session(tmp_path, trip="city")
    with pytest.raises(FinalStateMismatch) as raised:
        replay(tmp_path)
    message = str(raised.value)
    assert "the log replays to another final state than the session saved, at " \
           "views.agent.components[0 \"checklist\"].title: saved \"Packing checklist: beach\" " \
           "vs rebuilt \"Packing checklist: city\"" in message
    assert "env_args()" in message and "deterministic" in message
    assert isinstance(raised.value, ReplayMismatch)  # what the CLI and other callers catch


def test_env_args_that_forget_an_argument_are_caught_by_replay(tmp_path):
    run_beach_session(tmp_path, ForgetfulTodo)
    assert "trip" not in read_session(tmp_path)["env_args"]
    with pytest.raises(FinalStateMismatch, match=r'saved "Packing checklist: beach" vs rebuilt '
                                                 r'"Packing checklist: camping"'):
        replay(tmp_path)


def test_an_edited_saved_state_is_caught_with_its_path(tmp_path):
    run_beach_session(tmp_path)
    saved = read_session(tmp_path)["final_state"]
    saved["views"]["user"]["components"][0]["content"][1]["done"] = 1  # was false
    update_session(tmp_path, final_state=saved)
    with pytest.raises(FinalStateMismatch) as raised:
        replay(tmp_path)
    assert "at views.user.components[0 \"checklist\"].content[1].done: saved 1 vs rebuilt false" \
        in str(raised.value)


def test_a_log_cut_short_is_told_apart_from_a_different_env(tmp_path):
    result = run_beach_session(tmp_path)
    log = tmp_path / "events.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    assert [json.loads(line)["type"] for line in lines[-2:]] == ["finish", "end"]
    log.write_text("".join(lines[:-1]))
    assert replay(tmp_path).final_state_checked  # the END follows from the FINISH: rebuilt
    log.write_text("".join(lines[:-2]))
    with pytest.raises(FinalStateMismatch) as raised:
        replay(tmp_path)
    message = str(raised.value)
    assert f"at seq: saved {result.events} vs rebuilt {result.events - 2}" in message
    assert "was events.jsonl cut short or edited?" in message and "env_args" not in message


def test_a_session_json_without_a_final_state_replays_with_a_note(tmp_path):
    result = run_beach_session(tmp_path)
    saved = read_session(tmp_path)
    del saved["final_state"]
    (tmp_path / "session.json").write_text(json.dumps(saved), encoding="utf-8")
    replayed = replay(tmp_path)
    assert len(replayed.events) == result.events
    assert not replayed.final_state_checked
    assert replayed.note == ("session.json holds no final state (status: finished), so the "
                             "replayed state could not be checked against one")


async def test_an_interrupted_session_replays_with_a_note(tmp_path):
    class SlowAdder:
        """Adds an item per notification, slowly enough to be interrupted."""

        kind = "agent"

        def start(self, context: Any) -> None:
            pass

        async def act(self, notification: Any) -> str | None:
            await asyncio.sleep(0.01)
            return f'ADD_ITEM(text="item {len(notification.view["checklist"].content)}")'

        def end(self, final: Any) -> None:
            pass

    fourth_event = asyncio.Event()
    session = Session(TodoEnv(), {"agent": SlowAdder(), "user": ExampleUser()}, kinds=KINDS,
                      results_dir=tmp_path, config=SessionConfig(idle_seconds=30),
                      observers=[lambda event: event.seq >= 4 and fourth_event.set()])
    running = asyncio.create_task(session.run())
    async with asyncio.timeout(20):
        await fourth_event.wait()
    await session.interrupt("test")
    await running
    assert read_session(tmp_path)["status"] == "interrupted"
    replayed = replay(tmp_path)
    assert len(replayed.events) == len(read_events(tmp_path)) >= 4
    assert not replayed.final_state_checked
    assert "(status: interrupted)" in (replayed.note or "")


# -- the command line --------------------------------------------------------------------------


def test_the_replay_command_fails_loudly_on_a_mismatch(tmp_path):
    run_beach_session(tmp_path, TitledTodo)
    runner = CliRunner()
    assert runner.invoke(main, ["replay", str(tmp_path)]).exit_code == 0
    edit_session(tmp_path, trip="city")
    result = runner.invoke(main, ["replay", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: cannot replay {tmp_path}: the log replays to ")
    assert result.output.count(str(tmp_path)) == 1  # the directory is named once
    assert "another final state" in result.output
    assert "checklist" in result.output and "Packing checklist: city" in result.output
    assert "Replayed" not in result.output  # no state is printed as if it were good


# -- first_difference --------------------------------------------------------------------------


def test_equal_states_have_no_difference_whatever_their_key_order():
    assert first_difference({"a": 1, "b": [1, {"c": None}]}, {"b": [1, {"c": None}], "a": 1}) \
        is None
    assert first_difference((1, 2), [1, 2]) is None  # JSON has only lists


def test_keys_are_walked_in_the_expected_order_then_the_extra_ones():
    found = first_difference({"a": 1, "b": 2}, {"z": 0, "b": 3, "a": 1})
    assert (found.path, found.expected, found.actual) == ("b", 2, 3)
    extra = first_difference({"a": 1}, {"a": 1, "b": None})
    assert (extra.path, extra.expected, extra.actual) == ("b", MISSING, None)
    assert extra.describe() == "at b: expected (missing) vs actual null"


def test_lists_of_different_lengths():
    longer = first_difference([1, 2], [1, 2, 3])
    assert (longer.path, longer.expected, longer.actual) == ("[2]", MISSING, 3)
    shorter = first_difference({"items": ["a", "b"]}, {"items": ["a"]})
    assert shorter.describe("saved", "rebuilt") == 'at items[1]: saved "b" vs rebuilt (missing)'


def test_true_is_not_one_and_false_is_not_zero():
    found = first_difference({"done": True}, {"done": 1})
    assert found.describe() == "at done: expected true vs actual 1"
    assert first_difference([False], [0]).path == "[0]"
    assert first_difference(1, 1.0) is None  # one number in JSON
    assert first_difference(True, True) is None


def test_nan_equals_nan_and_nothing_else():
    assert first_difference({"x": math.nan}, {"x": math.nan}) is None
    assert first_difference([math.nan], [0.0]).describe() == "at [0]: expected NaN vs actual 0.0"
    assert first_difference(math.nan, None) is not None


def test_paths_name_components_and_quote_odd_keys():
    saved = {"views": {"agent": {"components": [
        {"name": "checklist", "content": [{"text": "tent"}, {"text": "hat"}]},
        {"name": "ideas", "content": []}]}}}
    rebuilt = json.loads(json.dumps(saved))
    rebuilt["views"]["agent"]["components"][0]["content"][1]["text"] = "cap"
    assert first_difference(saved, rebuilt).path == \
        'views.agent.components[0 "checklist"].content[1].text'
    rebuilt["views"]["agent"]["components"].pop()
    assert first_difference(saved, rebuilt).path == \
        'views.agent.components[0 "checklist"].content[1].text'  # still the first one
    assert first_difference({"a b": 1, "2": 1}, {"a b": 2, "2": 1}).path == '["a b"]'
    assert first_difference({"x": {"3rd": 1}}, {"x": {"3rd": 0}}).path == 'x["3rd"]'
    gone = first_difference([{"name": "ideas"}], [])
    assert gone.path == '[0 "ideas"]' and gone.actual is MISSING


def test_differences_of_kind_and_of_the_whole_state():
    assert first_difference({"a": [1]}, {"a": {"0": 1}}).path == "a"
    assert first_difference("abc", "abd").describe() == \
        'at (the whole state): expected "abc" vs actual "abd"'  # a string is not walked by letter


def test_long_values_are_cut_in_messages():
    found = first_difference({"text": "x" * 1000}, {"text": "y"})
    expected_part = found.describe().split(" vs ")[0]
    assert len(expected_part) < 200 and expected_part.endswith("…")
