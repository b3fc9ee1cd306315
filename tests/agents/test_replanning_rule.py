"""The replanning rule's cheap first stage and the readers of the LM's answers: which edits are
worth an LM call, and which answers are used, repaired or refused."""

from __future__ import annotations

import pytest

from cogym_lab.agents.replanning import may_change_course, read_completions, read_replan


@pytest.mark.parametrize(("old", "new", "later", "judged"), [
    ("Search papers on interactive feedback", "Search authors on interactive feedback", 2, True),
    ("Search papers on camping gear", "Search papers on camping gear!", 2, False),
    ("Search papers on camping gear", "Find experts who write about ultralight hiking", 2, True),
    ("Search papers on camping gear", "Find experts who write about ultralight hiking", 0, False),
    ("List the gear for the long trip in the hills", "List the gear for the long trip in the "
     "high hills", 1, False),
])
def test_only_an_edit_with_later_steps_and_a_third_of_its_words_changed_is_judged(
        old: str, new: str, later: int, judged: bool) -> None:
    assert may_change_course(old, new, later) is judged


def test_the_readers_take_none_one_or_several_choices_and_refuse_the_rest() -> None:
    assert read_replan("none") is None and read_replan(" None. ") is None
    one = '[{"description": "Add them", "assignee": "agent"}]'
    assert read_replan(one) == [[{"description": "Add them", "assignee": "agent"}]]
    assert len(read_replan(f"[{one}, {one}]") or []) == 2
    for bad in (None, "maybe", "[[]]", f"[{one}, {one}, {one}, {one}]"):
        with pytest.raises(ValueError):
            read_replan(bad)
    assert read_completions('["a b", " c d ", "e", "f"]') == ["a b", "c d", "e"]
    for bad in (None, '["only one"]', '["a", ""]', "a, b"):
        with pytest.raises(ValueError):
            read_completions(bad)
