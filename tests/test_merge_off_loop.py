"""Large merges of whole-text replacements run in a worker thread, off the session's event loop:
the result, the state and the event log are those of the inline merge, the log replays the same,
and while the thread merges the loop serves other coroutines."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cogym_lab.bus import MemoryBus
from cogym_lab.core import text_merge
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import StepRequest
from cogym_lab.core.text_merge import PrecomputedMerge, merge_text, reusing
from cogym_lab.nodes import env_node
from cogym_lab.nodes.env_node import EnvNode
from tests.test_text_merge import TEAM, Notes, _update

pytestmark = pytest.mark.timeout(120)

WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "é", "中", "😀", " ", "\n", "."])
TEXT = st.lists(WORDS, max_size=30).map("".join)


def _append(line: str) -> dict:
    return {"name": "APPEND_LINE", "args": {"line": line}}


# A step: (role, action, how the sender says where it started: None, ("base", text) or
# ("seen", seq)). Agents' rewrites come from older views; people save over the text they loaded.
STEP = st.one_of(
    st.tuples(st.sampled_from(["agent", "person"]), TEXT.map(_update),
              st.one_of(st.none(), TEXT.map(lambda t: ("base", t)),
                        st.integers(0, 12).map(lambda n: ("seen", n)))),
    st.tuples(st.sampled_from(["agent", "person"]), TEXT.map(_append), st.none()),
    st.tuples(st.just("agent"), TEXT.map(lambda t: {
        "name": "REQUEST_TEAMMATE_CONFIRM",
        "args": {"pending_action": f"EDITOR_UPDATE(text={t!r})".replace("'", '"')}}),
        st.integers(0, 12).map(lambda n: ("seen", n))),
    st.tuples(st.just("person"), st.just({"name": "ACCEPT_CONFIRMATION",
                                          "args": {"request_id": "c1"}}), st.none()),
)


def _hint(how: tuple[str, object] | None) -> dict:
    if how is None:
        return {}
    return {"base": how[1]} if how[0] == "base" else {"seen_seq": how[1]}


def _dump(events: list) -> list[dict]:
    return [event.model_dump(mode="json") for event in events]


def _replayed(events: list) -> dict:
    fresh = Coordinator(Notes(), TEAM, session_id="s1")
    for event in events:
        fresh.replay(event)
    return fresh.snapshot()


class Clock:
    """Stands in for the ``time`` module in the EnvNode: the step's time, as the inline run
    gives it (the EnvNode reads the clock again after a merge in a thread)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.monotonic = time.monotonic

    def time(self) -> float:
        return self.now


@given(steps=st.lists(STEP, min_size=1, max_size=10))
@example(steps=[("person", _append("P1."), None),  # a stale rewrite, and a confirmed one
                ("agent", _update("Opening line!\nClosing line.\n"), ("seen", 1)),
                ("agent", {"name": "REQUEST_TEAMMATE_CONFIRM", "args": {
                    "pending_action": 'EDITOR_UPDATE(text="Opening.\\nClosing line.\\n")'}},
                 ("seen", 1)),
                ("person", _append("P2."), None),
                ("person", {"name": "ACCEPT_CONFIRMATION", "args": {"request_id": "c1"}}, None)])
@settings(max_examples=120, deadline=None)
def test_merging_off_the_loop_gives_the_state_and_log_of_merging_inline(steps) -> None:
    """The same steps, once through ``Coordinator.handle`` alone (every merge inline) and once
    through the EnvNode with every merge sent to a worker thread (threshold 0)."""
    inline = Coordinator(Notes(), TEAM, session_id="s1")
    inline_log = inline.start(1.0).events
    for i, (role, action, how) in enumerate(steps):
        inline_log += inline.handle(role, action, 2.0 + i, request_id=f"r{i}",
                                    **_hint(how)).events

    off_loop = Coordinator(Notes(), TEAM, session_id="s1")
    log: list = []
    node = EnvNode(MemoryBus(), off_loop, recorders=[log.append])
    merged_in: list[threading.Thread] = []
    in_thread = text_merge._merge_in_thread

    def watched(base: str, ours: str, theirs: str) -> str:
        merged_in.append(threading.current_thread())
        return in_thread(base, ours, theirs)

    clock = Clock()

    async def drive() -> None:
        await node._deliver(off_loop.start(1.0))
        for i, (role, action, how) in enumerate(steps):
            hint, clock.now = _hint(how), 2.0 + i
            await node._on_request(StepRequest(id=f"r{i}", role=role, kind="action",
                                               action=action, base=hint.get("base"),
                                               seen_seq=hint.get("seen_seq")))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text_merge, "OFF_LOOP_CHARS", 0)
        patch.setattr(text_merge, "_merge_in_thread", watched)
        patch.setattr(env_node, "time", clock)
        asyncio.run(drive())
    assert _dump(log) == _dump(inline_log)
    assert off_loop.snapshot() == inline.snapshot()
    assert _replayed(log) == off_loop.snapshot()
    # Every merge the inline run made was worked out in a worker thread in the other.
    merges = sum(bool(e.info.get("merged") or e.info.get("applied_action")) for e in inline_log)
    assert len(merged_in) >= merges
    if steps[0] == ("person", _append("P1."), None) and len(steps) == 5:  # the example above
        assert merges == 2 and off_loop.env.text == "Opening!\nClosing line.\nP1.\nP2.\n"
    assert threading.main_thread() not in merged_in


def test_an_offered_merge_of_other_texts_is_not_used() -> None:
    """The state moved on between the forecast and the step: the coordinator merges again."""
    base = "Opening line.\nClosing line.\n"
    coordinator = Coordinator(Notes(), TEAM, session_id="s1")
    coordinator.start(1.0)
    sent = "Opening line, polished.\nClosing line.\n"
    coordinator.handle("person", _append("P1."), 2.0)
    texts = coordinator.stale_replacement("agent", _update(sent), seen_seq=1)
    assert texts == (base, base + "P1.\n", sent)
    coordinator.handle("person", _append("P2."), 3.0)  # meanwhile, on the loop
    coordinator.offer_merge(PrecomputedMerge(*texts, merged="a stale result"))
    coordinator.handle("agent", _update(sent), 4.0, seen_seq=1)
    assert coordinator.env.text == "Opening line, polished.\nClosing line.\nP1.\nP2.\n"


def test_a_matching_offered_merge_is_used_and_only_once() -> None:
    base, ours, theirs = "a b c", "a B c", "a b C"
    offered = PrecomputedMerge(base, ours, theirs, merged="from the thread")
    with reusing(offered):
        assert merge_text(base, ours, theirs) == "from the thread"
        assert merge_text(base, theirs, ours) == "a B C"  # other texts: merged here
    assert merge_text(base, ours, theirs) == "a B C"  # outside the block: merged here
    coordinator = Coordinator(Notes(), TEAM, session_id="s1")
    coordinator.start(1.0)
    coordinator.handle("person", _append("P1."), 2.0)
    sent = "Opening line!\nClosing line.\n"
    texts = coordinator.stale_replacement("agent", _update(sent), seen_seq=1)
    assert texts is not None
    coordinator.offer_merge(PrecomputedMerge(*texts, merged="Merged off the loop.\n"))
    coordinator.handle("agent", _update(sent), 3.0, seen_seq=1)
    assert coordinator.env.text == "Merged off the loop.\n"
    coordinator.handle("agent", _update(sent), 4.0, seen_seq=1)  # the offer was used up
    assert coordinator.env.text != "Merged off the loop.\n"


async def test_the_loop_serves_another_coroutine_while_a_large_merge_runs(monkeypatch) -> None:
    """A handshake: the merge, once started, waits until a coroutine on the loop has run. Were
    the merge on the loop, that coroutine could not run until it ended, and the merge would
    give up waiting."""
    base = "".join(f"{i}. A paragraph of the shared section, long enough.\n" for i in range(900))
    assert len(base) >= text_merge.OFF_LOOP_CHARS
    coordinator = Coordinator(Notes(), TEAM, session_id="s1")
    coordinator.env.reset()
    coordinator.env.text = base
    coordinator.start(1.0)
    coordinator.env.text = base  # what START showed everyone is the large text
    coordinator._replacements.shown("agent", 1, coordinator.env.view("agent"))
    coordinator.handle("person", _update("Added first.\n" + base), 2.0, base=base)
    sent = base.replace("0. A paragraph", "0. The agent's paragraph", 1)

    merge_started, loop_served = threading.Event(), threading.Event()
    real = text_merge.merge_text

    def handshake_merge(b: str, o: str, t: str) -> str:
        assert threading.current_thread() is not threading.main_thread()
        merge_started.set()
        assert loop_served.wait(20), "the event loop did not run while the merge ran"
        return real(b, o, t)

    monkeypatch.setattr(text_merge, "merge_text", handshake_merge)
    events: list = []
    node = EnvNode(MemoryBus(), coordinator, recorders=[events.append])

    async def another_coroutine() -> None:
        assert await asyncio.to_thread(merge_started.wait, 20)
        loop_served.set()  # run on the loop while the merging thread waits inside the merge

    await asyncio.wait_for(asyncio.gather(
        node._on_request(StepRequest(id="r1", role="agent", kind="action",
                                     action=_update(sent), seen_seq=1)),
        another_coroutine()), 30)
    assert merge_started.is_set() and loop_served.is_set()
    assert coordinator.env.text.startswith("Added first.\n0. The agent's paragraph")
    assert [e.info.get("merged") for e in events] == ["editor"]


@given(text=st.text(alphabet=st.sampled_from(list("ab \n.,-é中😀\t")), max_size=200),
       piece=st.integers(1, 20))
@settings(max_examples=300, deadline=None)
def test_tokens_taken_a_piece_at_a_time_are_those_of_one_findall(text: str, piece: int) -> None:
    """The tokenizer works in pieces so that a worker thread lets the loop run between them."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text_merge, "_TOKENS_AT_ONCE", piece)
        assert text_merge._tokens(text) == text_merge._TOKEN.findall(text)
