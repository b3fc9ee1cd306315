"""Two edits of one text made at the same time: what the text becomes, and where they overlapped.

:func:`merge` is the rule a shared text (:mod:`cogym_lab.core.shared_text`) follows when an edit
arrives that was made on an older version while the text changed meanwhile:

* what only one side changed is kept as that side made it; a change both sides made alike is
  made once; deletions by either side are made;
* two insertions at one place are both kept whole, one after the other;
* where the sides *overlap* (one edits text the other deleted or rewrote, or both rewrite the
  same words), no letters are interleaved: the lines involved are kept in each side's version,
  one after the other, and a side whose version is empty there (it deleted those lines) adds
  nothing. The merge reports those lines, so whoever's edit overlapped can be told;
* lines that neither side touched come out exactly as they were.

The order of the sides (``ours_first``) decides only which comes first where both are kept: a
caller that orders the sides by who made them, not by which arrived first, gets the same text
whatever the arrival order.
"""

from __future__ import annotations

from dataclasses import dataclass

from cogym_lab.core.text_hunks import Hunk, diff, lines

OURS, THEIRS = 0, 1
#: :meth:`Merged.keeps` looks for at most this many inserted lines of words.
MAX_PIECES = 256


@dataclass(frozen=True)
class Overlap:
    """Lines both sides changed: ``lines`` is where the versions kept stand in the merged text,
    ``base_lines`` the lines of the base they replace (1-based and inclusive; a range with
    ``end < start`` is empty: both sides deleted every line there)."""

    lines: tuple[int, int]
    base_lines: tuple[int, int]


@dataclass(frozen=True)
class Merged:
    text: str
    overlaps: tuple[Overlap, ...] = ()
    #: What each side changed (hunks of the base), for :meth:`keeps`.
    base: str = ""
    sides: tuple[tuple[Hunk, ...], tuple[Hunk, ...]] = ((), ())

    def keeps(self, text: str) -> bool:
        """Whether ``text`` (another merge of the same two edits: a CRDT's, which places
        insertions by what each side actually did rather than by these hunks) keeps what this
        rule promises: every line neither side touched is a whole line of it, in order, and
        every line of words either side inserted is in it unbroken. Too many of those to look
        for is a no: the caller then takes this merge's text."""
        pieces = [words for hunk in self.sides[OURS] + self.sides[THEIRS]
                  for words in hunk.text.split("\n") if words.strip()]
        if len(pieces) > MAX_PIECES:
            return False
        kept = iter(line.rstrip("\n") for line in lines(text))
        untouched = _untouched_lines(self.base, self.sides[OURS] + self.sides[THEIRS])
        return all(any(line == have for have in kept) for line in untouched) \
            and all(piece in text for piece in pieces)


def merge(base: str, ours: str, theirs: str, *, ours_first: bool = True,
          ours_insert_first: bool | None = None) -> Merged:
    """``ours`` and ``theirs``, two edits of ``base`` made concurrently, merged.

    ``ours_first`` orders the versions kept where the edits overlap; ``ours_insert_first``
    (``ours_first`` when not given) orders two insertions at one place."""
    if theirs in (base, ours):
        return Merged(ours, base=base, sides=(tuple(diff(base, ours)), ()))
    if ours == base:
        return Merged(theirs, base=base, sides=((), tuple(diff(base, theirs))))
    sides = (diff(base, ours), diff(base, theirs))
    shared = set(sides[OURS])
    once = (sides[OURS], [h for h in sides[THEIRS] if h not in shared])  # alike: made once
    regions = _overlapping_regions(base, once)
    insert_first = ours_first if ours_insert_first is None else ours_insert_first
    text, overlaps = _assemble(base, sides, once, regions,
                               (OURS, THEIRS) if ours_first else (THEIRS, OURS),
                               (OURS, THEIRS) if insert_first else (THEIRS, OURS))
    return Merged(text, overlaps, base, (tuple(sides[OURS]), tuple(sides[THEIRS])))


def _untouched_lines(base: str, hunks: tuple[Hunk, ...]) -> list[str]:
    """The lines of ``base`` (without their line ends) that no hunk changes, nor where they
    begin (deleting or rewriting whole lines before one does not)."""
    untouched, start = [], 0
    for line in lines(base):
        end = start + len(line)
        if not any(_touches(hunk, start, end, base) for hunk in hunks):
            untouched.append(line.rstrip("\n"))
        start = end
    return untouched


def _touches(hunk: Hunk, start: int, end: int, base: str) -> bool:
    if _empty(hunk):
        return start < hunk.start < end or (hunk.start == start and not hunk.text.endswith("\n"))
    if hunk.start < end and hunk.end > start:
        return True
    if hunk.end == start:  # it ends where this line begins: did it end the line before?
        at_line_start = hunk.start == 0 or base[hunk.start - 1] == "\n"
        return not (at_line_start and (not hunk.text or hunk.text.endswith("\n")))
    return False


def _empty(hunk: Hunk) -> bool:
    return hunk.start == hunk.end


def _reaches_into(hunk: Hunk, start: int, end: int) -> bool:
    """Whether ``hunk`` changes something strictly inside ``[start, end)``: its span intersects
    it, or it inserts strictly inside. An insertion at either edge stays outside."""
    if _empty(hunk):
        return start < hunk.start < end
    return hunk.start < end and hunk.end > start


def _conflict(a: Hunk, b: Hunk, base: str) -> bool:
    """Whether hunks of the two sides touch the same characters (see :func:`_into`). Two
    deletions do not, unless together they remove both ends of a line."""
    return _into(a, b, base) or _into(b, a, base)


def _into(hunk: Hunk, span: Hunk, base: str) -> bool:
    """Whether ``hunk``'s text depends on characters that ``span`` (the other side's) deletes
    or rewrites: it lands strictly inside the span; or it is inserted at the span's first
    character without ending its line (it would run on into the other side's text); or at the
    span's end, on the same line, not starting a line of its own (it ran on from the span's
    last character); or what comes before it runs on (its text, or the line whose end it
    deleted) into a line whose end the span removes: it would run on into the next line."""
    if _empty(span):
        return False
    if hunk.inserts and _reaches_into(hunk, span.start, span.end):
        return True
    if _empty(hunk) and hunk.start == span.start:
        return not hunk.text.endswith("\n")
    if _empty(hunk) and hunk.start == span.end:
        return base[span.end - 1] != "\n" and not hunk.text.startswith("\n")
    if hunk.text.endswith("\n"):
        return False
    if not hunk.text and ("\n" not in base[hunk.start:hunk.end]
                          or hunk.start == 0 or base[hunk.start - 1] == "\n"):
        return False  # a deletion inside one line, or of whole lines: nothing runs on
    line_end = base.find("\n", hunk.end)
    return span.start <= line_end < span.end and not span.text.endswith("\n")


def _overlapping_regions(base: str, sides: tuple[list[Hunk], list[Hunk]]
                         ) -> list[tuple[int, int]]:
    """The spans of ``base`` where the sides overlap, grown to whole lines and over every hunk
    that reaches into them; sorted and disjoint."""
    theirs = sides[THEIRS]
    spans = []
    j = 0
    for hunk in sides[OURS]:
        while j < len(theirs) and theirs[j].end < hunk.start:
            j += 1
        k = j
        while k < len(theirs) and theirs[k].start <= hunk.end:
            if _conflict(hunk, theirs[k], base):
                spans.append((min(hunk.start, theirs[k].start), max(hunk.end, theirs[k].end)))
            k += 1
    if not spans:
        return []
    everything = sides[OURS] + sides[THEIRS]
    regions: list[tuple[int, int]] = []
    for span in sorted(spans):
        start, end = _whole_lines(base, *span)
        if regions and start < regions[-1][1]:
            previous = regions.pop()
            start, end = previous[0], max(end, previous[1])
        regions.append(_grown(base, everything, start, end))
    joined: list[tuple[int, int]] = []
    for start, end in regions:  # growing may have made neighbours meet
        if joined and start < joined[-1][1]:
            joined[-1] = (joined[-1][0], max(end, joined[-1][1]))
        else:
            joined.append((start, end))
    return joined


def _whole_lines(base: str, start: int, end: int) -> tuple[int, int]:
    """The lines that ``[start, end)`` (not empty) touches, each with its line end. A last line
    with no line end reaches one past the text, so that an insertion at the very end is inside
    it (it runs on from that line)."""
    first = base.rfind("\n", 0, start) + 1
    if base[end - 1:end] == "\n":
        return first, end
    line_end = base.find("\n", end)
    return first, len(base) + 1 if line_end < 0 else line_end + 1


def _grown(base: str, hunks: list[Hunk], start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` grown over every hunk that reaches into it, to whole lines, until none
    sticks out."""
    grown = True
    while grown:
        grown = False
        for hunk in hunks:
            if _reaches_into(hunk, start, end) and (hunk.start < start or hunk.end > end):
                start, end = _whole_lines(base, min(start, hunk.start), max(end, hunk.end))
                grown = True
    return start, end


def _assemble(base: str, sides: tuple[list[Hunk], list[Hunk]],
              once: tuple[list[Hunk], list[Hunk]], regions: list[tuple[int, int]],
              order: tuple[int, int], insert_order: tuple[int, int]
              ) -> tuple[str, tuple[Overlap, ...]]:
    """Walk ``base``: outside the regions both sides' hunks apply (``once``: a hunk both made
    only once; an insertion before a deletion at the same place; ``insert_order`` deciding
    between two insertions); each region becomes the sides' versions of its lines, in
    ``order``."""
    steps: list[tuple[int, int, int, Hunk | tuple[int, int]]] = [
        (start, 1, -1, (start, end)) for start, end in regions]
    for side in order:
        steps += [(h.start, 0 if _empty(h) else 1, insert_order.index(side), h) for h in once[side]
                  if not any(_reaches_into(h, start, end) for start, end in regions)]
    steps.sort(key=lambda step: step[:3])
    pieces: list[str] = []
    overlaps: list[Overlap] = []
    at, line_ends = 0, 0  # where the walk is in base; line ends written so far
    for start, _, _, step in steps:
        if start > at:
            pieces.append(base[at:start])
            line_ends += base.count("\n", at, start)
        if isinstance(step, Hunk):
            if start >= at or step.inserts:
                pieces.append(step.text)
                line_ends += step.text.count("\n")
            at = max(at, step.end)
            continue
        region_start, region_end = step
        text = _versions(base, sides, region_start, region_end, order)
        overlaps.append(_overlap(base, region_start, region_end, line_ends + 1, text))
        pieces.append(text)
        line_ends += text.count("\n")
        at = region_end
    pieces.append(base[at:])
    return "".join(pieces), tuple(overlaps)


def _versions(base: str, sides: tuple[list[Hunk], list[Hunk]], start: int, end: int,
              order: tuple[int, int]) -> str:
    """Each side's version of ``base[start:end]``, in ``order``: distinct, non-empty, and each
    but the last ending its line."""
    versions: list[str] = []
    for side in order:
        pieces, at = [], start
        for hunk in sides[side]:
            if _reaches_into(hunk, start, end):
                pieces += [base[at:hunk.start], hunk.text]
                at = hunk.end
        pieces.append(base[at:end])
        version = "".join(pieces)
        if version and version not in versions:
            versions.append(version)
    return "".join(v if v.endswith("\n") or i == len(versions) - 1 else v + "\n"
                   for i, v in enumerate(versions))


def _overlap(base: str, start: int, end: int, line: int, text: str) -> Overlap:
    """Where a region's versions stand (from ``line`` of the merged text) and what they replace."""
    def last(first: int, span: str) -> int:
        return first + span.count("\n") - (1 if span.endswith("\n") else 0) if span else first - 1

    base_first = base.count("\n", 0, start) + 1
    return Overlap(lines=(line, last(line, text)),
                   base_lines=(base_first, last(base_first, base[start:end])))
