"""Who meets which conditions in which order: a participant's sequence.

Participants are numbered in the order they arrive (0, 1, 2...); the sequence depends only on
that number, the design and the study's seed, so that a study can be resumed, audited and
simulated with exactly the orders people got.

* ``between``: participant *i* meets condition *i mod n* only (arrivals fill the conditions
  evenly);
* ``within`` + ``latin``: the rows of a balanced Latin square (Williams design: every condition
  comes first equally often, and follows every other equally often when *n* is even);
* ``within`` + ``random``: a fresh random order per participant, from the seed;
* ``within`` + ``blocked``: the design's own order for everyone.

Each condition is met ``repeat`` times in a row (a block). Baseline conditions (run by the
agents alone, only compared with) are never assigned.
"""

from __future__ import annotations

import random

from cogym_lab.studies.design import StudyDesign


def williams_square(n: int) -> list[list[int]]:
    """A balanced Latin square of ``n`` conditions (rows are orders). For odd ``n`` the square
    and its mirror are both given (2n rows), as a Williams design needs for carry-over balance."""
    if n < 1:
        raise ValueError("a Latin square needs one condition or more")
    first = [0]
    low, high = 1, n - 1
    for k in range(1, n):  # 0, 1, n-1, 2, n-2, ...
        if k % 2:
            first.append(low)
            low += 1
        else:
            first.append(high)
            high -= 1
    rows = [[(c + shift) % n for c in first] for shift in range(n)]
    if n % 2:
        rows += [list(reversed(row)) for row in rows]
    return rows


def condition_order(design: StudyDesign, participant: int, seed: int = 0) -> list[str]:
    """The conditions participant number ``participant`` meets, once each, in order."""
    if participant < 0:
        raise ValueError("participants are numbered from 0")
    names = [c.name for c in design.participant_conditions()]
    plan = design.assignment
    if plan.subjects == "between":
        return [names[participant % len(names)]]
    if plan.order == "blocked":
        return names
    if plan.order == "latin":
        rows = williams_square(len(names))
        return [names[c] for c in rows[participant % len(rows)]]
    order = list(names)
    random.Random(f"{seed}:{participant}").shuffle(order)
    return order


def sequence_for(design: StudyDesign, participant: int, seed: int = 0) -> list[str]:
    """Every session's condition, in order: each condition ``repeat`` times in a row."""
    return [name for name in condition_order(design, participant, seed)
            for _ in range(design.assignment.repeat)]


__all__ = ["condition_order", "sequence_for", "williams_square"]
