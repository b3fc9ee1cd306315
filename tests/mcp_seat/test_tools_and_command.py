"""The seat's tools as made from action specs (the annotation rule, the schemas), and the
``cogym-lab mcp`` command's own errors: a missing SDK names the extra, a role the team lacks
names the team's members."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.core.actions import ActionSpec, ParamSpec
from cogym_lab.core.collaboration import collaboration_specs
from cogym_lab.core.messages import SessionContext, TeamMember
from cogym_lab.envs.registry import task_class
from cogym_lab.mcp_seat.tools import is_destructive, seat_tools
from tests.support.paths import REPO_ROOT


def _context(kind: str, specs: list[ActionSpec]) -> SessionContext:
    return SessionContext(session_id="s", task="t", task_description="d", role="me", kind=kind,
                          team=[TeamMember(role="me", kind=kind)], action_specs=specs,
                          collaboration_specs=collaboration_specs(kind))


def test_the_destructive_rule() -> None:
    def spec(name: str, **fields) -> ActionSpec:
        return ActionSpec(name=name, description="x", **fields)

    assert is_destructive(spec("REMOVE_ITEM")) and is_destructive(spec("DELETE_ROW"))
    assert is_destructive(spec("EDITOR_UPDATE", replaces="editor"))
    assert not is_destructive(spec("ADD_ITEM")) and not is_destructive(spec("REMOVED_LIST"))
    assert not is_destructive(spec("CLEAR_SEARCH", private=True))  # only the seat's own view


def test_every_task_action_becomes_a_tool_with_its_typed_params() -> None:
    for task in ("todo", "travel_planning", "related_work", "tabular_analysis", "kitchen"):
        specs = [s for s in getattr(task_class(task), "_specs", {}).values() if not s.internal]
        tools = {tool.name: tool for tool in seat_tools(_context("agent", specs))}
        for spec in specs:
            schema = tools[spec.name].input_schema
            assert set(schema["properties"]) == {p.name for p in spec.params}, task
            assert "role" not in schema["properties"]
            assert schema["additionalProperties"] is False
    editor = ActionSpec(name="EDITOR_UPDATE", description="Write.", replaces="editor",
                        params=(ParamSpec(name="text"),))
    tool = {t.name: t for t in seat_tools(_context("agent", [editor]))}["EDITOR_UPDATE"]
    assert tool.hints.destructive and "merged in" in tool.description


def test_each_kind_gets_its_own_acts() -> None:
    agent = {tool.name for tool in seat_tools(_context("agent", []))}
    person = {tool.name for tool in seat_tools(_context("person", []))}
    assert agent == {"send_message", "wait", "finish", "request_confirmation",
                     "accept_confirmation", "reject_confirmation", "observe", "wait_for_news"}
    assert person == agent | {"pause_agent", "resume_agent"}  # never the panel's EDIT_TEXT


def test_a_missing_sdk_names_the_extra() -> None:
    code = ("import sys; sys.modules['mcp'] = None\n"  # as if it were not installed
            "from cogym_lab.cli.main import main; main(['mcp', '--role', 'agent'])")
    completed = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                               text=True, timeout=60, cwd=REPO_ROOT)
    assert completed.returncode == 1
    assert "pip install 'cogym_lab[mcp]'" in completed.stderr
    assert completed.stdout == ""


def test_a_role_the_team_lacks_is_a_usage_error(tmp_path) -> None:
    result = CliRunner().invoke(main, ["mcp", "--task", "todo", "--role", "boss",
                                       "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "no member 'boss'" in result.output and "agent, user" in result.output
    help_text = CliRunner().invoke(main, ["mcp", "--help"]).output
    assert "--role" in help_text and "stdin/stdout" in help_text
