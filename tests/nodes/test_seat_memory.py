"""Sessions with many people seats: what each seat costs must not grow with the number of seats
(``benchmarks/seat_memory.py`` prints the memory and start-up time this buys)."""

from __future__ import annotations

import asyncio
import logging

from cogym_lab.bus import MemoryBus
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import EventType, StepRequest, TeamMember, step_channel
from cogym_lab.envs.todo import TodoEnv
from cogym_lab.nodes import Session, SessionConfig
from tests.support.notified import notified
from tests.support.teammates import Recorder


def people(count: int) -> list[TeamMember]:
    return [TeamMember(role=f"p{index:05d}", kind="person") for index in range(count)]


def start_notifications(seats: int) -> dict[str, str]:
    """Each member's START notification, as the JSON a transport would carry."""
    team = [TeamMember(role="agent", kind="agent"), *people(seats)]
    coordinator = Coordinator(TodoEnv(), team, session_id="seats")
    return {n.recipient: n.model_dump_json()
            for n in notified(coordinator, coordinator.start(0.0))}


def test_a_seats_notification_is_the_same_size_with_ten_seats_or_a_thousand():
    few, many = start_notifications(10), start_notifications(1000)
    assert len(few["p00003"]) == len(many["p00003"]) == len(many["p00999"])
    # An agent's context still lists the whole team (it may message anyone): one such list
    # per agent, linear in the seats.
    assert len(many["agent"]) > len(few["agent"])


def test_a_person_is_told_its_own_steps_and_the_agents():
    team = [TeamMember(role="agent", kind="agent"), *people(3)]
    coordinator = Coordinator(TodoEnv(), team, session_id="seats")
    coordinator.start(0.0)
    coordinator.handle("p00001", 'ADD_ITEM(text="tent")', 1.0)
    transition = coordinator.handle("p00002", 'ADD_ITEM(text="map")', 2.0)
    shown = {n.recipient: n.step_counts for n in notified(coordinator, transition)}
    assert shown == {"agent": {"agent": 0}, "p00000": {"agent": 0, "p00000": 0},
                     "p00001": {"agent": 0, "p00001": 1}, "p00002": {"agent": 0, "p00002": 1}}


async def test_every_seat_a_host_joins_before_the_session_runs_is_counted(caplog):
    """A host joins each person's seat on the step channel before ``Session.run`` subscribes to
    it; with hundreds of seats the joins used to fall out of the memory bus's history."""
    seats = 700
    bus = MemoryBus()
    agent = Recorder(["FINISH()"])
    session = Session(TodoEnv(), {"agent": agent, **dict.fromkeys(m.role for m in people(seats))},
                      kinds={"agent": "agent",
                             **dict.fromkeys((m.role for m in people(seats)), "person")}, bus=bus,
                      session_id="many-seats", config=SessionConfig(join_timeout=20))
    for member in people(seats):
        await bus.publish(step_channel(session.session_id),
                          StepRequest(role=member.role, kind="join").model_dump(mode="json"))

    with caplog.at_level(logging.WARNING, logger="cogym_lab.nodes.env_node"):
        result = await asyncio.wait_for(session.run(), 60)
    assert "starts without" not in caplog.text
    assert session.env_node is not None and len(session.env_node.joined) == seats + 1
    start = agent.context
    assert result.end_reason == "finished" and start is not None
    assert len(start.team) == seats + 1
    assert agent.final is not None and agent.final.event.type is EventType.END
