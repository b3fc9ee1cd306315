"""What one side changed in a text, as hunks of the text it started from.

:func:`diff` compares whole lines first and, inside a block of changed lines, words: a hunk
never starts or ends inside a word, and a line that only one side changed is one place, not
letters scattered over it. Lines end at ``\\n`` only (the text policy: U+2028 and the other
characters ``str.splitlines`` breaks on are text, not line ends).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

# Word characters, a run of spaces other than the line end, the line end, any other character.
_TOKEN = re.compile(r"\w+|[^\S\n]+|\n|[^\w\s]", re.UNICODE)
#: Above this many tokens in a block of changed lines, the block is one hunk: a token diff grows
#: with the square of its length, and a block that large was rewritten, not touched up.
TOKEN_DIFF_LIMIT = 4000


@dataclass(frozen=True, slots=True)
class Hunk:
    """Replace ``base[start:end]`` with ``text`` (an insertion when ``start == end``)."""

    start: int
    end: int
    text: str

    @property
    def inserts(self) -> bool:
        """Whether it adds text (a replacement or an insertion; not a pure deletion)."""
        return bool(self.text)


def lines(text: str) -> list[str]:
    """``text`` cut after each ``\\n``; joined again they are ``text``."""
    parts = text.split("\n")
    cut = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        cut.append(parts[-1])
    return cut


def offsets(parts: Sequence[str]) -> list[int]:
    """Where each part starts when they are joined, and (last) the joined length."""
    at = [0]
    for part in parts:
        at.append(at[-1] + len(part))
    return at


def diff(base: str, new: str) -> list[Hunk]:
    """The hunks that turn ``base`` into ``new``, in order and never overlapping."""
    if base == new:
        return []
    # The lines both share at either end are found by comparing characters, in C: most edits
    # change a few lines of a long text, which is then never cut into lines.
    start = base.rfind("\n", 0, _shared_start(base, new)) + 1
    tail = _shared_end(base, new, limit=min(len(base), len(new)) - start)
    if tail and (tail == len(base) or base[len(base) - tail - 1] == "\n"):
        end = len(base) - tail  # the shared end begins a line: keep it whole
    else:  # it begins inside a line: the middle runs to that line's end (or the text's)
        end = base.find("\n", len(base) - tail) + 1 or len(base)
    new_end = len(new) - (len(base) - end)
    old_mid, new_mid = lines(base[start:end]), lines(new[start:new_end])
    old_at, new_at = offsets(old_mid), offsets(new_mid)
    new_start = start
    hunks: list[Hunk] = []
    matcher = difflib.SequenceMatcher(None, old_mid, new_mid, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old_block = base[start + old_at[i1]:start + old_at[i2]]
        new_block = new[new_start + new_at[j1]:new_start + new_at[j2]]
        hunks += [Hunk(start + old_at[i1] + h.start, start + old_at[i1] + h.end, h.text)
                  for h in _word_hunks(old_block, new_block)]
    return hunks


def apply(base: str, hunks: Sequence[Hunk]) -> str:
    """``base`` with ``hunks`` (in order, not overlapping) applied."""
    pieces, at = [], 0
    for hunk in hunks:
        pieces += [base[at:hunk.start], hunk.text]
        at = hunk.end
    pieces.append(base[at:])
    return "".join(pieces)


def _word_hunks(old: str, new: str) -> list[Hunk]:
    """Hunks of a block of changed lines, word by word; too large a block is one hunk."""
    old_tokens, new_tokens = _TOKEN.findall(old), _TOKEN.findall(new)
    if not old_tokens or not new_tokens or len(old_tokens) + len(new_tokens) > TOKEN_DIFF_LIMIT:
        return [Hunk(0, len(old), new)]
    head = _common_prefix(old_tokens, new_tokens)
    tail = _common_suffix(old_tokens[head:], new_tokens[head:])
    old_mid = old_tokens[head:len(old_tokens) - tail]
    new_mid = new_tokens[head:len(new_tokens) - tail]
    at = offsets(old_tokens)
    shift = at[head]
    mid_at = [shift + offset for offset in offsets(old_mid)]
    hunks = []
    matcher = difflib.SequenceMatcher(None, old_mid, new_mid, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            hunks.append(Hunk(mid_at[i1], mid_at[i2], "".join(new_mid[j1:j2])))
    return hunks


#: Characters compared at a time when looking for the shared start or end of two texts.
_CHUNK = 4096


def _shared_start(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` share at their start."""
    n, at = min(len(a), len(b)), 0
    while at + _CHUNK <= n and a[at:at + _CHUNK] == b[at:at + _CHUNK]:
        at += _CHUNK
    while at < n and a[at] == b[at]:
        at += 1
    return at


def _shared_end(a: str, b: str, limit: int) -> int:
    """How many characters ``a`` and ``b`` share at their end, at most ``limit``."""
    at = 0
    while at + _CHUNK <= limit and a[len(a) - at - _CHUNK:len(a) - at] == \
            b[len(b) - at - _CHUNK:len(b) - at]:
        at += _CHUNK
    while at < limit and a[len(a) - at - 1] == b[len(b) - at - 1]:
        at += 1
    return at


def _common_prefix(a: Sequence[str], b: Sequence[str]) -> int:
    n, i = min(len(a), len(b)), 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _common_suffix(a: Sequence[str], b: Sequence[str]) -> int:
    n, i = min(len(a), len(b)), 0
    while i < n and a[-1 - i] == b[-1 - i]:
        i += 1
    return i
