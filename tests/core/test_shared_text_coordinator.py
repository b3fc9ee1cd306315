"""The coordinator and a session keep whole-text replacements (``@action(replaces=...)``) on
the shared text's CRDT document: an edit made on an older version is merged with what changed
since, the actor is told of an overlap, and the log replays to the same text."""

from __future__ import annotations

import asyncio
import json

from cogym_lab.bus import MemoryBus
from cogym_lab.core import CoEnv, Component, Notification, RenderType, action
from cogym_lab.core.coordinator import Coordinator, Transition
from cogym_lab.core.messages import EventType, StepRequest, TeamMember, obs_channel, step_channel
from cogym_lab.envs.related_work import RelatedWorkEnv
from cogym_lab.envs.tabular_analysis import TabularAnalysisEnv
from cogym_lab.envs.travel_planning import TravelPlanningEnv
from cogym_lab.nodes.session import Session, SessionConfig
from tests.support.notified import notified
from tests.support.panel_replica import PanelReplica
from tests.support.teammates import Quiet

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

class PersonAtKeyboard(Quiet):
    """A member of the human side that edits the text once, as soon as the session starts."""

    def __init__(self, edited: asyncio.Event) -> None:
        self.edited = edited
        self.sent = False

    async def act(self, notification: Notification):
        if not self.sent:
            self.sent = True
            return _update(PERSON_TEXT)
        if notification.event.actor == "person":
            self.edited.set()
        if notification.event.actor == "agent" and notification.event.type is EventType.ACTION:
            return {"name": "FINISH", "args": {}}
        return None


class QuickAgent(Quiet):
    """Rewrites the text at once, then waits."""

    def __init__(self) -> None:
        self.done = False

    async def act(self, notification: Notification):
        if self.done:
            return None
        self.done = True
        await self.before_rewriting(notification)
        return _update(AGENT_TEXT)

    async def before_rewriting(self, notification: Notification) -> None:
        """What it does between reading the text and rewriting its copy: nothing."""


class SlowAgent(QuickAgent):
    """Reads the text, thinks until the person's edit has landed, then rewrites its old copy."""

    def __init__(self, edited: asyncio.Event) -> None:
        super().__init__()
        self.edited = edited

    async def before_rewriting(self, notification: Notification) -> None:
        assert notification.view["editor"].content == BASE
        await asyncio.wait_for(self.edited.wait(), 30)


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


# -- overlaps, live edits and their announcement ---------------------------------------------------

DAYS = "Day 1: beach\nDay 2: Getty\nDay 3: fly home\n"


def _days() -> tuple[Coordinator, list]:
    coordinator = Coordinator(Notes(), TEAM, session_id="s1")
    log = coordinator.start(1.0).events
    log += coordinator.handle("person", _update(DAYS), 2.0).events
    log += coordinator.handle("agent", {"name": "WAIT_TEAMMATE_CONTINUE", "args": {}}, 2.5).events
    return coordinator, log


def _overlapping_edits(coordinator: Coordinator) -> tuple[Transition, Transition]:
    """On the same version of :data:`DAYS`, the person deletes day 2 and then the agent
    rewrites it: the person's transition and the agent's."""
    seen = coordinator.seq
    deleted = coordinator.handle("person", _update("Day 1: beach\nDay 3: fly home\n"), 3.0,
                                 seen_seq=seen)
    agent = coordinator.handle("agent", _update(
        "Day 1: beach\nDay 2: Getty museum at dawn\nDay 3: fly home\n"), 4.0, seen_seq=seen)
    return deleted, agent


def test_an_overlapping_edit_keeps_whole_lines_and_the_actor_is_told() -> None:
    coordinator, log = _days()
    deleted, agent = _overlapping_edits(coordinator)
    log += deleted.events + agent.events
    merged = "Day 1: beach\nDay 2: Getty museum at dawn\nDay 3: fly home\n"
    assert coordinator.env.text == merged  # once "Day 1: beach\nDay  at dawn3: fly home"
    info = agent.events[0].info
    assert info["overlap"] == {"component": "editor", "with": ["person"], "lines": [[2, 2]]}
    told = {n.recipient: n for n in notified(coordinator, agent)}
    assert told["agent"].event.info["overlap"]["lines"] == [[2, 2]]
    assert told["agent"].view["editor"].content == merged  # the merged text, to check
    assert "text_updates" not in told["agent"].event.info  # the log's, not the members'
    assert _replayed(coordinator, log)["views"] == coordinator.snapshot()["views"]


def _panel(coordinator: Coordinator, transition) -> PanelReplica:
    panel = PanelReplica(client=7)
    for update in transition.updates:
        if update.recipient == "person":
            panel.receive(update.texts, update.seq)
    return panel


def test_a_panels_live_edits_reach_the_people_at_once_and_the_agent_when_typing_pauses() -> None:
    coordinator = Coordinator(Notes(), TEAM, session_id="s1")
    started = coordinator.start(1.0)
    log = list(started.events)
    panel = _panel(coordinator, started)
    assert panel.value == BASE
    panel.type(len("Opening line.\n"), len("Opening line.\n"), "Typed live.\n")
    batch = panel.take()
    assert batch is not None
    edit = coordinator.handle("person", batch.action("editor", panel.client), 2.0,
                              seen_seq=batch.seen_seq)
    log += edit.events
    (event,) = edit.events
    assert event.type is EventType.EDIT and event.recipients == ["person"]  # not the agent yet
    assert coordinator.env.text == "Opening line.\nTyped live.\nClosing line.\n"
    assert coordinator.step_counts["person"] == 0  # typing is not a step
    (to_person,) = edit.updates
    panel.receive(to_person.texts, to_person.seq)
    assert panel.value == coordinator.env.text
    announced = coordinator.announce_edits(3.0)
    log += announced.events
    (news,) = announced.events
    assert news.type is EventType.ACTION and news.actor == "person"
    assert news.info["live"] == {"component": "editor", "since": event.seq}
    assert news.recipients == ["agent"]
    agent_view = {n.recipient: n for n in notified(coordinator, announced)}["agent"]
    assert agent_view.view["editor"].content == coordinator.env.text
    assert coordinator.announce_edits(4.0).events == []  # nothing new since
    fresh = Coordinator(Notes(), TEAM, session_id="s1")
    for logged in log:
        fresh.replay(logged)
    assert fresh.snapshot() == coordinator.snapshot()
    assert fresh._texts.text("editor").state_vector() == \
        coordinator._texts.text("editor").state_vector()


def test_the_end_of_a_session_announces_typing_not_yet_announced() -> None:
    coordinator = Coordinator(Notes(), TEAM, session_id="s1")
    panel = _panel(coordinator, coordinator.start(1.0))
    panel.type(0, 0, "Last words. ")
    batch = panel.take()
    assert batch is not None
    coordinator.handle("person", batch.action("editor", panel.client), 2.0,
                       seen_seq=batch.seen_seq)
    ending = coordinator.handle("person", {"name": "FINISH", "args": {}}, 3.0)
    assert [e.type for e in ending.events] == [EventType.FINISH, EventType.ACTION, EventType.END]
    assert ending.events[1].info["live"]["component"] == "editor"


def test_a_live_edit_from_anyone_but_a_person_or_of_no_shared_text_is_refused() -> None:
    coordinator = Coordinator(Notes(), TEAM, session_id="s1")
    panel = _panel(coordinator, coordinator.start(1.0))
    panel.type(0, 0, "x")
    batch = panel.take()
    assert batch is not None
    agent = coordinator.handle("agent", batch.action("editor", 7), 2.0)
    assert agent.events[0].type is EventType.ERROR
    assert "person's panel" in (agent.events[0].error or "")
    words = coordinator.handle("person", batch.action("words", 7), 2.0)
    assert "not a shared text" in (words.events[0].error or "")
    garbled = coordinator.handle("person", {"name": "EDIT_TEXT", "args": {
        "component": "editor", "client": 7, "update": "not base64!"}}, 2.0, seen_seq=1)
    assert "base64" in (garbled.events[0].error or "")
    unplaced = coordinator.handle("person", batch.action("editor", 7), 2.0)  # no seen_seq
    assert "seen_seq" in (unplaced.events[0].error or "")
    assert coordinator.env.text == BASE  # nothing changed


def test_live_edits_do_not_count_toward_the_event_limit() -> None:
    coordinator = Coordinator(Notes(), TEAM, session_id="s1", max_events=5)
    panel = _panel(coordinator, coordinator.start(1.0))
    for n in range(12):
        panel.type(0, 0, f"{n} ")
        batch = panel.take()
        assert batch is not None
        transition = coordinator.handle("person", batch.action("editor", panel.client),
                                        2.0 + n, seen_seq=batch.seen_seq)
        for update in transition.updates:
            panel.receive(update.texts, update.seq)
    assert not coordinator.done
    assert coordinator.env.text.startswith("11 10 9 8")


def test_the_agents_prompt_says_where_its_edit_overlapped_and_to_check_it() -> None:
    from cogym_lab.agents.base import _describe

    coordinator, _ = _days()
    person, agent = _overlapping_edits(coordinator)
    told = _describe(agent.events[0], "agent")
    assert "overlapped person's edit" in told and "lines 2" in told and "Check them" in told
    assert _describe(person.events[0], "agent").startswith("person did EDITOR_UPDATE")
    panel = PanelReplica(client=9)
    live = Coordinator(Notes(), TEAM, session_id="s2")
    for update in live.start(1.0).updates:
        if update.recipient == "person":
            panel.receive(update.texts, update.seq)
    panel.type(0, 0, "x")
    batch = panel.take()
    assert batch is not None
    live.handle("person", batch.action("editor", 9), 2.0, seen_seq=batch.seen_seq)
    (news,) = live.announce_edits(3.0).events
    assert _describe(news, "agent") == ("person has been editing the editor (the view shows "
                                        "it as it is now).")


def test_under_turn_taking_typing_neither_needs_nor_passes_the_turn() -> None:
    coordinator = Coordinator(Notes(), TEAM, session_id="s1", interaction="turns")
    log = list(coordinator.start(1.0).events)
    panel = PanelReplica(client=11)
    joined = coordinator.sync("person", 1.5)
    assert joined is not None
    panel.receive(joined.texts, joined.seq)
    assert coordinator.turns is not None and coordinator.turns.role == "agent"
    panel.type(0, 0, "Typed out of turn. ")
    batch = panel.take()
    assert batch is not None
    typed = coordinator.handle("person", batch.action("editor", 11), 2.0,
                               seen_seq=batch.seen_seq)
    log += typed.events
    (event,) = typed.events
    assert event.type is EventType.EDIT and event.recipients == ["person"]  # the panel's ack
    assert coordinator.env.text.startswith("Typed out of turn.")
    assert coordinator.turns.role == "agent"  # still the agent's turn
    log += coordinator.announce_edits(3.0).events
    fresh = Coordinator(Notes(), TEAM, session_id="s1", interaction="turns")
    for logged in log:
        fresh.replay(logged)
    assert fresh.snapshot() == coordinator.snapshot()
