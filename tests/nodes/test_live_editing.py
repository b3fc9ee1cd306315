"""A person typing live in a shared text while an agent rewrites it from older versions, through
a real EnvNode on both buses, in every order hypothesis finds (a stateful machine):

* the person's panel replica (a pycrdt document following the panel's protocol,
  tests/support/panel_replica.py) and the session's document converge;
* every line of the version an edit started from that neither side touched is still a whole
  line after the merge, and each side's inserted words stay together;
* after every step, the event log replays to the same text and the same document.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from cogym_lab.bus import Bus, MemoryBus
from cogym_lab.bus.redis import RedisBus
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.member_copy import MemberCopy
from cogym_lab.core.messages import Event, EventType, StepRequest, Update, obs_channel, step_channel
from cogym_lab.nodes.env_node import EnvNode
from tests.core.test_shared_text_coordinator import TEAM, Notes, _update
from tests.support.merge_checks import check_merge
from tests.support.panel_replica import Batch, PanelReplica

pytestmark = pytest.mark.timeout(600)

WORDS = st.sampled_from(["Day 4: zoo", "lunch", "", "é 😀", "<b>&</b>", "a\u2028b", "nul\x00",
                         "museum at dawn", "with Ana"])
START_TEXT = "Day 1: beach\nDay 2: Getty\nDay 3: fly home\n"


class LiveEditing(RuleBasedStateMachine):
    """One session: a person's panel and an agent, on a bus of the subclass's kind."""

    redis_url: str | None = None

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.panel = PanelReplica(client=4242)
        self.arrived: list[Update] = []  # updates the panel has received, not yet applied
        self.agent = MemberCopy("agent")
        self.agent_saw: list[tuple[int, str]] = []  # (seq, editor text) of its notifications
        self.log: list[Event] = []
        self.run(self._start())

    def run(self, coroutine: Any) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coroutine, 60))

    async def _start(self) -> None:
        self.bus: Bus
        if self.redis_url is None:
            self.bus = MemoryBus()
        else:
            self.bus = RedisBus(self.redis_url, publish_timeout=15)
            await self.bus.connect()
        self.session_id = f"live-{uuid.uuid4().hex[:10]}"
        self.coordinator = Coordinator(Notes(), TEAM, session_id=self.session_id)
        self.node = EnvNode(self.bus, self.coordinator, idle_seconds=3600, join_timeout=10,
                            recorders=[self.log.append], announce_after=0.05)
        self.person_feed = await self.bus.subscribe(obs_channel(self.session_id, "person"))
        self.agent_feed = await self.bus.subscribe(obs_channel(self.session_id, "agent"))
        for role in ("person", "agent"):
            await self.bus.publish(step_channel(self.session_id),
                                   StepRequest(role=role, kind="join").model_dump(mode="json"))
        self.runner = asyncio.get_running_loop().create_task(self.node.run())
        await self._until("person", lambda u: u.event.type is EventType.START)
        await self._until("agent", lambda u: u.event.type is EventType.START)
        await self._send("person", _update(START_TEXT))
        for update in self.arrived:  # the panel opens: it shows the text before anyone types
            assert self.panel.receive(update.texts, update.seq) is None
        self.arrived.clear()

    # -- the wire -----------------------------------------------------------------------------

    async def _until(self, role: str, done: Any) -> Update:
        """Read ``role``'s feed until an update for which ``done`` holds; every update read
        goes where that member keeps it."""
        feed = self.person_feed if role == "person" else self.agent_feed
        while True:
            message = await feed.get(30)
            assert message is not None, f"no update for {role}"
            update = Update.model_validate(message)
            if role == "person":
                self.arrived.append(update)
            else:
                notification = self.agent.apply(update)
                if notification is not None:
                    self.agent_saw.append((update.seq, notification.view["editor"].content))
            if done(update):
                return update

    async def _send(self, role: str, action: dict, seen_seq: int | None = None) -> Update:
        request = StepRequest(role=role, action=action, seen_seq=seen_seq)
        await self.bus.publish(step_channel(self.session_id), request.model_dump(mode="json"))
        update = await self._until(role, lambda u: u.event.request_id == request.id)
        assert update.event.status == "ok", update.event.error
        return update

    def _send_batch(self, batch: Batch | None) -> None:
        if batch is None:
            return
        current = self.coordinator.env.text
        self.run(self._send("person", batch.action("editor", self.panel.client),
                            seen_seq=batch.seen_seq))
        check_merge(batch.base, current, batch.text, self.coordinator.env.text)

    # -- rules --------------------------------------------------------------------------------

    @rule(at=st.integers(0, 120), cut=st.integers(0, 20), words=WORDS)
    def person_types(self, at: int, cut: int, words: str) -> None:
        self.panel.type(at, at + cut, words + ("\n" if words and at % 3 == 0 else ""))

    @rule()
    def person_sends(self) -> None:
        self._send_batch(self.panel.take())

    @precondition(lambda self: self.arrived)
    @rule(count=st.integers(1, 4))
    def panel_applies_what_arrived(self, count: int) -> None:
        for _ in range(min(count, len(self.arrived))):
            update = self.arrived.pop(0)  # sending first may bring more: they queue behind
            self._send_batch(self.panel.receive(update.texts, update.seq))

    @precondition(lambda self: self.agent_saw)
    @rule(stale=st.integers(0, 4), line=st.integers(0, 6), words=WORDS,
          replace=st.booleans())
    def agent_rewrites_an_older_version(self, stale: int, line: int, words: str,
                                        replace: bool) -> None:
        seq, seen = self.agent_saw[max(0, len(self.agent_saw) - 1 - stale)]
        cut = seen.split("\n")
        at = min(line, len(cut) - 1)
        if replace:
            cut[at] = f"{cut[at]} {words}".strip()
        else:
            cut.insert(at, words)
        sent = "\n".join(cut)
        current = self.coordinator.env.text
        self.run(self._send("agent", _update(sent), seen_seq=seq))
        check_merge(seen, current, sent, self.coordinator.env.text)

    @rule()
    def typing_pauses(self) -> None:
        """Long enough for the agent to be told of the typing (the node's announcement)."""
        self.run(asyncio.sleep(0.08))

    # -- invariants ---------------------------------------------------------------------------

    @invariant()
    def the_document_is_the_tasks_text_and_the_log_replays_to_it(self) -> None:
        shared = self.coordinator._texts.text("editor")
        assert shared.text == self.coordinator.env.text
        fresh = Coordinator(Notes(), TEAM, session_id=self.session_id)
        for event in self.log:
            fresh.replay(event)
        assert fresh.env.text == self.coordinator.env.text
        assert fresh._texts.text("editor").state_vector() == shared.state_vector()

    def teardown(self) -> None:
        try:
            self._send_batch(self.panel.take())  # the panel sends what is left ...
            self.run(self._drain())
            while self.arrived:  # ... and applies everything it was sent
                update = self.arrived.pop(0)
                assert self.panel.receive(update.texts, update.seq) is None
            assert self.panel.value == self.coordinator.env.text  # the copies converge
        finally:
            self.run(self._stop())
            self.loop.close()

    async def _drain(self) -> None:
        while (message := await self.person_feed.get(0.2)) is not None:
            self.arrived.append(Update.model_validate(message))

    async def _stop(self) -> None:
        await self.node.stop("test over")
        await self.runner
        for feed in (self.person_feed, self.agent_feed):
            await feed.close()
        if isinstance(self.bus, RedisBus):
            await self.bus.close()


# More with PROPS_EXAMPLES=200, as the other property suites take it.
LIVE_SETTINGS = settings(max_examples=int(os.environ.get("PROPS_EXAMPLES", 25)),
                         stateful_step_count=20, deadline=None)


def test_live_editing_on_the_memory_bus() -> None:
    run_state_machine_as_test(LiveEditing, settings=LIVE_SETTINGS)


def test_live_editing_on_redis(redis_server_session) -> None:
    class OnRedis(LiveEditing):
        redis_url = redis_server_session.url

    run_state_machine_as_test(OnRedis, settings=LIVE_SETTINGS)
