"""The notification protocol: who hears about what, limits, confirmations, pause/resume, the
notification contents, and deterministic replay. Driven with TodoEnv and a small team."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cogym_lab.core import (
    Action,
    ActionOutcome,
    CoEnv,
    Component,
    Deferred,
    Notification,
    RenderType,
    action,
)
from cogym_lab.core import collaboration as acts
from cogym_lab.core.coordinator import Coordinator, Transition, default_step_limits
from cogym_lab.core.grammar import parse_action
from cogym_lab.core.messages import Event, EventType, TeamMember
from cogym_lab.envs.todo import TodoEnv
from cogym_lab.envs.todo.env import IDEAS
from tests.support.notes_env import NotesEnv
from tests.support.notified import notified

AGENT = TeamMember(role="agent", kind="agent")
USER = TeamMember(role="user", kind="user")
HELPER = TeamMember(role="helper", kind="agent")
DUO = (AGENT, USER)
TRIO = (AGENT, USER, HELPER)
START_TIME = 1000.0


class Session:
    """A coordinator, a fake clock, and the log of everything it produced."""

    def __init__(self, team: Sequence[TeamMember] = DUO, **kwargs: Any) -> None:
        self.env = TodoEnv()
        self.coord = Coordinator(self.env, list(team), session_id="s-1", **kwargs)
        self.clock = START_TIME
        self.events: list[Event] = []
        self.notifications: list[Notification] = []
        self.start = self.record(self.coord.start(self.clock, seed=3))

    def now(self) -> float:
        self.clock += 1.5
        return self.clock

    def record(self, transition: Transition) -> Transition:
        self.events += transition.events
        self.notifications += notified(self.coord, transition)
        return transition

    def do(self, role: str, raw: Any, request_id: str | None = None) -> Transition:
        return self.record(self.coord.handle(role, raw, self.now(), request_id=request_id))

    def ok(self, role: str, raw: Any) -> Transition:
        transition = self.do(role, raw)
        errors = [e.error for e in transition.events if e.type is EventType.ERROR]
        assert not errors, errors
        return transition

    def tick(self) -> Transition:
        return self.record(self.coord.tick(self.now()))

    def items(self) -> list[dict[str, Any]]:
        return self.env.view("agent")["checklist"].content

    def last_to(self, role: str) -> Notification:
        return [n for n in self.notifications if n.recipient == role][-1]


def to(transition: Transition) -> list[str]:
    return [u.recipient for u in transition.updates]


def types(transition: Transition) -> list[EventType]:
    return [e.type for e in transition.events]


def shared_state(coord: Coordinator) -> dict[str, Any]:
    """The snapshot without the counters an error is allowed to move."""
    snapshot = coord.snapshot()
    return {k: v for k, v in snapshot.items() if k not in ("seq", "step_counts")}


def message(text: str, to_role: str | None = None) -> str:
    args = f'message={json.dumps(text)}' + (f', to="{to_role}"' if to_role else "")
    return f"SEND_TEAMMATE_MESSAGE({args})"


def request(pending: str) -> str:
    return f"REQUEST_TEAMMATE_CONFIRM(pending_action={json.dumps(pending)})"


# -- start, limits ---------------------------------------------------------------------------

def test_start_notifies_everyone_with_context() -> None:
    session = Session(TRIO)
    start = session.start
    assert types(start) == [EventType.START]
    event = start.events[0]
    assert (event.seq, event.time, event.actor, event.info) == (1, START_TIME, None, {"seed": 3})
    assert event.recipients == ["agent", "user", "helper"] == to(start)
    for n in notified(session.coord, start):
        assert n.session_id == "s-1" and n.seq == 1 and n.prev_seq is None
        assert n.started_at == START_TIME and n.time == START_TIME
        assert n.context is not None and n.context.role == n.recipient
        assert n.context.task == "todo"
        assert n.context.task_description == session.env.task_description
        assert [s.name for s in n.context.action_specs] == [
            "ADD_ITEM", "CHECK_ITEM", "REMOVE_ITEM", "SEARCH_IDEAS"]
        assert n.step_limits == {"agent": 30, "helper": 30}
        assert n.step_counts == {"agent": 0, "user": 0, "helper": 0}
        assert n.done is False and n.chat == [] and n.pending_confirmations == []
    by_role = {n.recipient: n.context for n in notified(session.coord, start)}
    agent_acts = {s.name for s in by_role["agent"].collaboration_specs}
    user_acts = {s.name for s in by_role["user"].collaboration_specs}
    assert "PAUSE_AGENT" not in agent_acts and "RESUME_AGENT" not in agent_acts
    assert user_acts == {s.name for s in acts.ALL_ACTS} - {acts.EDIT_TEXT.name}  # panels only
    assert agent_acts == user_acts - {"PAUSE_AGENT", "RESUME_AGENT"}
    assert (by_role["agent"].step_limit, by_role["user"].step_limit) == (30, None)


def test_default_step_limits() -> None:
    team = [AGENT, USER, HELPER, TeamMember(role="pat", kind="person")]
    assert default_step_limits(team) == {"agent": 30, "helper": 30}
    assert default_step_limits(team, agent_limit=5) == {"agent": 5, "helper": 5}
    assert default_step_limits([USER]) == {}


def test_team_validation() -> None:
    with pytest.raises(ValueError):
        Coordinator(TodoEnv(), [], session_id="s")
    with pytest.raises(ValueError):
        Coordinator(TodoEnv(), [AGENT, AGENT], session_id="s")


# -- task actions: private vs shared -----------------------------------------------------------

def test_shared_change_notifies_every_member() -> None:
    session = Session(TRIO)
    transition = session.ok("agent", "ADD_ITEM(text='tent')")
    assert types(transition) == [EventType.ACTION]
    event = transition.events[0]
    assert (event.actor, event.action, event.status, event.private) == (
        "agent", 'ADD_ITEM(text="tent")', "ok", False)
    assert event.recipients == ["agent", "user", "helper"] == to(transition)
    for n in notified(session.coord, transition):
        assert n.event == event
        assert n.view == session.env.view(n.recipient)
        assert [i["text"] for i in n.view["checklist"].content] == ["tent"]
        assert n.step_counts["agent"] == 1


def test_private_change_notifies_the_actor_only() -> None:
    session = Session(TRIO)
    transition = session.ok("agent", 'SEARCH_IDEAS(trip="beach")')
    event = transition.events[0]
    assert event.type is EventType.ACTION and event.private is True
    assert event.recipients == ["agent"] == to(transition)
    assert notified(session.coord, transition)[0].view["ideas"].content == IDEAS["beach"]
    assert session.coord.step_counts["agent"] == 1
    # the others' next notification does not carry the agent's private results
    later = session.ok("user", 'ADD_ITEM(text="towel")')
    for n in notified(session.coord, later):
        expected = IDEAS["beach"] if n.recipient == "agent" else []
        assert n.view["ideas"].content == expected


# -- messages ----------------------------------------------------------------------------------

def test_broadcast_message_notifies_everyone_the_sender_included() -> None:
    session = Session(TRIO)
    transition = session.ok("user", message("bring a tent, please"))
    event = transition.events[0]
    assert event.type is EventType.MESSAGE and event.actor == "user"
    assert event.action == 'SEND_TEAMMATE_MESSAGE(message="bring a tent, please")'
    # Listing 1: a message is a shared change, so the sender hears back too and its next act
    # sees its own message in the chat.
    assert event.recipients == ["agent", "user", "helper"] == to(transition)
    for n in notified(session.coord, transition):
        assert [m.text for m in n.chat] == ["bring a tent, please"]
        own = n.recipient == "user"
        assert [m.text for m in n.new_messages] == ([] if own else ["bring a tent, please"])
        if not own:
            assert n.new_messages[0].sender == "user" and n.new_messages[0].to is None
            assert n.new_messages[0].seq == event.seq
    assert session.coord.step_counts == {"agent": 0, "user": 0, "helper": 0}


def test_direct_message_reaches_only_its_recipient_and_its_sender() -> None:
    session = Session(TRIO)
    transition = session.ok("agent", message("psst", "user"))
    assert transition.events[0].recipients == ["user", "agent"] == to(transition)
    assert all([m.text for m in n.chat] == ["psst"] for n in notified(session.coord, transition))
    assert session.coord.visible_chat("agent")[0].text == "psst"  # the sender sees it
    assert session.coord.visible_chat("helper") == []
    # a shared change later: each member's chat shows only what it may see
    later = session.ok("user", 'ADD_ITEM(text="tent")')
    chats = {n.recipient: [m.text for m in n.chat] for n in notified(session.coord, later)}
    assert chats == {"agent": ["psst"], "user": ["psst"], "helper": []}
    news = {n.recipient: [m.text for m in n.new_messages] for n in notified(session.coord, later)}
    assert news == {"agent": [], "user": [], "helper": []}  # none new; own ones never count


@pytest.mark.parametrize("target", ["agent", "nobody"])
def test_message_to_self_or_stranger_is_an_error(target: str) -> None:
    session = Session()
    transition = session.do("agent", message("hi", target))
    assert types(transition) == [EventType.ERROR] and to(transition) == ["agent"]
    assert "user" in transition.events[0].error
    assert session.coord.chat == []


def test_new_messages_hold_messages_since_the_previous_notification() -> None:
    session = Session(TRIO)
    session.ok("user", message("one"))
    session.ok("helper", message("two", "user"))  # not for the agent
    session.ok("agent", 'SEARCH_IDEAS(trip="city")')  # agent notified alone
    session.ok("helper", message("three"))
    session.ok("user", message("four"))
    agent_news = [[m.text for m in n.new_messages] for n in session.notifications
                  if n.recipient == "agent"]
    assert agent_news == [[], ["one"], [], ["three"], ["four"]]
    user_news = [[m.text for m in n.new_messages] for n in session.notifications
                 if n.recipient == "user"]
    assert user_news == [[], [], ["two"], ["three"], []]  # its own messages never count as new
    user_last = session.last_to("user")
    assert [m.text for m in user_last.chat] == ["one", "two", "three", "four"]


# -- waits and ticks ---------------------------------------------------------------------------

def test_wait_is_logged_and_notifies_nobody() -> None:
    session = Session()
    transition = session.ok("agent", "WAIT_TEAMMATE_CONTINUE()")
    assert types(transition) == [EventType.WAIT]
    assert transition.events[0].actor == "agent"
    assert transition.events[0].action == "WAIT_TEAMMATE_CONTINUE()"
    assert transition.events[0].recipients == [] and notified(session.coord, transition) == []
    assert session.coord.step_counts == {"agent": 0, "user": 0}
    assert session.coord.seq == 2


def test_tick_notifies_everyone_and_idle_ticks_end_the_session() -> None:
    session = Session(TRIO, max_idle_ticks=2)
    for count in (1, 2):
        tick = session.tick()
        assert types(tick) == [EventType.TICK]
        assert tick.events[0].info == {"idle_ticks": count}
        assert to(tick) == ["agent", "user", "helper"] == tick.events[0].recipients
        assert not session.coord.done
    end = session.tick()
    assert types(end) == [EventType.END]
    assert end.events[0].info["reason"] == "idle"
    assert to(end) == ["agent", "user", "helper"]
    assert all(n.done and n.end_reason == "idle" for n in notified(session.coord, end))
    assert session.tick().events == [] and session.do("agent", "FINISH()").events == []


@pytest.mark.parametrize("reset_by", [
    ("agent", 'ADD_ITEM(text="tent")'),
    ("agent", 'SEARCH_IDEAS(trip="beach")'),
    ("user", message("still there?")),
    ("agent", request('ADD_ITEM(text="stove")')),
    ("user", "PAUSE_AGENT()"),
])
def test_non_wait_actions_reset_the_idle_count(reset_by: tuple[str, str]) -> None:
    session = Session(max_idle_ticks=2)
    session.tick()
    session.tick()
    session.ok(*reset_by)
    assert session.coord.idle_ticks == 0
    assert [types(session.tick()), types(session.tick())] == [[EventType.TICK]] * 2
    assert types(session.tick()) == [EventType.END]


def test_waits_do_not_reset_the_idle_count() -> None:
    session = Session(max_idle_ticks=2)
    session.tick()
    session.ok("agent", "WAIT_TEAMMATE_CONTINUE()")
    session.tick()
    session.ok("user", "WAIT_TEAMMATE_CONTINUE()")
    end = session.tick()
    assert types(end) == [EventType.END] and session.coord.end_reason == "idle"


# -- errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw", [
    "FLY()", "ADD_ITEM()", 'ADD_ITEM(text="tent")', "CHECK_ITEM(item_id=42)",
    {"name": "ADD_ITEM", "args": {"txt": "x"}}, "hmm, not sure", "PAUSE_AGENT()",
    'ACCEPT_CONFIRMATION(request_id="c9")',
])
def test_error_notifies_actor_only_changes_nothing_and_counts(raw: Any) -> None:
    session = Session(TRIO)
    session.ok("user", 'ADD_ITEM(text="tent")')
    before = shared_state(session.coord)
    transition = session.do("agent", raw, request_id="req-1")
    assert types(transition) == [EventType.ERROR]
    event = transition.events[0]
    assert (event.actor, event.status, event.private) == ("agent", "error", True)
    assert event.error and event.request_id == "req-1"
    assert event.action == (raw if isinstance(raw, str) else json.dumps(raw))
    assert event.recipients == ["agent"] == to(transition)
    notification = notified(session.coord, transition)[0]
    assert notification.event.error == event.error
    assert shared_state(session.coord) == before
    assert session.coord.step_counts == {"agent": 1, "user": 1, "helper": 0}


def test_error_message_names_the_expected_form() -> None:
    session = Session()
    error = session.do("agent", "ADD_ITEM()").events[0].error
    assert 'ADD_ITEM(text="...")' in error
    error = session.do("agent", "SHOUT()").events[0].error
    assert 'ADD_ITEM(text="...")' in error and "FINISH()" in error


@pytest.mark.parametrize("raw", [
    pytest.param('ADD_ITEM(text=' + "[" * 5000 + ")", id="deeply-nested-json"),
    pytest.param({"name": "ADD_ITEM", "args": {7: "tent"}}, id="non-string-arg-name"),
])
def test_pathological_input_becomes_an_error_event(raw: Any) -> None:
    """BUG (in the grammar): handle() promises that bad input becomes an error event and that
    nothing raises, but these raise RecursionError / pydantic ValidationError out of it."""
    session = Session()
    before = shared_state(session.coord)
    transition = session.do("agent", raw)
    assert types(transition) == [EventType.ERROR] and to(transition) == ["agent"]
    assert shared_state(session.coord) == before


def test_unknown_role_is_logged_but_notifies_nobody() -> None:
    session = Session()
    before = session.coord.snapshot()
    transition = session.do("intruder", 'ADD_ITEM(text="x")')
    assert types(transition) == [EventType.ERROR] and notified(session.coord, transition) == []
    assert "agent, user" in transition.events[0].error
    after = session.coord.snapshot()
    assert {**after, "seq": before["seq"]} == before


# -- step and event limits ---------------------------------------------------------------------

def test_step_limit_ends_the_session() -> None:
    session = Session(step_limits={"agent": 2})
    session.ok("agent", 'ADD_ITEM(text="a")')
    session.ok("agent", message("not a step"))
    session.ok("agent", "WAIT_TEAMMATE_CONTINUE()")
    assert not session.coord.done
    transition = session.do("agent", 'ADD_ITEM(text="b")')
    assert types(transition) == [EventType.ACTION, EventType.END]
    end = transition.events[1]
    assert end.info == {"reason": "step_limit", "role": "agent"}
    assert session.coord.end_reason == "step_limit"
    assert sorted(n.recipient for n in notified(session.coord, transition) if n.event.type == "end") == [
        "agent", "user"]
    assert all(n.done for n in notified(session.coord, transition) if n.event.type is EventType.END)


def test_errors_count_towards_the_step_limit() -> None:
    session = Session(step_limits={"agent": 2})
    session.do("agent", "nonsense")
    transition = session.do("agent", "more nonsense")
    assert types(transition) == [EventType.ERROR, EventType.END]
    assert session.coord.end_reason == "step_limit"


def test_under_every_act_is_a_step_messages_count_and_waits_do_not() -> None:
    """Protocol cogym counts what the Co-Gym release counts: every event its env node logs for a
    member (``TaskEnvNode.count_agent_action`` / ``count_user_action`` count the event log's
    entries). The expected counts were worked out by hand through that node's
    ``event_handler``: a message and a failed task action are logged (2 for the agent), a
    ``WAIT_TEAMMATE_CONTINUE`` returns before anything is logged (still 2), and the user's
    message and task action make 2 of its limit of 2, which ends the session."""
    session = Session(TRIO, step_limits={"agent": 4, "user": 2}, every_act_is_a_step=True)
    session.ok("agent", message("hello"))
    session.ok("agent", "WAIT_TEAMMATE_CONTINUE()")
    session.ok("agent", "WAIT_TEAMMATE_CONTINUE()")
    session.do("agent", "nonsense")  # refused: still one of its events
    assert session.coord.step_counts == {"agent": 2, "user": 0, "helper": 0}
    session.ok("user", message("hi"))
    transition = session.ok("user", 'ADD_ITEM(text="tent")')
    assert types(transition) == [EventType.ACTION, EventType.END]
    assert transition.events[1].info == {"reason": "step_limit", "role": "user"}
    assert notified(session.coord, transition)[0].step_counts["user"] == 2  # the count it was sent
    replay_matches(session, TRIO, step_limits={"agent": 4, "user": 2}, every_act_is_a_step=True)


def test_under_every_act_is_a_step_waits_never_reach_the_limit() -> None:
    """An agent that only waits never ends a session under cogym (the release logs no wait)."""
    session = Session(step_limits={"agent": 3, "user": 3}, every_act_is_a_step=True)
    for _ in range(10):
        session.ok("agent", "WAIT_TEAMMATE_CONTINUE()")
    assert not session.coord.done and session.coord.step_counts["agent"] == 0
    session.ok("agent", message("one"))
    session.ok("agent", message("two"))
    transition = session.ok("agent", message("three"))
    assert types(transition)[-1] is EventType.END and session.coord.end_reason == "step_limit"


def test_under_every_act_is_a_step_deferred_results_are_not_another_act() -> None:
    class Slow(CoEnv):
        name = "slow"
        task_description = "Write slowly."

        def _reset(self, seed):
            self.text = ""

        def public_components(self):
            return [Component(name="editor", render_type=RenderType.EDITOR, content=self.text)]

        @action("Start slow work.")
        def start_work(self, role: str) -> ActionOutcome:
            return ActionOutcome(deferred=Deferred(work=lambda: None, label="Work"))

        @action("Record the result.", internal=True, text="The result")
        def record(self, role: str, text: str) -> None:
            self.text = text

    coord = Coordinator(Slow(), [AGENT, USER], session_id="d", every_act_is_a_step=True)
    coord.start(0.0)
    coord.handle("agent", "START_WORK()", 1.0)
    coord.apply_follow_up("agent", 'RECORD(text="done")', 2.0)  # the work's result
    coord.apply_observed("user", 'RECORD(text="mine")', 3.0)  # the user's own act, seen by env
    assert coord.step_counts == {"agent": 1, "user": 1}


def test_under_every_act_is_a_step_an_accepted_action_is_also_the_requesters_step() -> None:
    """The release's env node logs an acceptance twice: the acceptor's ``ACCEPT_CONFIRMATION``
    and then the pending action under the requester's role (``TaskEnvNode.event_handler``), so
    by its count (worked out by hand) the agent has 2 events (its request and the action run for
    it), the user 1; a rejection is logged once, for the rejecting member only."""
    session = Session(every_act_is_a_step=True)
    session.ok("agent", request('ADD_ITEM(text="stove")'))  # the agent's act
    session.ok("user", "ACCEPT_CONFIRMATION(request_id=\"c1\")")  # the user's act, runs it
    assert session.coord.step_counts == {"agent": 2, "user": 1}
    assert [i.text for i in session.env.items] == ["stove"]
    session.ok("agent", request('ADD_ITEM(text="lamp")'))
    session.ok("user", "REJECT_CONFIRMATION(request_id=\"c2\")")
    assert session.coord.step_counts == {"agent": 3, "user": 2}
    replay_matches(session, DUO, every_act_is_a_step=True)


def test_an_accepted_action_on_the_requesters_last_step_ends_the_session() -> None:
    session = Session(step_limits={"agent": 2, "user": 5}, every_act_is_a_step=True)
    session.ok("agent", request('ADD_ITEM(text="stove")'))
    transition = session.ok("user", "ACCEPT_CONFIRMATION(request_id=\"c1\")")
    assert types(transition)[-1] is EventType.END
    assert transition.events[-1].info == {"reason": "step_limit", "role": "agent"}


def test_default_limit_is_thirty_agent_steps_and_humans_are_unlimited() -> None:
    session = Session()
    for i in range(40):
        session.ok("user", f'ADD_ITEM(text="u{i}")')
    assert not session.coord.done
    for i in range(29):
        session.ok("agent", f'ADD_ITEM(text="a{i}")')
    assert not session.coord.done
    transition = session.ok("agent", 'ADD_ITEM(text="last")')
    assert types(transition)[-1] is EventType.END
    assert session.coord.end_reason == "step_limit"
    assert session.coord.step_counts == {"agent": 30, "user": 40}


def test_event_limit_ends_the_session() -> None:
    session = Session(max_events=4)
    session.ok("user", message("a"))
    session.ok("user", message("b"))
    transition = session.ok("user", message("c"))
    assert types(transition) == [EventType.MESSAGE, EventType.END]
    assert transition.events[1].seq == 5
    assert session.coord.end_reason == "event_limit"
    assert session.do("user", message("d")).events == []


# -- FINISH ------------------------------------------------------------------------------------

def test_finish_ends_the_session_for_everyone() -> None:
    session = Session(TRIO)
    transition = session.do("agent", "FINISH()", request_id="r-9")
    assert types(transition) == [EventType.FINISH, EventType.END]
    finish, end = transition.events
    assert (finish.actor, finish.action, finish.recipients) == ("agent", "FINISH()", [])
    assert finish.request_id == "r-9" and end.request_id is None
    assert end.info == {"reason": "finished", "by": "agent"}
    assert end.recipients == ["agent", "user", "helper"] == to(transition)
    assert all(n.done and n.end_reason == "finished" and n.event == end
               for n in notified(session.coord, transition))
    assert session.coord.snapshot()["done"] is True
    assert session.do("user", 'ADD_ITEM(text="late")').events == []
    assert session.items() == []


# -- confirmations -----------------------------------------------------------------------------

def test_accepted_request_runs_as_the_requester() -> None:
    session = Session(TRIO)
    asked = session.ok("agent", request("ADD_ITEM(text='stove')"))
    event = asked.events[0]
    assert event.type is EventType.CONFIRM_REQUEST and event.info == {"request_id": "c1"}
    assert event.action == request("ADD_ITEM(text='stove')")  # logged as sent
    assert to(asked) == ["agent", "user", "helper"]
    pending = notified(session.coord, asked)[0].pending_confirmations
    assert [(c.request_id, c.requester, c.pending_action) for c in pending] == [
        ("c1", "agent", 'ADD_ITEM(text="stove")')]
    assert session.items() == [] and session.coord.step_counts["agent"] == 0

    accepted = session.ok("user", 'ACCEPT_CONFIRMATION(request_id="c1")')
    event = accepted.events[0]
    assert event.type is EventType.CONFIRM_ACCEPT and event.actor == "user"
    assert event.info == {"request_id": "c1", "requester": "agent",
                          "pending_action": 'ADD_ITEM(text="stove")'}
    assert to(accepted) == ["agent", "user", "helper"]  # a shared change
    assert session.items() == [{"id": 1, "text": "stove", "done": False, "added_by": "agent"}]
    assert session.coord.step_counts == {"agent": 1, "user": 0, "helper": 0}
    assert all(n.pending_confirmations == [] for n in notified(session.coord, accepted))


def test_accepted_private_request_notifies_requester_and_acceptor() -> None:
    session = Session(TRIO)
    session.ok("agent", request('SEARCH_IDEAS(trip="city")'))
    accepted = session.ok("helper", 'ACCEPT_CONFIRMATION(request_id="c1")')
    assert accepted.events[0].private is True
    assert sorted(to(accepted)) == ["agent", "helper"]
    views = {n.recipient: n.view["ideas"].content for n in notified(session.coord, accepted)}
    assert views == {"agent": IDEAS["city"], "helper": []}  # ran as the agent


def test_rejected_request_runs_nothing_and_tells_the_requester() -> None:
    session = Session(TRIO)
    session.ok("agent", request('ADD_ITEM(text="stove")'))
    before = session.coord.snapshot()["views"]
    rejected = session.ok("user", 'REJECT_CONFIRMATION(request_id="c1", reason="too heavy")')
    event = rejected.events[0]
    assert event.type is EventType.CONFIRM_REJECT
    assert event.info["requester"] == "agent" and event.info["request_id"] == "c1"
    assert sorted(to(rejected)) == ["agent", "user"]
    assert session.coord.snapshot()["views"] == before
    assert session.coord.pending == {}
    assert session.coord.step_counts == {"agent": 0, "user": 0, "helper": 0}


@pytest.mark.parametrize(("role", "raw", "fragment"), [
    ("agent", 'ACCEPT_CONFIRMATION(request_id="c1")', "own"),
    ("agent", 'REJECT_CONFIRMATION(request_id="c1")', "own"),
    ("user", 'ACCEPT_CONFIRMATION(request_id="c7")', "c1"),  # lists the open requests
    ("user", 'REJECT_CONFIRMATION(request_id="nope")', "c1"),
])
def test_bad_answers_are_errors(role: str, raw: str, fragment: str) -> None:
    session = Session()
    session.ok("agent", request('ADD_ITEM(text="stove")'))
    transition = session.do(role, raw)
    assert types(transition) == [EventType.ERROR] and to(transition) == [role]
    assert fragment in transition.events[0].error
    assert list(session.coord.pending) == ["c1"] and session.items() == []


@pytest.mark.parametrize("pending", [
    "FLY()", "ADD_ITEM()", "ADD_ITEM(colour=1)", "FINISH()", "PAUSE_AGENT()", "not an action",
])
def test_invalid_pending_action_errors_at_request_time(pending: str) -> None:
    session = Session()
    transition = session.do("agent", request(pending))
    assert types(transition) == [EventType.ERROR] and to(transition) == ["agent"]
    assert "REQUEST_TEAMMATE_CONFIRM" in transition.events[0].error
    assert session.coord.pending == {}


def test_structured_pending_action_is_accepted() -> None:
    session = Session()
    pending = {"name": "CHECK_ITEM", "args": {"item_id": 1}}
    session.ok("agent", {"name": "REQUEST_TEAMMATE_CONFIRM", "args": {"pending_action": pending}})
    assert session.coord.pending["c1"].pending_action == "CHECK_ITEM(item_id=1)"


def test_accepting_a_request_that_no_longer_applies_is_an_error_for_both() -> None:
    session = Session(TRIO)
    session.ok("agent", request('ADD_ITEM(text="stove")'))
    session.ok("helper", 'ADD_ITEM(text="stove")')
    before = shared_state(session.coord)
    transition = session.do("user", 'ACCEPT_CONFIRMATION(request_id="c1")')
    assert types(transition) == [EventType.ERROR]
    assert sorted(to(transition)) == ["agent", "user"]
    assert transition.events[0].info["request_id"] == "c1"
    assert session.coord.pending == {}
    assert shared_state(session.coord)["views"] == before["views"]


# -- pause and resume --------------------------------------------------------------------------

def test_only_the_human_side_may_pause_or_resume() -> None:
    session = Session(TRIO)
    for raw in ("PAUSE_AGENT()", 'PAUSE_AGENT(agent="helper")', "RESUME_AGENT()"):
        transition = session.do("agent", raw)
        assert types(transition) == [EventType.ERROR] and to(transition) == ["agent"]
        assert "human" in transition.events[0].error
    assert session.coord.paused == set()
    transition = session.do("user", 'PAUSE_AGENT(agent="user")')
    assert types(transition) == [EventType.ERROR] and "agent, helper" in transition.events[0].error
    person = Session((AGENT, TeamMember(role="pat", kind="person")))
    assert types(person.ok("pat", "PAUSE_AGENT()")) == [EventType.PAUSE]


def test_paused_agent_receives_nothing_and_is_refused_silently() -> None:
    session = Session(TRIO)
    last_before_pause = session.ok("agent", 'ADD_ITEM(text="tent")').events[0].seq
    paused = session.ok("user", 'PAUSE_AGENT(agent="agent")')
    assert types(paused) == [EventType.PAUSE]
    assert paused.events[0].info == {"agents": ["agent"]}
    assert to(paused) == ["user", "helper"]  # not the paused agent
    assert notified(session.coord, paused)[0].paused == ["agent"]

    # its actions are refused: logged, but nobody is notified and no step is counted
    counts = dict(session.coord.step_counts)
    refused = session.do("agent", 'ADD_ITEM(text="sneaky")')
    assert types(refused) == [EventType.ERROR] and notified(session.coord, refused) == []
    assert refused.events[0].recipients == []
    assert session.coord.step_counts == counts
    assert [i["text"] for i in session.items()] == ["tent"]

    # later events skip it
    silent = [session.ok("user", 'ADD_ITEM(text="map")'), session.ok("user", message("hello all")),
              session.ok("helper", message("just you", "agent")), session.tick(),
              session.ok("user", request('ADD_ITEM(text="cup")'))]
    for transition in silent:
        assert "agent" not in to(transition)
        assert all("agent" not in e.recipients for e in transition.events)

    resumed = session.ok("user", 'RESUME_AGENT(agent="agent")')
    assert types(resumed) == [EventType.RESUME]
    assert to(resumed) == ["agent", "user", "helper"]
    note = next(n for n in notified(session.coord, resumed) if n.recipient == "agent")
    assert note.context is not None and note.context.role == "agent"
    assert note.prev_seq == last_before_pause  # the gap shows what it missed
    assert [m.text for m in note.new_messages] == ["hello all", "just you"]
    assert [i["text"] for i in note.view["checklist"].content] == ["tent", "map"]
    assert [c.request_id for c in note.pending_confirmations] == ["c1"]
    assert note.paused == []
    assert session.ok("agent", 'ADD_ITEM(text="back")').events[0].type is EventType.ACTION


def test_pause_without_a_name_pauses_every_agent_and_end_reaches_them() -> None:
    session = Session(TRIO)
    paused = session.ok("user", "PAUSE_AGENT()")
    assert paused.events[0].info == {"agents": ["agent", "helper"]}
    assert to(paused) == ["user"]
    assert notified(session.coord, session.do("helper", "FINISH()")) == []
    assert not session.coord.done
    finish = session.ok("user", "FINISH()")
    end = finish.events[-1]
    assert end.type is EventType.END
    assert sorted(to(finish)) == ["agent", "helper", "user"]  # the final word reaches everyone
    session2 = Session(TRIO)
    session2.ok("user", 'PAUSE_AGENT(agent="helper")')
    assert session2.coord.paused == {"helper"}
    assert sorted(to(session2.ok("user", 'ADD_ITEM(text="x")'))) == ["agent", "user"]


# -- notification contents ---------------------------------------------------------------------

def scripted(session: Session) -> None:
    """A session touching every kind of event."""
    session.ok("agent", 'SEARCH_IDEAS(trip="camping")')
    session.ok("agent", 'ADD_ITEM(text="tent")')
    session.ok("user", message("add a headlamp"))
    session.ok("agent", message("ok", "user"))
    session.do("agent", "ADD_ITEM(tent)")  # a duplicate: error
    session.ok("agent", "WAIT_TEAMMATE_CONTINUE()")
    session.tick()
    session.ok("agent", request("ADD_ITEM(text='headlamp')"))
    session.ok("user", 'ACCEPT_CONFIRMATION(request_id="c1")')
    session.ok("agent", request('REMOVE_ITEM(item_id=1)'))
    session.ok("helper", 'REJECT_CONFIRMATION(request_id="c2", reason="keep it")')
    session.ok("user", 'PAUSE_AGENT(agent="agent")')
    session.do("agent", "CHECK_ITEM(item_id=1)")  # refused silently
    session.ok("user", message("while you were away"))
    session.ok("helper", "CHECK_ITEM('1')")
    session.tick()
    session.ok("user", "RESUME_AGENT()")
    session.do("intruder", "FINISH()")
    session.ok("helper", {"name": "ADD_ITEM", "arguments": '{"text": "stove"}'})
    session.ok("user", "FINISH()")


def test_every_notification_is_complete_and_sequenced() -> None:
    session = Session(TRIO)
    scripted(session)
    assert session.coord.done and session.coord.end_reason == "finished"
    events_by_seq = {e.seq: e for e in session.events}
    assert [e.seq for e in session.events] == list(range(1, len(session.events) + 1))
    last_seen: dict[str, int | None] = {role: None for role in ("agent", "user", "helper")}
    for n in session.notifications:
        assert n.session_id == "s-1"
        assert n.event == events_by_seq[n.seq] and n.seq == n.event.seq
        assert n.recipient in n.event.recipients
        assert n.prev_seq == last_seen[n.recipient]
        assert last_seen[n.recipient] is None or n.seq > last_seen[n.recipient]
        last_seen[n.recipient] = n.seq
        assert n.time == n.event.time and n.started_at == START_TIME
        assert {c.name for c in n.view.components} == {"checklist", "ideas"}
        assert all(m.visible_to(n.recipient) for m in n.chat)
        assert set(n.step_counts) == {"agent", "user", "helper"}
        assert n.step_limits == {"agent": 30, "helper": 30}
        # The context (with a whole update) at the start and the end, and otherwise only to
        # the agents a RESUME wakes.
        woken = n.event.type is EventType.RESUME and n.recipient in n.event.info["agents"]
        ends = n.event.type in (EventType.START, EventType.END)
        assert (n.context is not None) == (ends or woken)
        if n.event.type is EventType.ERROR:
            assert n.event.status == "error" and n.event.error
        else:
            assert n.event.status == "ok" and n.event.error is None
    # every event's recipients got exactly one notification each
    delivered = [(n.seq, n.recipient) for n in session.notifications]
    assert delivered == [(e.seq, r) for e in session.events for r in e.recipients]


def test_sync_returns_the_current_state_with_context() -> None:
    session = Session()
    session.ok("agent", 'ADD_ITEM(text="tent")')
    session.ok("agent", message("hi"))
    seq = session.coord.seq
    synced = session.coord.sync("agent", 5000.0)
    assert synced.event.type is EventType.SYNC and synced.seq == seq
    assert synced.recipient == "agent" and synced.time == 5000.0
    assert synced.context is not None and synced.context.role == "agent"
    assert synced.whole and synced.components == list(session.env.view("agent").components)
    assert [m.text for m in synced.messages] == ["hi"]
    assert synced.prev_seq == 3 and synced.step_counts == {"agent": 1, "user": 0}
    assert session.coord.seq == seq  # not an event
    assert notified(session.coord, session.ok("user", 'ADD_ITEM(text="map")'))[0].prev_seq == seq


def test_request_id_marks_the_actors_events() -> None:
    session = Session(step_limits={"agent": 1})
    asked = session.do("user", message("go"), request_id="m-1")
    assert asked.events[0].request_id == "m-1"
    transition = session.do("agent", 'ADD_ITEM(text="tent")', request_id="a-1")
    action, end = transition.events
    assert action.request_id == "a-1" and end.request_id is None
    assert all(n.event.request_id == "a-1" for n in notified(session.coord, transition)
               if n.event.type is EventType.ACTION)
    assert Session().do("agent", "WAIT_TEAMMATE_CONTINUE()").events[0].request_id is None


# -- NOT_ECHOED --------------------------------------------------------------------------------

def _setup_nothing(session: Session) -> None:
    pass


def _setup_request(session: Session) -> None:
    session.ok("agent", request('ADD_ITEM(text="stove")'))


def _setup_paused(session: Session) -> None:
    session.ok("user", "PAUSE_AGENT()")


ACT_CASES: dict[str, tuple[Callable[[Session], None], str, str]] = {
    "SEND_TEAMMATE_MESSAGE": (_setup_nothing, "agent", message("hi")),
    "WAIT_TEAMMATE_CONTINUE": (_setup_nothing, "agent", "WAIT_TEAMMATE_CONTINUE()"),
    "FINISH": (_setup_nothing, "agent", "FINISH()"),
    "REQUEST_TEAMMATE_CONFIRM": (_setup_nothing, "agent", request('ADD_ITEM(text="x")')),
    "ACCEPT_CONFIRMATION": (_setup_request, "user", 'ACCEPT_CONFIRMATION(request_id="c1")'),
    "REJECT_CONFIRMATION": (_setup_request, "user", 'REJECT_CONFIRMATION(request_id="c1")'),
    "PAUSE_AGENT": (_setup_nothing, "user", "PAUSE_AGENT()"),
    "RESUME_AGENT": (_setup_paused, "user", "RESUME_AGENT()"),
}


def test_act_cases_cover_every_collaboration_act() -> None:
    # EDIT_TEXT is a person's panel typing in a shared text, which the todo task has none of:
    # tests/nodes/test_live_editing.py covers it.
    assert set(ACT_CASES) | {acts.EDIT_TEXT.name} == {spec.name for spec in acts.ALL_ACTS}
    assert acts.NOT_ECHOED <= set(ACT_CASES)


@pytest.mark.parametrize("act", sorted(ACT_CASES))
def test_not_echoed_matches_the_coordinator(act: str) -> None:
    setup, actor, raw = ACT_CASES[act]
    session = Session(TRIO)
    setup(session)
    transition = session.ok(actor, raw)
    own = transition.events[0]
    assert own.actor == actor
    assert parse_action(own.action, {s.name: s for s in acts.ALL_ACTS})[0].name == act
    echoed = actor in own.recipients
    assert echoed == any(n.recipient == actor and n.seq == own.seq
                         for n in notified(session.coord, transition))
    assert echoed == (act not in acts.NOT_ECHOED)
    # the only later word an un-echoed actor gets is the end of the session
    for n in notified(session.coord, transition):
        if n.recipient == actor and act in acts.NOT_ECHOED:
            assert n.event.type is EventType.END and n.done


@pytest.mark.parametrize("raw", ['ADD_ITEM(text="x")', 'SEARCH_IDEAS(trip="beach")'])
def test_task_actions_are_echoed(raw: str) -> None:
    session = Session(TRIO)
    transition = session.ok("agent", raw)
    assert "agent" in to(transition)
    name = raw.split("(")[0]
    assert name not in acts.NOT_ECHOED


# -- replay ------------------------------------------------------------------------------------

def comparable(event: Event) -> dict[str, Any]:
    """An event as replay reproduces it: no request ids (replay has none), and an END replayed
    on its own keeps only its reason."""
    data = event.model_dump(exclude={"request_id"})
    if event.type is EventType.END:
        data["info"] = {"reason": data["info"]["reason"]}
    return data


def replay_matches(session: Session, team: Sequence[TeamMember], **kwargs: Any) -> None:
    fresh = Coordinator(TodoEnv(), list(team), session_id="s-1", **kwargs)
    replayed: list[Event] = []
    for event in session.events:
        replayed += fresh.replay(event).events
    assert [comparable(e) for e in replayed] == [comparable(e) for e in session.events]
    assert fresh.snapshot() == session.coord.snapshot()


def test_replay_reproduces_a_scripted_session() -> None:
    session = Session(TRIO)
    snapshots = [session.coord.snapshot()]
    checkpoints = [len(session.events)]
    original = session.record

    def record(transition: Transition) -> Transition:
        original(transition)
        snapshots.append(session.coord.snapshot())
        checkpoints.append(len(session.events))
        return transition

    session.record = record  # type: ignore[method-assign]
    scripted(session)
    fresh = Coordinator(TodoEnv(), list(TRIO), session_id="s-1")
    replayed = 0
    for snapshot, upto in zip(snapshots, checkpoints, strict=True):
        while replayed < upto:
            fresh.replay(session.events[replayed])
            replayed += 1
        assert fresh.snapshot() == snapshot
    assert snapshots[-1]["done"] and snapshots[-1]["end_reason"] == "finished"
    replay_matches(session, TRIO)


def test_replay_reproduces_limit_endings() -> None:
    session = Session(step_limits={"agent": 2})
    session.ok("agent", 'ADD_ITEM(text="a")')
    session.do("agent", "nope")
    replay_matches(session, DUO, step_limits={"agent": 2})
    session = Session(max_idle_ticks=1)
    session.tick()
    session.tick()
    assert session.coord.end_reason == "idle"
    replay_matches(session, DUO, max_idle_ticks=1)
    session = Session()
    session.ok("agent", 'ADD_ITEM(text="a")')
    session.record(session.coord.end(session.now(), "timeout"))
    replay_matches(session, DUO)
    assert session.coord.end_reason == "timeout"


POOL = [
    ("agent", 'ADD_ITEM(text="tent")'), ("user", "ADD_ITEM(text='map')"),
    ("agent", "CHECK_ITEM(1)"), ("user", "REMOVE_ITEM(item_id=2)"),
    ("agent", 'SEARCH_IDEAS(trip="beach")'), ("helper", "SEARCH_IDEAS(city)"),
    ("user", message("hi")), ("agent", message("psst", "user")), ("helper", message("x", "agent")),
    ("agent", "WAIT_TEAMMATE_CONTINUE()"),
    ("agent", request('ADD_ITEM(text="stove")')), ("helper", request("SEARCH_IDEAS(trip='city')")),
    ("user", 'ACCEPT_CONFIRMATION(request_id="c1")'), ("agent", 'ACCEPT_CONFIRMATION("c2")'),
    ("user", 'REJECT_CONFIRMATION(request_id="c2")'), ("helper", 'ACCEPT_CONFIRMATION("c3")'),
    ("user", "PAUSE_AGENT()"), ("user", 'PAUSE_AGENT(agent="helper")'), ("user", "RESUME_AGENT()"),
    ("agent", "PAUSE_AGENT()"), ("agent", "garbage ("), ("intruder", "FINISH()"),
    ("helper", {"name": "ADD_ITEM", "args": {"text": "cup"}}), ("user", "FINISH()"),
    ("tick", ""), ("tick", ""),
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.sampled_from(POOL), max_size=30))
def test_replay_is_deterministic_for_any_session(steps: list[tuple[str, Any]]) -> None:
    limits = {"agent": 6, "helper": 6}
    session = Session(TRIO, step_limits=limits, max_idle_ticks=2, max_events=25)
    for role, raw in steps:
        if role == "tick":
            session.tick()
        else:
            session.do(role, raw)
    replay_matches(session, TRIO, step_limits=limits, max_idle_ticks=2, max_events=25)
    # and the protocol invariants hold along the way
    paused_now: set[str] = set()
    for event in session.events:
        if event.type is EventType.END:
            assert set(event.recipients) == {"agent", "user", "helper"}
        elif event.type is EventType.PAUSE:
            paused_now |= set(event.info["agents"])
        elif event.type is EventType.RESUME:
            paused_now -= set(event.info["agents"])
        if event.type is not EventType.END:
            assert not paused_now & set(event.recipients)
        if event.type is EventType.ERROR:  # the actor, and a requester whose request failed
            allowed = {event.actor} | ({event.info["requester"]} if "requester" in event.info
                                       else set())
            assert set(event.recipients) <= allowed


# -- input admitted at the boundary ------------------------------------------------------------

def replay_from_json(session: Session, team: Sequence[TeamMember], **kwargs: Any) -> Coordinator:
    """A fresh coordinator fed the session's events as the log holds them (JSON text)."""
    fresh = Coordinator(TodoEnv(), list(team), session_id="s-1", **kwargs)
    for event in session.events:
        logged = Event.model_validate_json(event.model_dump_json(exclude_defaults=True))
        replayed = fresh.replay(logged).events[0]
        assert (replayed.type, replayed.status) == (event.type, event.status), event
    assert fresh.snapshot() == session.coord.snapshot()
    return fresh


@pytest.mark.parametrize("raw", [
    # The case the property test found: OpenAI-style string args that hold an action string.
    # Refused live; its log line, read as an LM's text, gave ADD_ITEM( to the lenient parser.
    {"name": "ADD_ITEM", "args": 'ADD_ITEM(text="x")'},
    {"action": 'ADD_ITEM(text="y")'},
    ['ADD_ITEM(text="z")'],
    Action(name="add item", args={"text": 'ADD_ITEM(text="w")'}),
])
def test_a_refused_structured_action_replays_as_refused(raw: Any) -> None:
    session = Session()
    refused = session.do("agent", raw).events[0]
    assert refused.type is EventType.ERROR and refused.info["structured"] is True
    assert session.items() == []
    replay_from_json(session, DUO)


def test_an_action_json_cannot_hold_is_refused_saying_so() -> None:
    session = Session()
    nested: list[Any] = []
    for deep in ({"name": "ADD_ITEM", "args": {"text": {1, 2}}}, {"name": "ADD_ITEM", "args": {
            "text": "x", ("a", "b"): 1}}, [nested.append(nested) or nested]):
        refused = session.do("agent", deep).events[0]
        assert refused.type is EventType.ERROR and "JSON cannot hold it" in refused.action
    assert session.items() == []
    replay_from_json(session, DUO)


@pytest.mark.parametrize("role", [["agent"], ("agent",), 5, None, {"role": "agent"}, 1.5,
                                  "agent\ud83d", ""])
def test_a_role_of_any_type_is_refused_and_never_raises(role: Any) -> None:
    session = Session()
    refused = session.do(role, 'ADD_ITEM(text="tent")')
    [event] = refused.events
    assert event.type is EventType.ERROR and event.recipients == [] and notified(session.coord, refused) == []
    assert isinstance(event.actor, str) and event.actor not in ("agent", "user")
    assert "\ud83d" not in event.actor
    for transition in (session.coord.apply_observed(role, 'ADD_ITEM(text="a")', session.now()),
                       session.coord.apply_follow_up(role, 'ADD_ITEM(text="b")', session.now()),
                       session.coord.deferred_failed(role, "X()", "failed", session.now())):
        session.record(transition)
        assert all(e.type is EventType.ERROR for e in transition.events)
    assert session.coord.sync(role, session.now()) is None
    assert session.items() == []
    replay_from_json(session, DUO)


def test_text_from_every_entry_point_follows_the_text_policy() -> None:
    session = Session()
    session.ok("user", 'ADD_ITEM(text="lone \ud83d")')
    session.ok("user", 'ADD_ITEM(text="escaped \\udc00")')  # a surrogate made by the parser
    session.ok("agent", {"name": "ADD_ITEM", "args": {"text": "pair \ud83d\ude00"}})
    session.ok("agent", Action(name="SEND_TEAMMATE_MESSAGE", args={"message": "hi \udfff"}))
    session.do("agent", "nonsense \ud800")
    session.record(session.coord.deferred_failed("agent", "DRAFT(\ud83d)", "LM said \udc80",
                                                 session.now()))
    session.record(session.coord.end(session.now(), "stopped \ud83d", detail="\ud83d"))
    assert [i["text"] for i in session.items()] == ["lone \ufffd", "escaped \ufffd", "pair 😀"]
    for event in session.events:
        event.model_dump_json()  # would raise on a surrogate
    json.dumps(session.coord.snapshot(), ensure_ascii=False).encode("utf-8")
    assert session.coord.end_reason == "stopped \ufffd"
    replay_from_json(session, DUO)


def test_a_base_or_seen_seq_of_the_wrong_type_is_ignored() -> None:
    """Where they matter: a whole-text replacement (NotesEnv's WRITE replaces the editor)."""
    coordinator = Coordinator(NotesEnv(), list(DUO), session_id="s-1")
    coordinator.start(0.0)
    coordinator.handle("user", 'WRITE(text="one\ntwo")', 1.0)
    for now, (base, seen_seq) in enumerate(((0, "7"), (["x"], 2.5), (None, True), (None, -4)),
                                           start=2):
        transition = coordinator.handle("agent", 'WRITE(text="one\ntwo\nthree")', float(now),
                                        base=base, seen_seq=seen_seq)
        assert [e.type for e in transition.events] == [EventType.ACTION]
    merged = coordinator.handle("agent", 'WRITE(text="zero\none\ntwo")', 9.0,
                                base="one\ntwo\ud83d")  # a base with a lone surrogate merges
    assert merged.events[0].type is EventType.ACTION
    assert "\ud83d" not in coordinator.env.view("agent")["editor"].content


# -- what a notification carries does not grow with the seats ------------------------------------

def test_people_are_shown_their_own_count_and_the_non_peoples_not_each_others() -> None:
    team = [AGENT, USER, TeamMember(role="ann", kind="person"), TeamMember(role="bob", kind="person")]
    session = Session(team)
    by_role = {n.recipient: n for n in notified(session.coord, session.start)}
    assert set(by_role["ann"].step_counts) == {"agent", "user", "ann"}
    assert [m.role for m in by_role["ann"].context.team] == ["agent", "user", "ann"]
    assert set(by_role["agent"].step_counts) == {"agent", "user"}
    assert [m.role for m in by_role["agent"].context.team] == ["agent", "user", "ann", "bob"]
    session.ok("ann", 'ADD_ITEM(text="tent")')
    session.ok("bob", 'ADD_ITEM(text="map")')
    assert session.coord.step_counts == {"agent": 0, "user": 0, "ann": 1, "bob": 1}
    note = session.last_to("ann")
    assert note.step_counts == {"agent": 0, "user": 0, "ann": 1} and note.context is None
