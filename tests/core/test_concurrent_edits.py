"""The rule for two concurrent edits of one text (core.concurrent_edits), and the hunks it works
from (core.text_hunks): untouched lines stay whole, both sides' words stay whole, overlaps are
reported, and the result does not depend on which edit arrived first."""

from __future__ import annotations

import itertools

from hypothesis import example, given, settings
from hypothesis import strategies as st

from cogym_lab.core.concurrent_edits import merge
from cogym_lab.core.text_hunks import Hunk, apply, diff, lines
from tests.support.merge_checks import check_merge

# Short lines of a few words, so that edits land on, inside and across lines.
WORD = st.sampled_from(["Day", "1:", "2:", "Getty", "museum", "beach", "fly", "home", "é", "中",
                        "😀", "\u2028", "\x00", "<b>", "&amp;"])
LINE = st.lists(WORD, min_size=0, max_size=4).map(" ".join)
TEXT = st.lists(LINE, max_size=6).map(lambda ls: "".join(line + "\n" for line in ls)) | \
    st.lists(LINE, min_size=1, max_size=6).map("\n".join)


@st.composite
def edited(draw: st.DrawFn, base: str) -> str:
    """``base`` with a few line-level and word-level edits, as a person or an agent makes."""
    cut = lines(base)
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["insert", "delete", "rewrite", "word"]))
        at = draw(st.integers(0, len(cut)))
        if kind == "insert":
            cut.insert(at, draw(LINE) + "\n")
        elif cut and at < len(cut):
            if kind == "delete":
                del cut[at]
            elif kind == "rewrite":
                cut[at] = draw(LINE) + ("\n" if cut[at].endswith("\n") else "")
            else:
                words = cut[at].rstrip("\n").split(" ")
                spot = draw(st.integers(0, len(words)))
                words.insert(spot, draw(WORD))
                cut[at] = " ".join(words) + ("\n" if cut[at].endswith("\n") else "")
    return "".join(cut)


@st.composite
def three(draw: st.DrawFn) -> tuple[str, str, str]:
    base = draw(TEXT)
    return base, draw(edited(base)), draw(edited(base))


# -- hunks ---------------------------------------------------------------------------------------

@given(base=TEXT, new=TEXT)
@settings(max_examples=300, deadline=None)
def test_hunks_rebuild_the_new_text(base: str, new: str) -> None:
    hunks = diff(base, new)
    assert apply(base, hunks) == new
    assert all(a.end <= b.start for a, b in itertools.pairwise(hunks))


def test_a_hunk_never_splits_a_word() -> None:
    assert diff("Day 2: Getty\n", "Day 2: Getty museum\n") == [Hunk(12, 12, " museum")]
    assert diff("the Monday trip", "the Friday trip") == [Hunk(4, 10, "Friday")]


def test_lines_end_at_newlines_only() -> None:
    assert lines("a\u2028b\nc") == ["a\u2028b\n", "c"]
    assert "".join(lines("x\n\ny\n")) == "x\n\ny\n"


# -- the merge rule ------------------------------------------------------------------------------

@given(three())
@settings(max_examples=400, deadline=None)
def test_the_result_does_not_depend_on_arrival_order(case: tuple[str, str, str]) -> None:
    base, one, other = case
    for first in (True, False):
        assert merge(base, one, other, ours_first=first).text == \
            merge(base, other, one, ours_first=not first).text


@given(base=TEXT, ours=TEXT)
@settings(max_examples=200, deadline=None)
def test_a_side_that_changed_nothing_takes_the_other(base: str, ours: str) -> None:
    assert merge(base, ours, base).text == ours
    assert merge(base, base, ours).text == ours
    assert merge(base, ours, ours).text == ours  # the same edit made twice counts once


@given(three())
@example(("Day 1: beach\nDay 2: Getty\nDay 3: fly home\n",
          "Day 1: beach\nDay 3: fly home\n",  # the person deletes a line
          "Day 1: beach\nDay 2: Getty museum at dawn\nDay 3: fly home\n"))  # the agent edits it
@example(("Day 2: Getty\n", "Day 2: Getty with Ana\n", "Day 2: Getty museum\n"))
@settings(max_examples=400, deadline=None)
def test_untouched_lines_stay_whole_and_inserted_words_together(case: tuple[str, str, str]
                                                                 ) -> None:
    base, ours, theirs = case
    for first in (True, False):
        check_merge(base, ours, theirs, merge(base, ours, theirs, ours_first=first).text)


def test_an_edit_inside_a_line_the_other_side_deleted_keeps_the_edited_line() -> None:
    base = "Day 1: beach\nDay 2: Getty\nDay 3: fly home\n"
    person = "Day 1: beach\nDay 3: fly home\n"
    agent = "Day 1: beach\nDay 2: Getty museum at dawn\nDay 3: fly home\n"
    for ours, theirs in ((person, agent), (agent, person)):
        merged = merge(base, ours, theirs)
        assert merged.text == agent  # once garbled as "Day  at dawn3: fly home"
        assert [o.lines for o in merged.overlaps] == [(2, 2)]


def test_two_insertions_at_one_place_are_both_kept_whole() -> None:
    base = "Day 2: Getty\nDay 3: fly home\n"
    merged = merge(base, "Day 2: Getty with Ana\nDay 3: fly home\n",
                   "Day 2: Getty museum\nDay 3: fly home\n")
    # Once garbled as "Day 2: Getty  with Anamuseum".
    assert merged.text == "Day 2: Getty with Ana museum\nDay 3: fly home\n"
    assert merged.overlaps == ()


def test_two_rewrites_of_one_phrase_keep_both_versions_and_say_where() -> None:
    base = "Plan:\nDay 2: Monday trip\nEnd.\n"
    merged = merge(base, "Plan:\nDay 2: Tuesday trip\nEnd.\n", "Plan:\nDay 2: Friday trip\nEnd.\n")
    assert merged.text == "Plan:\nDay 2: Tuesday trip\nDay 2: Friday trip\nEnd.\n"
    assert [(o.lines, o.base_lines) for o in merged.overlaps] == [((2, 3), (2, 2))]
    swapped = merge(base, "Plan:\nDay 2: Tuesday trip\nEnd.\n", "Plan:\nDay 2: Friday trip\nEnd.\n",
                    ours_first=False)
    assert swapped.text == "Plan:\nDay 2: Friday trip\nDay 2: Tuesday trip\nEnd.\n"


def test_deletions_by_both_sides_are_both_made() -> None:
    base = "a\nb\nc\nd\n"
    assert merge(base, "a\nd\n", "a\nb\nd\n").text == "a\nd\n"
    assert merge(base, "c\nd\n", "a\nb\nd\n").text == "d\n"


def test_a_text_without_a_last_line_end_merges_its_last_line() -> None:
    merged = merge("one\ntwo", "one\ntwo three", "one\nfour")
    assert merged.text == "one\ntwo three\nfour"
