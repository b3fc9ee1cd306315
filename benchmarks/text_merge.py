"""Three-way merge speed: how long ``merge_text`` takes on shared texts of growing size, with one
concurrent edit on each side (a person's and an agent's).

Run from the repository root::

    python benchmarks/text_merge.py [--repeats 20] [--lag-megabytes 1] [--lag-repeats 5]

It prints figures and checks nothing. Each text is N paragraphs of prose; "ours" inserts a
sentence near the start and "theirs" rewrites a sentence near the end, as two people editing
one section at once would. The time is the median over ``--repeats`` calls.

Then the event-loop lag of such a merge as a session meets it: an EnvNode applies an agent's
rewrite of a ``--lag-megabytes`` text made on the copy from before a person's edit, while the
loop runs a ticker that wakes every 10 ms and records how late each wake-up was (as
``index_build_lag.py`` does). It prints the time of the step and the ticker's lag at p50, p99
and max over ``--lag-repeats`` such steps. Where the merge runs is the code's own choice (inline
on the loop, or in a worker thread above ``text_merge.OFF_LOOP_CHARS``), so the same script
measures a tree from before that choice existed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from loop_lag import TICK, lag_summary, ticker  # beside this script

from cogym_lab.bus import MemoryBus
from cogym_lab.core import CoEnv, Component, RenderType, action
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import StepRequest, TeamMember
from cogym_lab.core.text_merge import merge_text
from cogym_lab.nodes.env_node import EnvNode

TEAM = [TeamMember(role="agent", kind="agent"), TeamMember(role="person", kind="person")]

PARAGRAPH = ("Collaborative agents plan with people, and people correct them as they go. "
             "This paragraph stands in for one of a related-work section's many. ")


def texts(paragraphs: int) -> tuple[str, str, str]:
    lines = [f"{i}. {PARAGRAPH}" for i in range(paragraphs)]
    base = "\n".join(lines)
    ours = base.replace("1. ", "1. A person adds this sentence. ", 1)
    last = lines[-1]
    theirs = base.replace(last, last.replace("stands in for", "represents"))
    return base, ours, theirs


class SharedText(CoEnv):
    """One shared text that a whole-text action replaces, as a task's editor."""

    name = "shared_text"
    start_text = ""

    @property
    def task_description(self) -> str:
        return "Edit the text."

    def _reset(self, seed: int | None) -> None:
        self.text = self.start_text

    def public_components(self) -> list[Component]:
        return [Component(name="editor", render_type=RenderType.EDITOR, content=self.text)]

    def outcome(self) -> str:
        return self.text

    @action("Replace the whole text.", replaces="editor", text="The full text")
    def editor_update(self, role: str, text: str) -> None:
        self.text = text


async def stale_rewrite(base: str, ours: str, theirs: str, lags: list[float]) -> float:
    """The person's edit lands, then the agent's rewrite of the older copy: merged. The
    seconds the second step took, with the ticker running through it."""
    env = SharedText()
    env.start_text = base
    coordinator = Coordinator(env, TEAM, session_id="merge-bench")
    node = EnvNode(MemoryBus(), coordinator)
    await node._deliver(coordinator.start(time.time()))  # both are shown ``base`` (seq 1)
    update = {"name": "EDITOR_UPDATE"}
    await node._on_request(StepRequest(role="person", kind="action", base=base,
                                       action={**update, "args": {"text": ours}}))
    stop = asyncio.Event()
    ticking = asyncio.create_task(ticker(lags, stop))
    await asyncio.sleep(2 * TICK)  # the ticker runs before the step arrives
    started = time.perf_counter()
    await node._on_request(StepRequest(role="agent", kind="action", seen_seq=1,
                                       action={**update, "args": {"text": theirs}}))
    took = time.perf_counter() - started
    await asyncio.sleep(2 * TICK)
    stop.set()
    await ticking
    assert "A person adds" in env.text and "represents" in env.text  # merged, both kept
    return took


def loop_lag(megabytes: float, repeats: int) -> None:
    paragraphs = 1
    while len(texts(paragraphs)[0]) < megabytes * 1e6:
        paragraphs *= 2
    low, high = paragraphs // 2, paragraphs
    while high - low > 1:  # the fewest paragraphs that make the size
        middle = (low + high) // 2
        low, high = (middle, high) if len(texts(middle)[0]) < megabytes * 1e6 else (low, middle)
    base, ours, theirs = texts(high)
    lags: list[float] = []
    took = [asyncio.run(stale_rewrite(base, ours, theirs, lags)) for _ in range(repeats)]
    print(f"\nevent-loop lag while an EnvNode merges a stale rewrite of {len(base):,} "
          f"characters ({repeats} steps):")
    print(f"  step median {statistics.median(took) * 1e3:.0f} ms; {lag_summary(lags)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--lag-megabytes", type=float, default=1.0)
    parser.add_argument("--lag-repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"{'paragraphs':>10} {'characters':>10} {'median ms':>10} {'max ms':>8}")
    for paragraphs in (10, 100, 400, 1000):
        base, ours, theirs = texts(paragraphs)
        timings = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            merged = merge_text(base, ours, theirs)
            timings.append((time.perf_counter() - started) * 1e3)
        assert "A person adds" in merged and "represents" in merged  # both edits kept
        print(f"{paragraphs:>10} {len(base):>10} {statistics.median(timings):>10.2f} "
              f"{max(timings):>8.2f}")
    loop_lag(args.lag_megabytes, args.lag_repeats)


if __name__ == "__main__":
    main()
