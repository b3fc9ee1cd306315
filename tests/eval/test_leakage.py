"""The leakage guard: a task's hidden strings must reach an agent only through the human side."""

from __future__ import annotations

import json

import pytest

from cogym_lab.core import CoEnv, Component, RenderType, action
from cogym_lab.core.messages import Event, EventType
from cogym_lab.eval import load_session, report
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.leakage import LeakageGuard, normalise
from cogym_lab.nodes.results import read_events, read_session
from tests.support.teammates import AGENT, AGENT_AND_USER

SECRET = "The gold answer is that sales fall\nwhen prices rise by ten percent."


class Vault(CoEnv):
    """A task with one hidden answer, and an action that wrongly shows it in the shared view."""

    name = "vault"

    @property
    def task_description(self) -> str:
        return "Find out how sales react to prices."

    def _reset(self, seed):
        self.board = ""

    def public_components(self):
        return [Component(name="board", render_type=RenderType.TEXT, content=self.board)]

    def hidden_strings(self):
        return [SECRET]

    def outcome(self):
        return self.board

    @action("Look into the answer file (a leak).")
    def peek(self, role: str) -> None:
        self.board = "Printed: " + SECRET.upper().replace("\n", "   ")

    @action("Write on the board.", text="What to write")
    def write(self, role: str, text: str) -> None:
        self.board = text


class Script:
    """A member that plays its actions in order, one per notification, then finishes."""

    def __init__(self, kind: str, actions: list[str], lm=None) -> None:
        self.kind, self.actions, self.lm = kind, list(actions), lm

    def start(self, context): pass

    def end(self, final): pass

    async def act(self, notification):
        if self.lm is not None:  # an agent's LM sees what it is shown
            await self.lm.complete([{"role": "user", "content": json.dumps(
                notification.view.model_dump(mode="json"))}], purpose="act")
        return self.actions.pop(0) if self.actions else None


def test_matching_ignores_case_and_line_wrapping():
    guard = LeakageGuard([SECRET], agents={"agent"}, humans={"user"})
    assert normalise("A\n  b\tC ") == "a b c"
    guard.watch_prompt("agent", [{"role": "user", "content": SECRET.replace(" ", "\n").upper()}])
    guard.watch_prompt("user", [{"role": "user", "content": SECRET}])  # not an agent
    found = guard.report()
    assert [(hit.role, hit.where) for hit in found.leaks] == [("agent", "prompt:call")]
    assert found.checked and found.hidden_strings == 1 and found.excused == 0


def test_a_leak_into_an_agents_view_and_prompt_is_reported_in_session_json(tmp_path, server):
    lm = make_lm(LMConfig(model="agent-lm", base_url=server.base_url, max_retries=0))
    server.extend(["ok"] * 10)
    agent = Script("agent", ["PEEK()", "FINISH()"], lm=lm)
    session = Session(Vault(), {"agent": agent}, kinds=AGENT, results_dir=tmp_path,
                      config=SessionConfig(idle_seconds=5))
    session.run_sync()
    leakage = read_session(tmp_path)["leakage"]
    assert leakage["checked"] and leakage["excused"] == 0
    places = {hit["where"] for hit in leakage["leaks"]}
    assert places == {"view:board", "prompt:act"}
    assert all(hit["role"] == "agent" for hit in leakage["leaks"])
    view_hit = next(hit for hit in leakage["leaks"] if hit["where"] == "view:board")
    assert view_hit["seq"] == 2 and view_hit["hidden"].startswith("The gold answer")

    text = report([tmp_path], effort=False, failures=False).to_text()
    assert "Leakage check" in text and "1 with a leak" in text
    assert load_session(tmp_path).leakage["leaks"]


class Person:
    kind = "user"

    def __init__(self, actions):
        self.actions = list(actions)

    def start(self, context): pass

    def end(self, final): pass

    async def act(self, notification):
        return self.actions.pop(0) if self.actions else None


def test_what_the_human_side_says_itself_is_no_leak(tmp_path):
    said = json.dumps(SECRET)
    user = Person([f"SEND_TEAMMATE_MESSAGE(message={said})"])
    agent = Script("agent", [f"WRITE(text={said})", "FINISH()"])
    Session(Vault(), {"agent": agent, "user": user}, kinds=AGENT_AND_USER, results_dir=tmp_path,
            config=SessionConfig(idle_seconds=5)).run_sync()
    leakage = read_session(tmp_path)["leakage"]
    assert leakage["leaks"] == [] and leakage["excused"] >= 1


@pytest.mark.parametrize("hostile", ["\ud83d", "\u2028", "\x00", "<script>x</script>",
                                     "x" * 1_000_000])
def test_hostile_text_in_prompts_and_hidden_strings_does_not_break_the_guard(hostile):
    guard = LeakageGuard([SECRET, hostile], agents={"agent"}, humans=set())
    guard.watch_prompt("agent", [{"role": "user", "content": "nothing here " + hostile}])
    guard.watch_prompt("agent", [{"role": "user", "content": hostile + SECRET}])
    found = guard.report()
    # A hidden string that is only whitespace would match everything: it is not searched for.
    assert found.hidden_strings == (1 if not hostile.strip() else 2)
    assert any(hit.hidden.startswith("The gold answer") for hit in found.leaks)


def test_a_finding_the_agent_wrote_before_it_was_shown_the_answer_is_no_leak(tmp_path):
    agent = Script("agent", [f"WRITE(text={json.dumps(SECRET)})", "FINISH()"])
    Session(Vault(), {"agent": agent}, kinds=AGENT, results_dir=tmp_path,
            config=SessionConfig(idle_seconds=5)).run_sync()
    leakage = read_session(tmp_path)["leakage"]
    assert leakage["leaks"] == [] and leakage["excused"] == 1


def test_a_finding_written_after_a_peek_is_still_a_leak(tmp_path):
    agent = Script("agent", ["PEEK()", f"WRITE(text={json.dumps(SECRET)})", "FINISH()"])
    Session(Vault(), {"agent": agent}, kinds=AGENT, results_dir=tmp_path,
            config=SessionConfig(idle_seconds=5)).run_sync()
    leaks = read_session(tmp_path)["leakage"]["leaks"]
    assert [(hit["where"], hit["seq"]) for hit in leaks] == [("view:board", 2)]


class CellThenFinish:
    """An agent that runs one cell, waits for its outputs, then finishes."""

    kind = "agent"

    def __init__(self, code: str) -> None:
        self.code, self.sent = code, False

    def start(self, context): pass

    def end(self, final): pass

    async def act(self, notification):
        if not self.sent:
            self.sent = True
            return {"name": "EXECUTE_JUPYTER_CELL", "args": {"code": self.code}}
        cells = notification.view["notebook"].content["cells"]
        return "FINISH()" if cells else None


@pytest.mark.timeout(180)
def test_a_gold_hypothesis_printed_by_a_cell_is_reported(tmp_path, datasets_dir,
                                                         use_shared_data):
    """A cell that prints the gold, however it came by it (here: the code carries it reversed,
    so the agent never wrote it; the confined kernel cannot read the answer key itself), is
    reported by the guard."""
    from cogym_lab.envs import make_env

    env = make_env("tabular_analysis", instance=0, workdir=str(tmp_path / "work"))
    code = f"print({env.task.gold_hypothesis[::-1]!r}[::-1])"
    Session(env, {"agent": CellThenFinish(code)}, kinds=AGENT, results_dir=tmp_path / "run",
            config=SessionConfig(idle_seconds=30, timeout=120)).run_sync()
    leaks = read_session(tmp_path / "run")["leakage"]["leaks"]
    assert any(hit["where"] == "view:notebook" for hit in leaks), leaks
    assert env.task.gold_hypothesis[:40] in " ".join(hit["hidden"] for hit in leaks)


class SaysAfterSeeing:
    """A simulated person who says the secret once it sees the board written on (so after the
    agent was shown it), or at once (``first=True``, so before)."""

    kind = "user"

    def __init__(self, first: bool) -> None:
        self.first, self.said = first, False

    def start(self, context): pass

    def end(self, final): pass

    async def act(self, notification):
        if self.said or not (self.first or notification.view["board"].content):
            return None
        self.said = True
        return f"SEND_TEAMMATE_MESSAGE(message={json.dumps(SECRET)})"


class PeeksAroundTheMessage:
    """An agent that peeks at the answer (before the person speaks, or only after it heard
    them: ``after_message``), then finishes once it has seen the person's message."""

    kind = "agent"

    def __init__(self, after_message: bool) -> None:
        self.after_message, self.peeked = after_message, False

    def start(self, context): pass

    def end(self, final): pass

    async def act(self, notification):
        heard = any(m.sender == "user" for m in notification.chat)
        if not self.peeked and (heard or not self.after_message):
            self.peeked = True
            return "PEEK()"
        return "FINISH()" if self.peeked and heard else None


@pytest.mark.parametrize(("person_first", "leaked"), [(False, True), (True, False)])
def test_the_persons_excuse_needs_the_person_to_have_written_it_first(tmp_path, person_first,
                                                                     leaked):
    """The agent is shown the secret (a peek at seq 2 or later); the person writes it too.
    Written after the agent had it, the person's words excuse nothing: still a leak. Written
    before, they do."""
    agent = PeeksAroundTheMessage(after_message=person_first)
    user = SaysAfterSeeing(first=person_first)
    Session(Vault(), {"agent": agent, "user": user}, kinds=AGENT_AND_USER,
            results_dir=tmp_path, config=SessionConfig(idle_seconds=5, timeout=60)).run_sync()
    events = read_events(tmp_path)
    said = next(e.seq for e in events if e.type is EventType.MESSAGE)
    peeked = next(e.seq for e in events if e.action == "PEEK()")
    assert (said < peeked) is person_first
    leakage = read_session(tmp_path)["leakage"]
    if leaked:
        assert [(hit["where"], hit["seq"]) for hit in leakage["leaks"]] == [
            ("view:board", peeked)]
    else:
        assert leakage["leaks"] == [] and leakage["excused"] >= 1


def test_a_person_writing_the_string_later_does_not_excuse_an_earlier_prompt():
    """The agent's LM was given the secret before anyone was sent anything; the person's
    message, however soon the guard hears of it, comes after."""
    guard = LeakageGuard([SECRET], agents={"agent"}, humans={"user"})
    guard.watch_prompt("agent", [{"role": "user", "content": SECRET}], purpose="act")
    guard.watch_event(Event(seq=7, time=7.0, type=EventType.MESSAGE, actor="user",
                            action=f"SEND_TEAMMATE_MESSAGE(message={json.dumps(SECRET)})"))
    found = guard.report()
    assert [(hit.where, hit.seq) for hit in found.leaks] == [("prompt:act", 0)]
    assert found.excused == 0
