"""The member type ``acp``: a real ACP agent process (tests/support/acp_agent.py, on the
``agent-client-protocol`` SDK) launched into the agent's seat of a todo session with the
rule-based user, reaching the seat over MCP with the official SDK, deciding through cogym_lab's
LM client against the loopback OpenAI-compatible server, whose replies the policies below
script."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cogym_lab.bus import Bus
from cogym_lab.members import register_member, unregister_member
from cogym_lab.nodes import replay
from cogym_lab.nodes.results import read_events, read_session
from cogym_lab.nodes.session import SessionResult
from cogym_lab.sessions import SessionSpec, build_session
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.buses import BusFactory
from tests.support.paths import REPO_ROOT

SECRET_KEY = "sk-test-0123456789abcdef-never-for-the-agent"
SECRET_TOKEN = "jupyter-token-never-for-the-agent-4242"

#: Text that broke a log, a transport or a page once: a lone surrogate, Unicode line breaks, NUL,
#: markup, a megabyte.
HOSTILE = ["lone \ud83d surrogate", "line\u2028separator\u2029paragraph", "nul\x00inside",
           "<script>alert(1)</script><img src=x onerror=alert(2)>", "x" * 1_000_000]

Policy = Callable[[list[dict[str, Any]]], dict[str, Any]]


def _steps(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in messages if m["role"] == "assistant"]


def _seen(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m["content"]) for m in messages if m["role"] == "user")


def _checklist(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The checklist of the latest tool result that showed the view (its structured line)."""
    for message in reversed(messages):
        if message["role"] != "user" or not str(message["content"]).startswith("Result of"):
            continue
        try:
            content = json.loads(str(message["content"]).splitlines()[-1])
        except ValueError:
            continue
        if "view" in content:
            return list(content["view"]["checklist"]["content"])
    return []


def _asked_for(seen: str) -> list[str]:
    """The items the rule-based user's 'Please bring a X and a Y' names."""
    found = re.search(r"Please bring ([^\"”\n]+)", seen)
    if not found:
        return []
    return [part.strip().removeprefix("a ").removeprefix("an ").strip()
            for part in found.group(1).split(" and ")]


def teamwork(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The agent's script for a whole session: look, try to act as the user, add items, remove
    one (a destructive tool: it asks permission), ask to run a shell command, wait, ask for
    approval of an extra; add what the user asks for; once approved, report in the chat."""
    done, seen = _steps(messages), _seen(messages)
    wishes: list[dict[str, Any]] = [
        {"tool": "observe"},
        {"tool": "ADD_ITEM", "arguments": {"text": "tent", "role": "user"}},
        *({"tool": "ADD_ITEM", "arguments": {"text": text}}
          for text in ("tent", "sleeping bag", "stove", "water bottle", "spare rope")),
        {"tool": "observe", "note": "the rope's id"},
    ]
    removed = [step for step in done if step.get("tool") == "REMOVE_ITEM"]
    rope = [item["id"] for item in _checklist(messages) if item["text"] == "spare rope"]
    if removed or rope:
        wishes.append(removed[0] if removed else
                      {"tool": "REMOVE_ITEM", "arguments": {"item_id": rope[0]}})
    wishes += [
        {"ask": {"title": "Run shell: rm -rf ~/projects", "kind": "execute"}},
        {"tool": "wait_for_news", "arguments": {"timeout_seconds": 1}},
        {"tool": "request_confirmation",
         "arguments": {"pending_action": 'ADD_ITEM(text="camp chairs")'}},
    ]
    wishes += [{"tool": "ADD_ITEM", "arguments": {"text": item}} for item in _asked_for(seen)]
    if "approved the request" in seen:
        wishes.append({"tool": "send_message",
                       "arguments": {"message": "Done: the list has everything you asked for."}})
    for wish in wishes:
        if wish not in done:
            return wish
    return {"end_turn": True}


def hostile(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Hostile text through the message and action tools, then the end."""
    done = _steps(messages)
    wishes: list[dict[str, Any]] = []
    for text in HOSTILE:
        for tool, arguments in (("send_message", {"message": text}), ("ADD_ITEM", {"text": text})):
            # No UTF-8 encoder takes a lone surrogate: it comes as JSON escapes, as JavaScript
            # sends it.
            wishes.append({"raw_call": {"tool": tool, "arguments": arguments}}
                          if "\ud83d" in text else {"tool": tool, "arguments": arguments})
    wishes += [{"tool": "observe"}, {"tool": "finish"}]
    for wish in wishes:
        if wish not in done:
            return wish
    return {"end_turn": True}


def crash(messages: list[dict[str, Any]]) -> dict[str, Any]:
    done = _steps(messages)
    if {"tool": "ADD_ITEM", "arguments": {"text": "tent"}} not in done:
        return {"tool": "ADD_ITEM", "arguments": {"text": "tent"}}
    return {"crash": 3}


def snoop(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Look at everything the seat offers, then finish."""
    done = _steps(messages)
    for wish in ({"tool": "observe"}, {"read_resources": True},
                 {"tool": "wait_for_news", "arguments": {"timeout_seconds": 2}},
                 {"tool": "observe", "note": "again"}, {"tool": "finish"}):
        if wish not in done:
            return wish
    return {"end_turn": True}


def _lm(policy: Policy) -> ScriptedOpenAIServer:
    return ScriptedOpenAIServer(
        responder=lambda body: json.dumps(policy(body["messages"])),
        models=("scripted-acp",))


def _team_file(folder: Path, lm: ScriptedOpenAIServer, record: Path, *, user: str = "example-user",
               idle: float = 30.0, extra: str = "") -> Path:
    args = ["-m", "tests.support.acp_agent", "--lm-url", lm.base_url, "--record", str(record)]
    text = f"""
name = "acp-test"
tasks = ["todo"]

[session]
idle_seconds = {idle}

[members.agent]
type = "acp"
[members.agent.options]
command = {json.dumps(sys.executable)}
args = {json.dumps(args)}
env = {{ PYTHONPATH = {json.dumps(str(REPO_ROOT))} }}
{extra}

[members.user]
type = "{user}"
"""
    path = folder / "team.toml"
    path.write_text(text)
    return path


async def _run(tmp_path: Path, bus: Bus, team: Path) -> SessionResult:
    session = build_session(SessionSpec(task="todo", team=str(team)), bus=bus,
                            results_dir=tmp_path / "results")
    return await session.run()


@pytest.fixture
def secrets_around(monkeypatch: pytest.MonkeyPatch) -> None:
    """The session's process holds an LM key and a server token the agent must not get."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    monkeypatch.setenv("JUPYTER_TOKEN", SECRET_TOKEN)


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("secrets_around")
async def test_an_acp_agent_plays_a_whole_session(tmp_path: Path,
                                                  bus_factory: BusFactory) -> None:
    record_file = tmp_path / "agent-record.json"
    with _lm(teamwork) as lm:
        team = _team_file(tmp_path, lm, record_file)
        result = await _run(tmp_path, await bus_factory(), team)

    assert result.end_reason == "finished", result
    assert result.failure is None
    assert result.scores, "the session is graded"
    folder = Path(result.results_dir or "")
    outcome = replay(folder).final_state["outcome"]  # the log replays to the saved state
    assert {"tent", "rain jacket", "headlamp", "camp chairs"} <= set(outcome)
    assert "spare rope" not in outcome  # removed, after the ACP permission was allowed

    seen = json.loads(record_file.read_text())
    # The agent got the task first, then the news as prompts.
    assert "Task: Together, write a packing checklist" in seen["prompts"][0]
    assert len(seen["prompts"]) >= 2
    assert any("approved the request" in prompt for prompt in seen["prompts"][1:])
    # Over HTTP with the bearer secret, with no file system and no terminal.
    assert seen["mcp_server"]["type"] == "http"
    assert seen["mcp_server"]["header_names"] == ["Authorization"]
    capabilities = seen["client_capabilities"]
    assert capabilities["terminal"] is False
    assert capabilities["fs"]["read_text_file"] is False
    assert capabilities["fs"]["write_text_file"] is False
    assert seen["cwd_entries"] == []  # a fresh, empty working directory
    # Its environment has none of the session's secrets.
    environment = json.dumps(seen["env"])
    assert SECRET_KEY not in environment and SECRET_TOKEN not in environment
    assert "OPENAI_API_KEY" not in seen["env"] and "JUPYTER_TOKEN" not in seen["env"]
    # The permission for the seat's tool was allowed; the shell command was rejected.
    permissions = {p["title"]: p["outcome"] for p in seen["permissions"]}
    assert permissions == {"mcp__cogym__REMOVE_ITEM": "allow",
                           "Run shell: rm -rf ~/projects": "reject"}
    # No tool acts as another role: the role argument was refused, with the expected form.
    as_user = next(c for c in seen["calls"] if c["arguments"].get("role") == "user")
    assert as_user["is_error"] and "Expected form: ADD_ITEM(" in as_user["text"]

    events = read_events(folder)
    assert next(e.action for e in events if e.actor == "user") == \
        'SEND_TEAMMATE_MESSAGE(message="Please bring a rain jacket and a headlamp")'
    assert any(e.actor == "agent" and e.action and e.action.startswith("SEND_TEAMMATE_MESSAGE")
               for e in events)
    assert not any(e.actor == "user" and e.action and "ADD_ITEM" in e.action for e in events)

    member = json.loads((folder / "agent" / "member.json").read_text())
    assert member["teammate"].startswith("ACP agent: python")
    assert member["kind"] == "agent" and member["stopped"] is None
    assert member["agent"]["name"] == "scripted-acp-agent"
    usage = member["usage"]
    assert usage["prompts"] >= 2 and usage["prompt_failures"] == 0
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert usage["permissions_allowed"] == 1 and usage["permissions_rejected"] == 1
    assert usage["context_size"] == 128_000 and usage["tool_calls"] >= 10
    assert len(member["prompt_seconds"]) == usage["prompts"] and member["seconds"] > 0
    lm_usage = json.loads((folder / "agent" / "usage.json").read_text())
    assert lm_usage["prompt_tokens"] == usage["input_tokens"]
    assert lm_usage["completion_tokens"] == usage["output_tokens"]
    assert lm_usage["calls"] == usage["prompts"] and lm_usage["tokens_reported"] is True
    # The LM the agent asked counted the same tokens the record has.
    assert read_session(folder)["end_reason"] == "finished"


@pytest.mark.timeout(120)
async def test_an_agent_without_http_reaches_the_seat_through_the_stdio_bridge(
        tmp_path: Path) -> None:
    from cogym_lab.bus import MemoryBus

    record_file = tmp_path / "agent-record.json"
    with _lm(snoop) as lm:
        team = _team_file(tmp_path, lm, record_file)
        text = team.read_text().replace(
            '"--record"', '"--no-http", "--record"')
        team.write_text(text)
        result = await _run(tmp_path, MemoryBus(), team)
    assert result.end_reason == "finished", result
    seen = json.loads(record_file.read_text())
    server = seen["mcp_server"]
    assert server["type"] == "stdio"
    # The command line is the module and the loopback URL; the secret is in the environment.
    assert server["args"][:2] == ["-m", "cogym_lab.mcp_seat.stdio_bridge"]
    assert len(server["args"]) == 3 and server["args"][2].startswith("http://127.0.0.1:")
    assert server["env_names"] == ["COGYM_SEAT_SECRET"]
    assert [call["tool"] for call in seen["calls"]] == ["observe", "wait_for_news", "observe",
                                                        "finish"]
    assert all(not call["is_error"] for call in seen["calls"])
    assert seen["resources"], "the resources came through the bridge"


class _SearchingUser:
    """The rule-based user, who first looks up beach ideas privately."""

    def __init__(self) -> None:
        from cogym_lab.envs.todo.example_team import ExampleUser

        self.user = ExampleUser()
        self.searched = False

    def start(self, context: Any) -> None:
        self.user.start(context)

    async def act(self, notification: Any) -> str | None:
        if not self.searched:
            self.searched = True
            return 'SEARCH_IDEAS(trip="beach")'
        return await self.user.act(notification)

    def end(self, final: Any) -> None:
        self.user.end(final)


@pytest.fixture
def searching_user() -> Any:
    from cogym_lab.core.member import MemberType

    register_member(MemberType(name="searching-user", kind="user", uses_lm=False,
                               build=lambda setup: _SearchingUser()))
    yield
    unregister_member("searching-user")


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("searching_user")
async def test_the_agent_cannot_read_another_seats_private_components(tmp_path: Path) -> None:
    from cogym_lab.bus import MemoryBus

    record_file = tmp_path / "agent-record.json"
    with _lm(snoop) as lm:
        team = _team_file(tmp_path, lm, record_file, user="searching-user")
        result = await _run(tmp_path, MemoryBus(), team)
    assert result.end_reason == "finished", result
    events = read_events(Path(result.results_dir or ""))
    assert any(e.actor == "user" and e.action == 'SEARCH_IDEAS(trip="beach")' for e in events)
    seen = record_file.read_text()
    assert "sunscreen" not in seen and "swimsuit" not in seen  # the user's private ideas


@pytest.mark.timeout(180)
async def test_hostile_text_from_the_agent_leaves_the_session_healthy(
        tmp_path: Path, bus_factory: BusFactory) -> None:
    record_file = tmp_path / "agent-record.json"
    with _lm(hostile) as lm:
        team = _team_file(tmp_path, lm, record_file)
        result = await _run(tmp_path, await bus_factory(), team)
    assert result.end_reason == "finished", result
    folder = Path(result.results_dir or "")
    outcome = replay(folder).final_state["outcome"]
    assert "line\u2028separator\u2029paragraph" in outcome
    assert any(len(text) == 1_000_000 for text in outcome)
    # A lone surrogate, JSON-escaped, is refused by the MCP transport as a parse error.
    raw = [c for c in json.loads(record_file.read_text())["calls"] if c.get("raw")]
    assert len(raw) == 2 and all(c["status"] == 400 and "Parse error" in c["text"] for c in raw)
    assert not any("surrogate" in text for text in outcome)
    member = json.loads((folder / "agent" / "member.json").read_text())
    assert member["stopped"] is None and member["usage"]["prompt_failures"] == 0


@pytest.mark.timeout(60)
async def test_an_agent_that_crashes_ends_the_session_cleanly(
        tmp_path: Path, bus_factory: BusFactory) -> None:
    """With idle ticks of a minute, only the crash's report can end the session within the
    test's time."""
    record_file = tmp_path / "agent-record.json"
    with _lm(crash) as lm:
        team = _team_file(tmp_path, lm, record_file, idle=60.0)
        result = await _run(tmp_path, await bus_factory(), team)
    assert result.end_reason == "lm_failed", result
    assert result.failure is not None and result.failure.member == "agent"
    assert "exited with code 3" in result.failure.reason
    folder = Path(result.results_dir or "")
    member = json.loads((folder / "agent" / "member.json").read_text())
    assert "exited with code 3" in member["stopped"]
    assert "crashing on purpose" in member["stopped"]
    assert "crashing on purpose" in (folder / "agent" / "agent.log").read_text()
    replay(folder)  # the log still replays
    assert read_session(folder)["status"] == "finished"


@pytest.mark.parametrize(("title", "kind", "expected"), [
    ("mcp__cogym__ADD_ITEM", "other", "ADD_ITEM"),          # Claude Code's MCP tool names
    ("cogym/REMOVE_ITEM", None, "REMOVE_ITEM"),             # server/tool
    ("REMOVE_ITEM (cogym MCP Server)", "other", "REMOVE_ITEM"),
    ("wait_for_news", None, "wait_for_news"),               # the bare tool name
    ("mcp__cogym__wait_for_news", "other", "wait_for_news"),  # not `wait`
    ("mcp__other__ADD_ITEM", "other", None),                # another server's tool
    ("Run shell: rm -rf ~", "execute", None),
    ("mcp__cogym__ADD_ITEM", "execute", None),              # a shell command is never a seat tool
    ("Edit cogym.toml", "edit", None),
])
def test_which_permission_requests_are_for_the_seats_tools(title: str, kind: str | None,
                                                            expected: str | None) -> None:
    from cogym_lab.mcp_seat.acp_client import seat_tool_of

    tools = {"ADD_ITEM", "REMOVE_ITEM", "wait", "wait_for_news", "finish"}
    assert seat_tool_of([title], kind, "cogym", tools) == expected


@pytest.mark.parametrize(("options", "said"), [
    ("", "needs `command`"),
    ('command = "x"\npermissions = "sometimes"', '"reject" or "allow"'),
    ('command = "x"\nargs = "--acp"', "list of strings"),
    ('command = "x"\nsandbox = true', "no option 'sandbox'"),
])
def test_a_team_file_with_bad_acp_options_is_refused_when_built(tmp_path: Path, options: str,
                                                                said: str) -> None:
    from cogym_lab.sessions import SessionBuildError

    team = tmp_path / "team.toml"
    team.write_text(f"""name = "bad"\n[members.agent]\ntype = "acp"\n[members.agent.options]
{options}\n[members.user]\ntype = "example-user"\n""")
    with pytest.raises(SessionBuildError, match=re.escape(said)):
        build_session(SessionSpec(task="todo", team=str(team)))
