"""What every merge of two concurrent edits must keep, checked from the outside: the lines that
neither side touched stay whole lines, and each side's inserted words stay together (on each
line it inserted: another side's whole lines may come between two of its lines)."""

from __future__ import annotations

from cogym_lab.core.text_hunks import Hunk, diff, lines


def touches(hunk: Hunk, start: int, end: int, base: str) -> bool:
    """Whether ``hunk`` changes line ``base[start:end]`` or where it begins (deleting or
    rewriting whole lines before it does not)."""
    if hunk.start == hunk.end:
        return start < hunk.start < end or (hunk.start == start and not hunk.text.endswith("\n"))
    if hunk.start < end and hunk.end > start:
        return True
    if hunk.end == start:
        at_line_start = hunk.start == 0 or base[hunk.start - 1] == "\n"
        return not (at_line_start and (not hunk.text or hunk.text.endswith("\n")))
    return False


def check_merge(base: str, current: str, sent: str, result: str) -> None:
    """The merge of ``sent`` (made on ``base``) into ``current`` kept untouched lines whole and
    both sides' inserted words together."""
    hunks = diff(base, current) + diff(base, sent)
    at = 0
    for line in lines(base):
        end = at + len(line)
        if line.strip() and not any(touches(h, at, end, base) for h in hunks):
            padded = "\n" + result + ("" if line.endswith("\n") else "\n")
            assert "\n" + line in padded or result.endswith(line), (line, base, result)
        at = end
    for hunk in hunks:  # each line's words together (a merge may put whole lines between)
        for words in hunk.text.split("\n"):
            if words.strip():
                assert words in result, (hunk, base, current, sent, result)
