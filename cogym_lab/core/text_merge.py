"""Three-way text merge through a CRDT, so that concurrent edits of one text keep both sides.

``merge_text(base, ours, theirs)`` treats ``ours`` and ``theirs`` as two edits of ``base`` made at
the same time (a person typing while an agent rewrites). Each side's difference from ``base`` is
replayed as ``Y.Text`` edits (pycrdt) in its own document, both documents starting from one shared
base state; the documents then exchange updates and converge, and the result is read back.

Conventions that make the merge predictable:

* a side equal to ``base`` changed nothing, so the other side wins as it is;
* an edit made identically by both sides (same span, same new text) is applied once;
* where both sides insert at one spot, ``ours`` comes first (fixed client ids, not random ones).

A merge costs time that grows with the text (about 240 ms for 1 MB), and the coordinator that
calls it runs on the session's event loop. So a merge whose longest text has ``OFF_LOOP_CHARS``
characters or more is worked out ahead in a worker thread (:func:`merge_off_loop`, which the
EnvNode awaits), and handed to the coordinator, whose call of :func:`merge_text` inside
:func:`reusing` takes that result only when its own three texts are exactly the ones it was
computed from; otherwise it merges there and then. ``merge_text`` is a pure function of its three
texts, so the result, the state and the event log are the same either way.
"""

from __future__ import annotations

import asyncio
import difflib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
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
    old_tokens, new_tokens = _tokens(base), _tokens(new)
    prefix = _common_prefix(old_tokens, new_tokens)
    suffix = _common_suffix(old_tokens[prefix:], new_tokens[prefix:])
    old_mid = old_tokens[prefix:len(old_tokens) - suffix]
    new_mid = new_tokens[prefix:len(new_tokens) - suffix]
    if not old_mid and not new_mid:
        return []
    offset = sum(map(len, old_tokens[:prefix]))
    return [Edit(offset + e.start, offset + e.end, e.text) for e in _diff(old_mid, new_mid)]


_TOKEN = re.compile(r"\w+|\s+|[^\w\s]", re.UNICODE)
_LONE = re.compile(r"[^\w\s]", re.UNICODE)  # a character that is a token by itself
_TOKENS_AT_ONCE = 16_384  # characters tokenized by one findall call, about 1 ms


def _tokens(text: str) -> list[str]:
    """``_TOKEN.findall(text)``, a piece at a time.

    One findall holds the GIL for its whole run (70 ms for a megabyte), so a merge in a worker
    thread would stall the event loop that long. The pieces end just after a character that is
    a token by itself (neither a word character nor a space): a match always ends there, so the
    tokens are exactly those of a single call.
    """
    tokens: list[str] = []
    start = 0
    while len(text) - start > _TOKENS_AT_ONCE:
        lone = _LONE.search(text, start + _TOKENS_AT_ONCE)
        if lone is None:
            break
        tokens += _TOKEN.findall(text, start, lone.end())
        start = lone.end()
    tokens += _TOKEN.findall(text, start)
    return tokens


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
        old_block = _tokens(old_text[start:end])
        new_block = _tokens(new_text[new_at[j1]:new_at[j2]])
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


#: A merge whose longest text has this many characters or more runs in a worker thread: about
#: 6 ms of work (benchmarks/text_merge.py), well above what handing it to a thread costs.
OFF_LOOP_CHARS = 32_768


@dataclass(frozen=True, eq=False)
class PrecomputedMerge:
    """``merged`` is ``merge_text(base, ours, theirs)``, worked out ahead of its use."""

    base: str
    ours: str
    theirs: str
    merged: str

    def matches(self, base: str, ours: str, theirs: str) -> bool:
        """Whether this is the merge of exactly these texts (same objects compare at once)."""
        return self.base == base and self.ours == ours and self.theirs == theirs


_reusable: ContextVar[PrecomputedMerge | None] = ContextVar("reusable_merge", default=None)


@contextmanager
def reusing(precomputed: PrecomputedMerge | None) -> Iterator[None]:
    """Within this block, :func:`merge_text` of exactly ``precomputed``'s texts returns its
    result instead of merging again; any other call merges as usual."""
    token = _reusable.set(precomputed)
    try:
        yield
    finally:
        _reusable.reset(token)


def worth_offloading(base: str, ours: str, theirs: str) -> bool:
    """Whether merging these texts would hold an event loop long enough to run it elsewhere."""
    return max(len(base), len(ours), len(theirs)) >= OFF_LOOP_CHARS


async def merge_off_loop(base: str, ours: str, theirs: str) -> PrecomputedMerge:
    """:func:`merge_text` in a worker thread, so the event loop serves others meanwhile.

    The merge holds the GIL for most of its work (difflib is Python), but the interpreter
    switches threads every few milliseconds, so the loop waits that long at most, not the
    whole merge.
    """
    merged = await asyncio.to_thread(_merge_in_thread, base, ours, theirs)
    return PrecomputedMerge(base, ours, theirs, merged)


def _merge_in_thread(base: str, ours: str, theirs: str) -> str:
    # Looked up when called, not bound at import: a test can hold the thread at this point.
    return merge_text(base, ours, theirs)


def merge_text(base: str, ours: str, theirs: str) -> str:
    """Merge two concurrent edits of ``base``; neither side's insertions are lost.

    Deletions are kept too, unless the other side changed the deleted span (then the CRDT keeps
    that side's new text). The result is deterministic. Inside :func:`reusing`, the merge given
    there is returned when these are its texts.
    """
    precomputed = _reusable.get()
    if precomputed is not None and precomputed.matches(base, ours, theirs):
        return precomputed.merged
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
