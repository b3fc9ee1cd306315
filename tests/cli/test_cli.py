"""The ``cogym-lab`` command: help everywhere, the main job, clear errors for bad arguments."""

from __future__ import annotations

import json
import subprocess
import sys

import click
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.nodes.results import read_session


def _all_commands(group: click.Group, prefix: tuple[str, ...] = ()):
    for name, command in group.commands.items():
        yield (*prefix, name)
        if isinstance(command, click.Group):
            yield from _all_commands(command, (*prefix, name))


def test_every_subcommand_has_help():
    runner = CliRunner()
    paths = list(_all_commands(main))
    assert {("run",), ("tasks",), ("teams",), ("replay",), ("node", "env"), ("node", "agent"),
            ("node", "user")} <= set(paths)
    for path in paths:
        result = runner.invoke(main, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage: " in result.output and "--help" in result.output


def test_run_shows_a_whole_session_and_writes_results(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "cogym_lab", "run", "--out", str(tmp_path), "--idle-seconds", "2"],
        capture_output=True, text=True, timeout=60, env={"COLUMNS": "200", "PATH": ""},
    )
    assert completed.returncode == 0, completed.stderr
    out = completed.stdout
    # the live transcript speaks in plain sentences, not in action syntax
    assert " said: “" in out and "approved the request." in out
    assert "SEND_TEAMMATE_MESSAGE" not in out and "ACCEPT_CONFIRMATION" not in out
    assert "ended: finished" in out and "Delivered: True" in out
    (results,) = tmp_path.iterdir()
    assert read_session(results)["delivered"] is True


def test_replay_command_prints_the_final_state(tmp_path):
    runner = CliRunner()
    assert runner.invoke(main, ["run", "--out", str(tmp_path), "--quiet"]).exit_code == 0
    (results,) = tmp_path.iterdir()
    result = runner.invoke(main, ["replay", str(results)])
    assert result.exit_code == 0, result.output
    state = json.loads(result.output.split("\n", 1)[1])
    assert state == read_session(results)["final_state"]
    middle = runner.invoke(main, ["replay", str(results), "--seq", "2"])
    assert json.loads(middle.output.split("\n", 1)[1])["seq"] == 2


def test_tasks_lists_the_example_task():
    result = CliRunner().invoke(main, ["tasks"])
    assert result.exit_code == 0 and "todo" in result.output.split()


def test_tasks_names_the_kitchen_maps_as_the_paper_does_in_its_order():
    lines = CliRunner().invoke(main, ["tasks"]).output.splitlines()
    at = lines.index("kitchen")
    assert lines[at + 1:at + 3] == ["  --instance 0: Map 1 - New Counter Circuit",
                                    "  --instance 1: Map 2 - New Asymmetric Advantages"]
    assert lines[at + 3] == "related_work"  # numbered-only instances are not listed


def test_bad_arguments_get_clear_errors(tmp_path):
    runner = CliRunner()
    cases = {
        ("run", "--task", "nope"): "--task",
        ("run", "--env-arg", "trip=moon"): "Unknown trip 'moon'",
        ("run", "--env-arg", "novalue"): "expected KEY=VALUE",
        ("run", "--bus", "kafka://x"): "Unknown bus URL",
        ("run", "--idle-seconds", "-1"): "--idle-seconds",
        ("node", "env", "--session", "s", "--redis", "redis://127.0.0.1:1",
         "--team", "no-such-team"): "No team 'no-such-team'",
        ("node", "user", "--session", "s", "--redis", "redis://127.0.0.1:1",
         "--role", "agent"): "run it with `cogym-lab node agent`",
        ("run", "--spec", "missing.json"): "does not exist",
        ("node", "agent", "--session", "s", "--redis", "redis://127.0.0.1:1",
         "--team", "no-such-team"): "No team 'no-such-team'",
        ("node", "agent", "--session", "s", "--redis", "redis://127.0.0.1:1",
         "--role", "boss"): "has no member 'boss'",
        ("run", "--instance", "7"): "there is no instance 7",
        ("run", "--task", "todo", "--team", "no-such-team"): "No team 'no-such-team'",
        ("node", "agent"): "Missing option",
        ("replay", str(tmp_path / "missing")): "does not exist",
    }
    for args, expected in cases.items():
        result = runner.invoke(main, list(args))
        assert result.exit_code == 2, (args, result.output)
        assert expected in result.output, (args, result.output)
    empty = runner.invoke(main, ["replay", str(tmp_path)])
    assert empty.exit_code == 1 and "cannot replay" in empty.output
