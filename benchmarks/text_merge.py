"""Shared-text edit speed on the CRDT path (core.shared_text): how long an edit of a shared text
takes at 1.5 KB, 60 KB and 1 MB, the case a session meets most (a panel's keystrokes) and the
one it meets when people and agents write at once (an agent's rewrite of an older version while
a person's edit landed).

Run from the repository root::

    python benchmarks/text_merge.py [--repeats 20] [--lag-repeats 5]

It prints figures and checks nothing but that both edits were kept. Each text is paragraphs of
prose, one per line. The time is the median (and the max) over ``--repeats`` edits, each on a
fresh document, for:

* ``keystrokes``: a panel's live edit (a Yjs update typing a sentence) on the version it was
  made on: the fork, the CRDT merge and the commit;
* ``stale rewrite``: an agent's whole new text, made on the version before a person's edit near
  the start, rewriting a sentence near the end: fork at the old version, diff, merge, commit;
* ``overlap``: the same, but both rewrite the same sentence: the merge settles the overlap with
  more operations;
* ``session step``: the stale rewrite as a coordinator applies it (the task's action, the
  views, the updates of both members and the person's Yjs news).

Then the event-loop lag while an EnvNode applies a stale rewrite of 1 MB: a ticker wakes every
10 ms and records how late each wake-up was (as ``index_build_lag.py`` does); the step's time
and the ticker's lag at p50, p99 and max over ``--lag-repeats`` such steps.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable

from loop_lag import TICK, lag_summary, ticker  # beside this script
from pycrdt import Doc, Text

from cogym_lab.bus import MemoryBus
from cogym_lab.core import CoEnv, Component, RenderType, action
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import StepRequest, TeamMember
from cogym_lab.core.shared_text import ROOT, SharedText
from cogym_lab.nodes.env_node import EnvNode

TEAM = [TeamMember(role="agent", kind="agent"), TeamMember(role="person", kind="person")]
PARAGRAPH = ("Collaborative agents plan with people, and people correct them as they go; "
             "this paragraph stands in for one of a related-work section's many.")
SIZES = {"1.5 KB": 1_500, "60 KB": 60_000, "1 MB": 1_000_000}


def texts(size: int) -> tuple[str, str, str, str]:
    """A base text of about ``size`` characters; a person's edit near the start; an agent's
    rewrite of a sentence near the end; and an agent's rewrite of the person's sentence."""
    lines = [f"{i}. {PARAGRAPH}" for i in range(max(4, size // (len(PARAGRAPH) + 6)))]
    base = "\n".join(lines) + "\n"
    person = base.replace("1. ", "1. A person adds this sentence. ", 1)
    last = lines[-2]
    agent = base.replace(last, last.replace("stands in for", "represents"))
    clash = base.replace("1. Collaborative", "1. Agents that collaborate", 1)
    return base, person, agent, clash


def median_ms(repeats: int, run: Callable[[], None]) -> tuple[float, float]:
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        timings.append((time.perf_counter() - started) * 1e3)
    return statistics.median(timings), max(timings)


def keystrokes(base: str) -> Callable[[], None]:
    shared = SharedText(base, seq=1)
    panel = Doc(client_id=7)
    panel.apply_update(shared.state())
    before = panel.get_state()
    panel.get(ROOT, type=Text).insert(len(base[:40].encode()), "Typed at once. ")
    update = panel.get_update(before)
    version = shared.version_at(1)

    def edit() -> None:
        shared.live_update(update, client=7, author="person", base=version)

    return edit


def stale(base: str, person: str, sent: str) -> Callable[[], None]:
    shared = SharedText(base, seq=1)
    shared.commit(shared.replacement(person, seq=2, author="person"), seq=2, author="person")
    version = shared.version_at(1)

    def edit() -> None:
        result = shared.replacement(sent, seq=3, author="agent", base=version)
        assert "A person adds" in result.text or "Agents that" in result.text

    return edit


class Editor(CoEnv):
    """One shared text that a whole-text action replaces, as a task's editor."""

    name = "editor"
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


def session_step(base: str, person: str, agent: str, repeats: int) -> tuple[float, float]:
    timings = []
    for _ in range(repeats):
        env = Editor()
        env.start_text = base
        coordinator = Coordinator(env, TEAM, session_id="merge-bench")
        coordinator.start(1.0)
        coordinator.handle("person", {"name": "EDITOR_UPDATE", "args": {"text": person}}, 2.0)
        started = time.perf_counter()
        coordinator.handle("agent", {"name": "EDITOR_UPDATE", "args": {"text": agent}}, 3.0,
                           seen_seq=1)
        timings.append((time.perf_counter() - started) * 1e3)
        assert "A person adds" in env.text and "represents" in env.text
    return statistics.median(timings), max(timings)


async def stale_rewrite_on_a_node(base: str, person: str, agent: str,
                                  lags: list[float]) -> float:
    """The person's edit lands, then the agent's rewrite of the older copy; the seconds the
    second step took, with the ticker running through it."""
    env = Editor()
    env.start_text = base
    coordinator = Coordinator(env, TEAM, session_id="merge-bench")
    node = EnvNode(MemoryBus(), coordinator)
    await node._deliver(coordinator.start(time.time()))  # both are shown ``base`` (seq 1)
    update = {"name": "EDITOR_UPDATE"}
    await node._on_request(StepRequest(role="person", kind="action", seen_seq=1,
                                       action={**update, "args": {"text": person}}))
    stop = asyncio.Event()
    ticking = asyncio.create_task(ticker(lags, stop))
    await asyncio.sleep(2 * TICK)  # the ticker runs before the step arrives
    started = time.perf_counter()
    await node._on_request(StepRequest(role="agent", kind="action", seen_seq=1,
                                       action={**update, "args": {"text": agent}}))
    took = time.perf_counter() - started
    await asyncio.sleep(2 * TICK)
    stop.set()
    await ticking
    assert "A person adds" in env.text and "represents" in env.text  # merged, both kept
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--lag-repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"{'size':>7} {'characters':>10}  {'keystrokes':>14} {'stale rewrite':>14} "
          f"{'overlap':>14} {'session step':>14}   (median / max ms)")
    for label, size in SIZES.items():
        base, person, agent, clash = texts(size)
        figures = [median_ms(args.repeats, keystrokes(base)),
                   median_ms(args.repeats, stale(base, person, agent)),
                   median_ms(args.repeats, stale(base, person, clash)),
                   session_step(base, person, agent, args.repeats)]
        cells = " ".join(f"{f'{m:.2f} / {x:.1f}':>14}" for m, x in figures)
        print(f"{label:>7} {len(base):>10,}  {cells}")
    base, person, agent, _ = texts(SIZES["1 MB"])
    lags: list[float] = []
    took = [asyncio.run(stale_rewrite_on_a_node(base, person, agent, lags))
            for _ in range(args.lag_repeats)]
    print(f"\nevent-loop lag while an EnvNode merges a stale rewrite of {len(base):,} "
          f"characters ({args.lag_repeats} steps):")
    print(f"  step median {statistics.median(took) * 1e3:.0f} ms; {lag_summary(lags)}")


if __name__ == "__main__":
    main()
