"""Assignment and steps: balanced Latin squares, between-subjects filling, random orders that
depend only on the seed and the arrival number, and the steps a participant walks."""

from __future__ import annotations

from itertools import pairwise

from cogym_lab.studies.assignment import condition_order, sequence_for, williams_square
from cogym_lab.studies.design import StudyDesign
from cogym_lab.studies.steps import plan_steps


def _design(subjects: str = "within", order: str = "latin", n: int = 4,
            repeat: int = 1) -> StudyDesign:
    return StudyDesign.model_validate({
        "name": "toy", "title": "Toy", "consent": "I agree.", "instructions": "Play.",
        "conditions": [{"name": f"c{k}", "label": f"Agent {chr(65 + k)}",
                        "session": {"task": "todo", "team": "example", "instances": [0, 1]}}
                       for k in range(n)],
        "assignment": {"subjects": subjects, "order": order, "repeat": repeat},
        "practice": [{"title": "Trial", "session": {"task": "todo", "team": "example"}}],
        "questionnaires": [
            {"name": "after", "after": "session", "items": [
                {"kind": "likert", "name": "liked", "text": "I liked it."}]},
            {"name": "pair", "after": "block", "items": [
                {"kind": "ranking", "name": "rank", "text": "Rank them."}]},
            {"name": "final", "after": "end", "items": [{"kind": "task_load"}]}],
    })


def test_williams_squares_are_balanced() -> None:
    for n in (2, 3, 4, 5, 6):
        rows = williams_square(n)
        assert all(sorted(row) == list(range(n)) for row in rows)
        firsts = [row[0] for row in rows]
        assert all(firsts.count(c) == len(rows) // n for c in range(n))
        follows = [pair for row in rows for pair in pairwise(row)]
        expected = len(follows) // (n * (n - 1))
        assert all(follows.count((a, b)) == expected
                   for a in range(n) for b in range(n) if a != b), n


def test_orders_per_design() -> None:
    latin = _design()
    assert {tuple(condition_order(latin, p)) for p in range(4)} == \
        {tuple(f"c{c}" for c in row) for row in williams_square(4)}
    between = _design("between")
    assert [condition_order(between, p) for p in range(5)] == [["c0"], ["c1"], ["c2"], ["c3"],
                                                                ["c0"]]
    assert condition_order(_design(order="blocked"), 7) == ["c0", "c1", "c2", "c3"]
    shuffled = _design(order="random")
    assert condition_order(shuffled, 3, seed=1) == condition_order(shuffled, 3, seed=1)
    assert len({tuple(condition_order(shuffled, p, seed=1)) for p in range(20)}) > 1
    assert sequence_for(_design(n=2, repeat=2), 1) == ["c1", "c1", "c0", "c0"]


def test_steps_follow_the_sequence_with_questionnaires_where_due() -> None:
    design = _design(n=2, repeat=2)
    steps = plan_steps(design, sequence_for(design, 0))
    kinds = [(s.kind, s.id) for s in steps]
    assert kinds[:3] == [("consent", "consent"), ("instructions", "instructions"),
                         ("practice", "practice-0")]
    assert [s.id for s in steps if s.kind != "session"][3:] == [
        "after-0", "after-1", "pair-1", "after-2", "after-3", "pair-3", "final-end", "done"]
    sessions = [s for s in steps if s.kind == "session"]
    assert [(s.condition, s.instance) for s in sessions] == [("c0", 0), ("c0", 1), ("c1", 0),
                                                             ("c1", 1)]
    assert all(s.title.startswith("Agent ") for s in sessions)  # neutral labels only
    assert len({s.id for s in steps}) == len(steps)
