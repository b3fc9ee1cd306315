"""Three-way merge speed: how long ``merge_text`` takes on shared texts of growing size, with one
concurrent edit on each side (a person's and an agent's).

Run from the repository root::

    python benchmarks/text_merge.py [--repeats 20]

It prints a table and checks nothing. Each text is N paragraphs of prose; "ours" inserts a
sentence near the start and "theirs" rewrites a sentence near the end, as two people editing
one section at once would. The time is the median over ``--repeats`` calls.
"""

from __future__ import annotations

import argparse
import statistics
import time

from cogym_lab.core.text_merge import merge_text

PARAGRAPH = ("Collaborative agents plan with people, and people correct them as they go. "
             "This paragraph stands in for one of a related-work section's many. ")


def texts(paragraphs: int) -> tuple[str, str, str]:
    lines = [f"{i}. {PARAGRAPH}" for i in range(paragraphs)]
    base = "\n".join(lines)
    ours = base.replace("1. ", "1. A person adds this sentence. ", 1)
    last = lines[-1]
    theirs = base.replace(last, last.replace("stands in for", "represents"))
    return base, ours, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
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


if __name__ == "__main__":
    main()
