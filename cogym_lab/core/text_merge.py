"""Three-way text merge through a CRDT, so that concurrent edits of one text keep both sides.

``merge_text(base, ours, theirs)`` treats ``ours`` and ``theirs`` as two edits of ``base`` made at
the same time (a person typing while an agent rewrites). Each side's difference from ``base`` is
replayed as ``Y.Text`` edits (pycrdt) in its own document, both documents starting from one shared
base state; the documents then exchange updates and converge, and the result is read back.

Conventions that make the merge predictable:

* a side equal to ``base`` changed nothing, so the other side wins as it is;
* an edit made identically by both sides (same span, same new text) is applied once;
* where both sides insert at one spot, ``ours`` comes first (fixed client ids, not random ones).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from pycrdt import Doc, Text

_BASE_CLIENT, _OURS_CLIENT, _THEIRS_CLIENT = 1, 2, 3
# Above this many tokens, diff whole lines first: a token diff grows with the square.
_TOKEN_DIFF_LIMIT = 3000
_CHAR_DIFF_LIMIT = 2000  # the longest replaced run refined character by character


@dataclass(frozen=True)
class Edit:
    """Replace ``base[start:end]`` with ``text``."""

    start: int
    end: int
    text: str


def text_edits(base: str, new: str) -> list[Edit]:
    """The edits that turn ``base`` into ``new``, in order, as character spans of ``base``.

    The diff works on tokens (words, runs of white space, single other characters), so edits
    fall on word boundaries, as a person would make them, rather than inside words.
    """
    old_tokens, new_tokens = _TOKEN.findall(base), _TOKEN.findall(new)
    prefix = _common_prefix(old_tokens, new_tokens)
    suffix = _common_suffix(old_tokens[prefix:], new_tokens[prefix:])
    old_mid = old_tokens[prefix:len(old_tokens) - suffix]
    new_mid = new_tokens[prefix:len(new_tokens) - suffix]
    if not old_mid and not new_mid:
        return []
    offset = sum(map(len, old_tokens[:prefix]))
    return [Edit(offset + e.start, offset + e.end, e.text) for e in _diff(old_mid, new_mid)]


_TOKEN = re.compile(r"\w+|\s+|[^\w\s]", re.UNICODE)


def _common_prefix(a: list[str], b: list[str]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _common_suffix(a: list[str], b: list[str]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[len(a) - 1 - i] == b[len(b) - 1 - i]:
        i += 1
    return i


def _diff(old: list[str], new: list[str]) -> list[Edit]:
    """Token edits; above the limit, whole lines are diffed first and tokens inside blocks."""
    if len(old) + len(new) <= _TOKEN_DIFF_LIMIT:
        return _token_edits(old, new)
    old_text, new_text = "".join(old), "".join(new)
    old_lines, new_lines = old_text.splitlines(keepends=True), new_text.splitlines(keepends=True)
    old_at, new_at = _offsets(old_lines), _offsets(new_lines)
    edits: list[Edit] = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start, end = old_at[i1], old_at[i2]
        old_block = _TOKEN.findall(old_text[start:end])
        new_block = _TOKEN.findall(new_text[new_at[j1]:new_at[j2]])
        if tag == "replace" and len(old_block) + len(new_block) <= _TOKEN_DIFF_LIMIT:
            edits += [Edit(start + e.start, start + e.end, e.text)
                      for e in _token_edits(old_block, new_block)]
        else:
            edits.append(Edit(start, end, "".join(new_block)))
    return edits


def _token_edits(old: list[str], new: list[str]) -> list[Edit]:
    """Token edits; a replaced run of tokens is refined to characters, so that two people
    typing inside one word both keep their letters."""
    at = _offsets(old)
    edits: list[Edit] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old_run, new_run = "".join(old[i1:i2]), "".join(new[j1:j2])
        if tag == "replace" and len(old_run) + len(new_run) <= _CHAR_DIFF_LIMIT:
            edits += [Edit(at[i1] + e.start, at[i1] + e.end, e.text)
                      for e in _char_edits(old_run, new_run)]
        else:
            edits.append(Edit(at[i1], at[i2], new_run))
    return edits


def _char_edits(old: str, new: str) -> list[Edit]:
    """Character edits of one replaced run. The common ends are kept first: difflib alone
    may match a repeated letter at the other end ("aaa" -> "aXaa" as "aX" put before and an "a"
    taken away), which would move an insertion away from where it was typed."""
    prefix = _common_prefix(list(old), list(new))
    suffix = _common_suffix(list(old[prefix:]), list(new[prefix:]))
    old_mid, new_mid = old[prefix:len(old) - suffix], new[prefix:len(new) - suffix]
    chars = difflib.SequenceMatcher(None, old_mid, new_mid, autojunk=False)
    return [Edit(prefix + c1, prefix + c2, new_mid[d1:d2])
            for op, c1, c2, d1, d2 in chars.get_opcodes() if op != "equal"]


def _offsets(parts: list[str]) -> list[int]:
    offsets = [0]
    for part in parts:
        offsets.append(offsets[-1] + len(part))
    return offsets


def merge_text(base: str, ours: str, theirs: str) -> str:
    """Merge two concurrent edits of ``base``; neither side's insertions are lost.

    Deletions are kept too, unless the other side changed the deleted span (then the CRDT keeps
    that side's new text). The result is deterministic.
    """
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    our_edits = text_edits(base, ours)
    shared = set(our_edits)
    their_edits = [edit for edit in text_edits(base, theirs) if edit not in shared]

    origin: Doc[Text] = Doc(client_id=_BASE_CLIENT)
    origin["text"] = Text(base)
    base_state = origin.get_update()
    ours_doc, ours_text = _from_state(base_state, _OURS_CLIENT)
    theirs_doc, theirs_text = _from_state(base_state, _THEIRS_CLIENT)
    _apply(ours_doc, ours_text, base, our_edits)
    _apply(theirs_doc, theirs_text, base, their_edits)
    ours_doc.apply_update(theirs_doc.get_update(ours_doc.get_state()))
    return str(ours_text)


def _from_state(update: bytes, client_id: int) -> tuple[Doc, Text]:
    doc: Doc[Text] = Doc(client_id=client_id)
    doc.apply_update(update)
    return doc, doc.get("text", type=Text)


def _apply(doc: Doc, text: Text, base: str, edits: list[Edit]) -> None:
    """Apply ``edits`` (character spans of ``base``) to ``text``, which holds ``base``.

    pycrdt counts offsets in UTF-8 bytes, so character offsets are converted first.
    """
    with doc.transaction():
        for edit in reversed(edits):  # from the end, so earlier spans keep their offsets
            start = _utf8_length(base, edit.start)
            if edit.end > edit.start:
                del text[start:start + len(base[edit.start:edit.end].encode())]
            if edit.text:
                text.insert(start, edit.text)


def _utf8_length(text: str, chars: int) -> int:
    return len(text[:chars].encode())
