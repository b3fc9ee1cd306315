"""A task's code failing on an action is logged as that failure, and replay repeats it from the
log instead of running the task again (where it might succeed); logs from before replay as they
did. The property test over whole sessions is tests/nodes/test_properties_transient_failures.py.
"""

from __future__ import annotations

import pytest

from cogym_lab.core import ActionError, CoEnv, Component, RenderType, action
from cogym_lab.core.coordinator import Coordinator, Transition
from cogym_lab.core.failures import FAILED
from cogym_lab.core.messages import Event, EventType, TeamMember
from cogym_lab.nodes.restore import ReplayMismatch, replay_events, restore
from tests.support.panel_replica import PanelReplica

TEAM = [TeamMember(role="agent", kind="agent"), TeamMember(role="person", kind="person")]


class Shaky(CoEnv):
    """A shared text and a list whose actions fail (``OSError``) while ``down`` says so, like a
    handler whose storage is away for a moment; ``HOLD`` starts work that holds a slot."""

    name = "shaky"

    def __init__(self, *, down: int = 0) -> None:
        super().__init__()
        self.down = down  # how many more runs of a handler fail
        self.calls = 0

    @property
    def task_description(self) -> str:
        return "Keep a list."

    def _reset(self, seed: int | None) -> None:
        self.items: list[str] = []
        self.text = ""
        self.holding: dict[str, str] = {}
        self.released = 0

    def public_components(self) -> list[Component]:
        return [Component(name="items", render_type=RenderType.TEXT, content=list(self.items)),
                Component(name="editor", render_type=RenderType.EDITOR, content=self.text),
                Component(name="holding", render_type=RenderType.TEXT,
                          content=dict(self.holding))]

    def outcome(self) -> list[str]:
        return list(self.items)

    def _storage(self) -> None:
        self.calls += 1
        if self.down:
            self.down -= 1
            raise OSError("the storage is away")

    @action("Add an item.", text="The item")
    def add(self, role: str, text: str) -> None:
        if not text:
            raise ActionError("ADD needs a text.")
        self._storage()
        self.items.append(text)

    @action("Replace the text.", replaces="editor", text="The text")
    def write(self, role: str, text: str) -> None:
        self._storage()
        self.text = text

    @action("Hold a slot while slow work runs.", what="What for")
    def hold(self, role: str, what: str) -> None:
        self.holding[role] = what

    def work_failed(self, role: str) -> None:
        self.holding.pop(role, None)
        self.released += 1


def run(coordinator: Coordinator, *transitions: Transition) -> list[Event]:
    return [event for transition in transitions for event in transition.events]


def replayed(events: list[Event], env: Shaky | None = None) -> Coordinator:
    replica = Coordinator(env or Shaky(), TEAM, session_id="s")
    for _ in replay_events(replica, events):
        pass
    return replica


def test_an_action_that_failed_replays_as_that_failure_without_running_again() -> None:
    live = Coordinator(Shaky(down=1), TEAM, session_id="s")
    events = run(live, live.start(0.0), live.handle("agent", 'ADD(text="tent")', 1.0),
                 live.handle("agent", 'ADD(text="tent")', 2.0))
    failed = events[1]
    assert (failed.type, failed.status, failed.info) == (EventType.ERROR, "error",
                                                          {FAILED: "OSError"})
    assert failed.error == "The task failed on this action: OSError: the storage is away"
    assert live.env.items == ["tent"]

    replica = replayed(events)  # its storage never fails: running the action would succeed
    assert replica.snapshot() == live.snapshot()
    assert replica.env.calls == 1  # only the action that worked ran
    assert replica.step_counts == live.step_counts


def test_a_refusal_is_no_failure_and_replays_by_running_the_action_again() -> None:
    live = Coordinator(Shaky(), TEAM, session_id="s")
    events = run(live, live.start(0.0), live.handle("agent", 'ADD(text="")', 1.0))
    assert events[1].type is EventType.ERROR and FAILED not in events[1].info
    assert replayed(events).snapshot() == live.snapshot()


def test_a_log_from_before_failures_were_recorded_runs_the_action_again() -> None:
    """An error without the marker is re-applied as before: a task that now succeeds where it
    failed then is a log that does not replay, as it always was."""
    live = Coordinator(Shaky(down=1), TEAM, session_id="s")
    events = run(live, live.start(0.0), live.handle("agent", 'ADD(text="tent")', 1.0))
    old = [events[0], events[1].model_copy(update={"info": {}})]
    with pytest.raises(ReplayMismatch, match="replayed as action"):
        replayed(old)
    assert replayed(old, Shaky(down=1)).snapshot() == live.snapshot()  # it fails again


def test_an_accepted_action_that_failed_replays_as_that_failure() -> None:
    class AskFirst(Shaky):
        def needs_confirmation(self, role: str, act: object) -> bool:
            return role == "agent"

    live = Coordinator(AskFirst(down=1), TEAM, session_id="s")
    events = run(live, live.start(0.0), live.handle("agent", 'ADD(text="tent")', 1.0),
                 live.handle("person", 'ACCEPT_CONFIRMATION(request_id="c1")', 2.0))
    accepted = events[-1]
    assert accepted.type is EventType.ERROR and accepted.info[FAILED] == "OSError"
    replica = Coordinator(AskFirst(), TEAM, session_id="s")
    for _ in replay_events(replica, events):
        pass
    assert replica.snapshot() == live.snapshot() and replica.env.calls == 0


def test_a_persons_typing_that_the_task_failed_to_take_replays_as_that_failure() -> None:
    live = Coordinator(Shaky(down=1), TEAM, session_id="s")
    started = live.start(0.0)
    panel = PanelReplica(client=7)
    for update in started.updates:
        if update.recipient == "person":
            panel.receive(update.texts, update.seq)
    panel.type(0, 0, "Hello")
    batch = panel.take()
    assert batch is not None
    typed = live.handle("person", batch.action("editor", panel.client), 1.0,
                        seen_seq=batch.seen_seq)
    events = run(live, started, typed)
    assert events[-1].type is EventType.ERROR and events[-1].info[FAILED] == "OSError"
    assert live.env.text == ""
    replica = replayed(events)
    assert replica.snapshot() == live.snapshot() and replica.env.calls == 0


def test_failed_deferred_work_releases_what_it_held_live_and_on_replay_and_resume() -> None:
    live = Coordinator(Shaky(), TEAM, session_id="s")
    events = run(live, live.start(0.0), live.handle("agent", 'HOLD(what="a cell")', 1.0))
    assert live.env.holding == {"agent": "a cell"}
    failure = live.deferred_failed("agent", 'HOLD(what="a cell")', "The kernel did not start",
                                   2.0, failed="RuntimeError")
    events += failure.events
    assert failure.events[0].info == {"deferred": True, FAILED: "RuntimeError"}
    assert live.env.holding == {} and live.env.released == 1

    replica = replayed(events)
    assert replica.snapshot() == live.snapshot() and replica.env.released == 1
    resumed = Coordinator(Shaky(), TEAM, session_id="s")
    restored = restore(resumed, events)
    assert restored.events == len(events) and resumed.env.holding == {}


def test_a_deferred_failure_logged_before_failures_were_recorded_releases_nothing() -> None:
    """So an old log replays to the final state its session saved."""
    live = Coordinator(Shaky(), TEAM, session_id="s")
    events = run(live, live.start(0.0), live.handle("agent", 'HOLD(what="a cell")', 1.0))
    old = events[-1].model_copy(update={"seq": 3, "type": EventType.ERROR, "status": "error",
                                        "error": "failed", "info": {"deferred": True},
                                        "recipients": ["agent"], "private": True})
    replica = replayed([*events, old])
    assert replica.env.holding == {"agent": "a cell"} and replica.env.released == 0
