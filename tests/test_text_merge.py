"""Concurrent edits of one text: the CRDT three-way merge, and the coordinator applying it to
whole-text replacements (``@action(replaces=...)``) so neither the person's nor the agent's edit
is lost, with a log that replays to the same text."""

from __future__ import annotations

import asyncio
import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from cogym_lab.bus import MemoryBus
from cogym_lab.core import CoEnv, Component, Notification, RenderType, action
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import EventType, StepRequest, TeamMember, obs_channel, step_channel
from cogym_lab.core.text_merge import merge_text, text_edits
from cogym_lab.envs.related_work import RelatedWorkEnv
from cogym_lab.envs.tabular_analysis import TabularAnalysisEnv
from cogym_lab.envs.travel_planning import TravelPlanningEnv
from cogym_lab.nodes.session import Session, SessionConfig
from tests.support.notified import notified

# Letters, spaces, newlines and characters outside the BMP (the CRDT must count them right).
CHARS = st.sampled_from(list("abc xyz\n.,éß") + ["😀", "🎉", "中"])
TEXT = st.text(alphabet=CHARS, max_size=40)
MARK = "§"  # never generated: separates the part one side edits from the part the other edits


# -- merge_text --------------------------------------------------------------------------------

@given(base=TEXT, ours=TEXT, theirs=TEXT)
@settings(max_examples=200, deadline=None)
def test_a_side_that_changed_nothing_is_the_identity(base: str, ours: str, theirs: str) -> None:
    assert merge_text(base, base, theirs) == theirs
    assert merge_text(base, ours, base) == ours


@given(base=TEXT, edited=TEXT)
@settings(max_examples=200, deadline=None)
def test_identical_edits_are_not_duplicated(base: str, edited: str) -> None:
    assert merge_text(base, edited, edited) == edited


@given(left=TEXT, right=TEXT, new_left=TEXT, new_right=TEXT)
@settings(max_examples=300, deadline=None)
def test_edits_of_separate_parts_are_both_kept(left: str, right: str, new_left: str,
                                               new_right: str) -> None:
    """Any edit (insert, delete, replace) of one part plus any edit of another part."""
    base = left + MARK + right
    ours, theirs = new_left + MARK + right, left + MARK + new_right
    assert merge_text(base, ours, theirs) == new_left + MARK + new_right
    assert merge_text(base, theirs, ours) == new_left + MARK + new_right


@st.composite
def two_insertions(draw: st.DrawFn, ours_chars=CHARS, theirs_chars=CHARS):
    base = draw(TEXT)
    i, j = draw(st.integers(0, len(base))), draw(st.integers(0, len(base)))
    a = draw(st.text(alphabet=ours_chars, min_size=1, max_size=20))
    b = draw(st.text(alphabet=theirs_chars, min_size=1, max_size=20))
    return base, i, j, a, b


def _is_subsequence(small: str, big: str) -> bool:
    chars = iter(big)
    return all(char in chars for char in small)


@given(two_insertions())
@settings(max_examples=300, deadline=None)
def test_both_sides_insertions_are_kept(case: tuple[str, int, int, str, str]) -> None:
    """Every character of both texts survives, in order (a letter both typed at one spot may
    count once: that is the same edit made twice)."""
    base, i, j, a, b = case
    ours, theirs = base[:i] + a + base[i:], base[:j] + b + base[j:]
    merged = merge_text(base, ours, theirs)
    assert _is_subsequence(ours, merged) and _is_subsequence(theirs, merged)
    assert len(merged) <= len(base) + len(a) + len(b)


@given(two_insertions(ours_chars=st.sampled_from("XYZ"), theirs_chars=st.sampled_from("PQR")))
@example(("aaa", 1, 0, "X", "P"))  # a repeated letter once made difflib move the X to the front
@settings(max_examples=300, deadline=None)
def test_distinct_insertions_land_where_each_side_put_them(
        case: tuple[str, int, int, str, str]) -> None:
    base, i, j, a, b = case
    ours, theirs = base[:i] + a + base[i:], base[:j] + b + base[j:]
    if i <= j:
        expected = base[:i] + a + base[i:j] + b + base[j:]
    else:
        expected = base[:j] + b + base[j:i] + a + base[i:]
    assert merge_text(base, ours, theirs) == expected


def test_insertions_at_one_spot_put_ours_first_every_time() -> None:
    for _ in range(5):  # fixed client ids: no run-to-run variation
        assert merge_text("ab", "a[person]b", "a[agent]b") == "a[person][agent]b"


def test_an_insertion_inside_a_deleted_span_survives() -> None:
    base = "Intro. Old paragraph about BM25 ranking. Outro."
    ours = "Intro. Outro."  # one side deletes the paragraph
    theirs = "Intro. Old paragraph about BM25 ranking [3]. Outro."  # the other cites in it
    merged = merge_text(base, ours, theirs)
    assert merged == "Intro.  [3]Outro."  # the citation outlives the paragraph it was added to


def test_long_texts_are_merged_line_by_line_and_keep_both_edits() -> None:
    lines = [f"Line {n}: some words about topic {n % 7}.\n" for n in range(400)]
    base = "".join(lines)
    ours = "".join(lines[:10] + ["A new line from the person.\n"] + lines[10:])
    theirs_lines = list(lines)
    theirs_lines[300] = "Line 300: rewritten by the agent.\n"
    theirs = "".join(theirs_lines)
    merged = merge_text(base, ours, theirs)
    assert "A new line from the person.\n" in merged
    assert "Line 300: rewritten by the agent.\n" in merged
    assert "Line 300: some words" not in merged
    assert len(merged.splitlines()) == 401


def test_text_edits_are_spans_of_the_base() -> None:
    edits = text_edits("the cat sat", "the black cat sat down")
    rebuilt, at = [], 0
    base = "the cat sat"
    for edit in edits:
        rebuilt += [base[at:edit.start], edit.text]
        at = edit.end
    assert "".join(rebuilt) + base[at:] == "the black cat sat down"
    assert text_edits("same", "same") == []


# -- the envs mark their whole-text actions ----------------------------------------------------

def test_editor_actions_of_the_tasks_declare_what_they_replace() -> None:
    def spec(env: type[CoEnv]):
        return next(s for s, _ in env._handlers.values() if s.name == "EDITOR_UPDATE")

    assert spec(RelatedWorkEnv).replaces == "editor"
    assert spec(TravelPlanningEnv).replaces == "plan"
    assert spec(TabularAnalysisEnv).replaces == "findings"
    assert all(s.replaces is None for s, _ in RelatedWorkEnv._handlers.values()
               if s.name != "EDITOR_UPDATE")


# -- the coordinator ---------------------------------------------------------------------------

class Notes(CoEnv):
    """A shared editor and a word counter, nothing else."""

    name = "notes"

    @property
    def task_description(self) -> str:
        return "Write notes together."

    def _reset(self, seed: int | None) -> None:
        self.text = "Opening line.\nClosing line.\n"

    def public_components(self) -> list[Component]:
        return [Component(name="editor", render_type=RenderType.EDITOR, content=self.text),
                Component(name="words", render_type=RenderType.TEXT,
                          content=str(len(self.text.split())))]

    def outcome(self) -> str:
        return self.text

    @action("Replace the whole text.", replaces="editor", text="The full text")
    def editor_update(self, role: str, text: str) -> None:
        self.text = text

    @action("Append a line.", line="The line")
    def append_line(self, role: str, line: str) -> None:
        self.text += line + "\n"


TEAM = [TeamMember(role="agent", kind="agent"), TeamMember(role="person", kind="person")]
BASE = "Opening line.\nClosing line.\n"
PERSON_TEXT = "Opening line.\nThe person's middle line.\nClosing line.\n"
AGENT_TEXT = "Opening line, polished by the agent.\nClosing line.\n"
BOTH = "Opening line, polished by the agent.\nThe person's middle line.\nClosing line.\n"


def _update(text: str) -> dict:
    return {"name": "EDITOR_UPDATE", "args": {"text": text}}


def _coordinator() -> Coordinator:
    coordinator = Coordinator(Notes(), TEAM, session_id="s1")
    coordinator.start(1.0)
    return coordinator


def _replayed(coordinator: Coordinator, events: list) -> dict:
    fresh = Coordinator(Notes(), TEAM, session_id="s1")
    for event in events:
        fresh.replay(event)
    return fresh.snapshot()


def test_agent_and_person_edit_the_same_base_concurrently_and_both_are_kept() -> None:
    coordinator = _coordinator()
    # Both started from the text of the start notification (seq 1).
    person = coordinator.handle("person", _update(PERSON_TEXT), 2.0, base=BASE)
    agent = coordinator.handle("agent", _update(AGENT_TEXT), 3.0, seen_seq=1)
    assert coordinator.env.text == BOTH
    assert "merged" not in person.events[0].info  # nothing had changed since its base
    assert agent.events[0].info["merged"] == "editor"
    assert agent.events[0].action == f"EDITOR_UPDATE(text={_json(BOTH)})"  # the log: merged
    assert notified(coordinator, agent)[0].view["editor"].content == BOTH


def _json(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def test_without_a_hint_the_last_text_shown_to_the_sender_is_its_base() -> None:
    coordinator = _coordinator()
    coordinator.handle("person", {"name": "APPEND_LINE", "args": {"line": "Added later."}}, 2.0)
    # The agent was shown the appended text, so its update replaces: it saw and dropped the line.
    coordinator.handle("agent", _update("Only this.\n"), 3.0)
    assert coordinator.env.text == "Only this.\n"


def test_a_stale_agent_edit_keeps_a_line_added_meanwhile_and_replays_exactly() -> None:
    coordinator = Coordinator(Notes(), TEAM, session_id="s1")
    log = coordinator.start(1.0).events
    log += coordinator.handle("person", {"name": "APPEND_LINE", "args": {"line": "P1."}},
                              2.0).events
    log += coordinator.handle("agent", _update(AGENT_TEXT), 3.0, seen_seq=1).events
    assert coordinator.env.text == "Opening line, polished by the agent.\nClosing line.\nP1.\n"
    assert _replayed(coordinator, log) == coordinator.snapshot()


def test_an_update_sent_unchanged_keeps_the_current_text() -> None:
    coordinator = _coordinator()
    coordinator.handle("person", _update(PERSON_TEXT), 2.0, base=BASE)
    coordinator.handle("agent", _update(BASE), 3.0, seen_seq=1)  # the agent changed nothing
    assert coordinator.env.text == PERSON_TEXT


def test_a_confirmed_update_is_merged_at_acceptance_and_replays_from_the_log() -> None:
    coordinator = Coordinator(Notes(), TEAM, session_id="s1")
    log = coordinator.start(1.0).events
    request = coordinator.handle("agent", {"name": "REQUEST_TEAMMATE_CONFIRM", "args": {
        "pending_action": f"EDITOR_UPDATE(text={_json(AGENT_TEXT)})"}}, 2.0, seen_seq=1)
    log += request.events
    log += coordinator.handle("person", _update(PERSON_TEXT), 3.0, base=BASE).events
    accepted = coordinator.handle("person", {"name": "ACCEPT_CONFIRMATION",
                                             "args": {"request_id": "c1"}}, 4.0)
    log += accepted.events
    assert coordinator.env.text == BOTH
    assert accepted.events[0].type is EventType.CONFIRM_ACCEPT
    assert accepted.events[0].info["applied_action"] == f"EDITOR_UPDATE(text={_json(BOTH)})"
    assert _replayed(coordinator, log) == coordinator.snapshot()


# -- a whole session: the agent thinks on an old view while the person edits ------------------

class PersonAtKeyboard:
    """A member of the human side that edits the text once, as soon as the session starts."""

    def __init__(self, edited: asyncio.Event) -> None:
        self.edited = edited
        self.sent = False

    def start(self, context) -> None:
        pass

    async def act(self, notification: Notification):
        if not self.sent:
            self.sent = True
            return _update(PERSON_TEXT)
        if notification.event.actor == "person":
            self.edited.set()
        if notification.event.actor == "agent" and notification.event.type is EventType.ACTION:
            return {"name": "FINISH", "args": {}}
        return None

    def end(self, final) -> None:
        pass


class SlowAgent:
    """Reads the text, thinks until the person's edit has landed, then rewrites its old copy."""

    def __init__(self, edited: asyncio.Event) -> None:
        self.edited = edited
        self.done = False

    def start(self, context) -> None:
        pass

    async def act(self, notification: Notification):
        if self.done:
            return None
        self.done = True
        assert notification.view["editor"].content == BASE
        await asyncio.wait_for(self.edited.wait(), 30)
        return _update(AGENT_TEXT)

    def end(self, final) -> None:
        pass


async def test_a_session_keeps_both_edits_and_its_log_replays_to_the_same_text(tmp_path) -> None:
    edited = asyncio.Event()
    events = []
    session = Session(Notes(), {"agent": SlowAgent(edited), "person": PersonAtKeyboard(edited)},
                      kinds={"agent": "agent", "person": "user"}, bus=MemoryBus(),
                      config=SessionConfig(idle_seconds=30, timeout=60),
                      observers=[events.append])
    result = await asyncio.wait_for(session.run(), 60)
    assert result.end_reason == "finished"
    assert result.outcome == BOTH
    merged = [e for e in events if e.info.get("merged")]
    assert [e.actor for e in merged] == ["agent"]
    fresh = Coordinator(Notes(), session.team, session_id=session.session_id)
    for event in events:
        fresh.replay(event)
    assert fresh.env.text == BOTH
    assert fresh.snapshot()["views"] == session.coordinator.snapshot()["views"]


class QuickAgent:
    """Rewrites the text at once, then waits."""

    def __init__(self) -> None:
        self.done = False

    def start(self, context) -> None:
        pass

    async def act(self, notification: Notification):
        if self.done:
            return None
        self.done = True
        return _update(AGENT_TEXT)

    def end(self, final) -> None:
        pass


async def test_a_person_save_sent_with_its_base_over_the_bus_is_merged() -> None:
    """The panel's path: a person seat sends ``StepRequest(base=...)`` after typing over the text
    it loaded, while the agent's rewrite landed in between."""
    bus = MemoryBus()
    session = Session(Notes(), {"agent": QuickAgent(), "person": None},
                      kinds={"agent": "agent", "person": "person"}, bus=bus,
                      config=SessionConfig(idle_seconds=30, timeout=60))
    notes = await bus.subscribe(obs_channel(session.session_id, "person"))
    await bus.publish(step_channel(session.session_id),
                      StepRequest(role="person", kind="join").model_dump(mode="json"))
    runner = asyncio.create_task(session.run())
    async with asyncio.timeout(60):
        async for message in notes:
            if any(c["content"] == AGENT_TEXT for c in message["components"]):
                break
        await bus.publish(step_channel(session.session_id), StepRequest(
            role="person", action=_update(PERSON_TEXT), base=BASE).model_dump(mode="json"))
        async for message in notes:
            if message["event"]["actor"] == "person":
                assert message["event"]["info"]["merged"] == "editor"
                break
        await bus.publish(step_channel(session.session_id), StepRequest(
            role="person", action={"name": "FINISH", "args": {}}).model_dump(mode="json"))
        result = await runner
    assert result.outcome == BOTH
