"""A shared text as a CRDT document (``pycrdt``, the Python side of Yjs), with its versions.

A :class:`SharedText` is the single source of truth of one text that several members edit: the
editor of a task, or a plan step's description or output. Its document holds one ``Y.Text``
named :data:`ROOT`; a panel in the browser keeps a replica of the same document with Yjs.

Every change is a *version*, named by the seq of the event that made it, with the Yjs update
that made it (and, now and then, the whole document as a checkpoint to fork from). An edit
made on an older version (an agent that thought while the person typed, a panel whose
keystrokes crossed an agent's edit on the wire) is worked out like this:

1. the document is forked at the version the edit was made on, and the edit is made there (a
   whole new text becomes the hunks of :mod:`cogym_lab.core.text_hunks`; a panel's keystrokes
   come as its own Yjs update);
2. the fork's changes are merged into the current document, as any Yjs replica merges;
3. if others changed the text since that version and the two edits *overlap* (see
   :func:`cogym_lab.core.concurrent_edits.merge`), or the CRDT's merge broke a line or a run
   of words that rule keeps (the operations of a side need not be the hunks of its text), the
   result is brought to what that rule makes of them, by a few more operations on the
   document: untouched lines stay whole, both sides' words stay whole, and the lines where the
   edits overlapped are reported. Otherwise the CRDT's merge stands, with no operation added:
   a panel still typing keeps its place.

Either way the text does not depend on which edit arrived first: the rule orders the versions
it keeps by who made them, and Yjs orders two insertions at one place by client id, which puts a
panel's (below 2**32) before an agent's (a fork's, above 2**41) whatever the order they came in.

Nothing is changed until :meth:`SharedText.commit`: the caller first checks that the task takes
the new text. :class:`TextEdit` carries the Yjs update to commit, which is what the event log
records, so a replay applies the same operations and rebuilds the same document (the browser's
replicas then still match it after a restart).

Offsets: Python strings count code points and ``pycrdt`` counts UTF-8 bytes; every position is
converted here, and nothing outside this module sees a byte offset.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from pycrdt import Doc, Text

from cogym_lab.core.concurrent_edits import Overlap, merge
from cogym_lab.core.text_hunks import Hunk, diff
from cogym_lab.errors import CogymError

#: The name of the ``Y.Text`` in every shared text's document (the browser's replica too).
ROOT = "text"
#: The Yjs client of the document itself (what the session writes as a whole): far above the
#: 32-bit ids that Yjs gives browser replicas, so the two never meet.
SESSION_CLIENT = 1 << 40
#: Forks take client ids from here up (one per edit), so their operations never clash.
FORK_CLIENTS = 1 << 41
#: A panel's Yjs client id is below this (Yjs picks a random 32-bit one).
PANEL_CLIENTS = 1 << 32
#: Versions kept to fork from; an edit made on an older one is merged from the oldest kept.
HISTORY = 1024


class TextEditError(CogymError, ValueError):
    """An edit that cannot be applied: a Yjs update that is not one, or that builds on text
    the document does not have."""


@dataclass(eq=False)
class TextVersion:
    """The text as of event ``seq``, and who made it so."""

    seq: int
    author: str | None
    client: int | None  # the panel replica whose update made it (live typing)
    update: bytes  # what made it from the version before
    digest: bytes
    own_update: bytes | None  # that replica's own operations, to fork its later edits from
    #: The session added operations to settle an overlap: the sender had not seen the result.
    repaired: bool = False
    checkpoint: bytes | None = None  # the whole document at this version, if kept


@dataclass(frozen=True)
class TextEdit:
    """An edit worked out against the current document; :meth:`SharedText.commit` applies it."""

    text: str  # the text once committed
    update: bytes  # the Yjs update that commit applies (empty: nothing changes)
    base: int  # the version the edit was made on
    merged: bool = False  # others changed the text since: the text is not the sender's alone
    authors: tuple[str, ...] = ()  # who else changed it since (the sender left out)
    overlaps: tuple[Overlap, ...] = ()  # where the edit overlapped theirs
    repaired: bool = False  # operations were added to settle the overlap
    own_update: bytes | None = None  # a panel's own operations, kept with the version
    client: int | None = None


class SharedText:
    """One shared text: a ``pycrdt`` document and the versions to fork an older edit from."""

    def __init__(self, text: str = "", *, seq: int = 0, history: int = HISTORY) -> None:
        # Deleted text is kept (no garbage collection): an edit made on an older version may
        # insert next to text deleted since, and Yjs drops an insertion next to collected text.
        self.doc: Doc = Doc(client_id=SESSION_CLIENT, skip_gc=True)
        self.doc[ROOT] = self._text = Text()
        self._value = ""
        self._changes = 0
        self._history = history
        self._versions: deque[TextVersion] = deque()
        self._since_checkpoint = 0  # update bytes since the last checkpoint
        self._checkpoint_size = 0
        self._record(seq, None, None, self.doc.get_update(), None)
        if text:
            self.commit(self.replacement(text, seq=seq), seq=seq, author=None)

    # -- reading ------------------------------------------------------------------------------

    @property
    def text(self) -> str:
        return self._value

    @property
    def version(self) -> int:
        """The seq of the last change."""
        return self._versions[-1].seq

    def state(self) -> bytes:
        """The whole document as one Yjs update (what a new replica starts from)."""
        return self.doc.get_update()

    def state_vector(self) -> bytes:
        return self.doc.get_state()

    @property
    def changes(self) -> int:
        """How many changes were committed: a replica told of as many lacks nothing."""
        return self._changes

    def update_since(self, state_vector: bytes | None) -> bytes:
        """What a replica at ``state_vector`` lacks (all of it for ``None``). Every deletion
        goes with it: a state vector counts insertions only."""
        return self.doc.get_update(state_vector) if state_vector is not None else self.state()

    def version_at(self, seq: int | None) -> TextVersion:
        """The text as of event ``seq`` (the latest version for ``None``); before the oldest
        version kept, the oldest."""
        if seq is None:
            return self._versions[-1]
        chosen = self._versions[0]
        for version in reversed(self._versions):
            if version.seq <= seq:
                chosen = version
                break
        return chosen

    def version_of(self, text: str) -> TextVersion | None:
        """The latest version whose text was ``text``, if one is kept."""
        digest = _digest(text)
        return next((v for v in reversed(self._versions) if v.digest == digest), None)

    def text_at(self, version: TextVersion) -> str:
        return str(self._fork(version).get(ROOT, type=Text))

    # -- editing ------------------------------------------------------------------------------

    def replacement(self, new_text: str, *, seq: int, author: str | None = None,
                    base: TextVersion | None = None) -> TextEdit:
        """``author`` replaces the whole text with ``new_text``, having edited the text of
        ``base`` (the current version when ``None``)."""
        latest = self._versions[-1]
        base = base or latest
        if base is latest:  # nothing to merge: the edit is made on the document as it is
            if new_text == self._value:
                return TextEdit(self._value, b"", base.seq)
            scratch = self._copy()
            start = scratch.get_state()
            _apply_hunks(scratch, scratch.get(ROOT, type=Text), self._value,
                         diff(self._value, new_text))
            return TextEdit(new_text, scratch.get_update(start), base.seq)
        fork = self._fork(base, client=self._fork_client(seq))
        fork_text = fork.get(ROOT, type=Text)
        before = str(fork_text)
        if before == new_text:  # this side changed nothing: the text stays as it is
            return TextEdit(self._value, b"", base.seq)
        start = fork.get_state()
        _apply_hunks(fork, fork_text, before, diff(before, new_text))
        return self._settle(base, author, None, before, new_text, fork.get_update(start))

    def live_update(self, update: bytes, *, client: int, author: str,
                    base: TextVersion | None = None) -> TextEdit:
        """A panel replica's operations (its Yjs update), made on ``base`` plus the updates the
        same replica sent since. Raises :class:`TextEditError` for an update that is not one
        of that replica's, or that builds on text the document does not have."""
        if not 0 <= client < PANEL_CLIENTS:
            raise TextEditError(f"A panel's Yjs client id is below 2**32, not {client}.")
        base = base or self._versions[-1]
        own = [v.own_update for v in self._since(base) if v.client == client and v.own_update]
        fork = self._fork(base, updates=own)
        before = str(fork.get(ROOT, type=Text))
        _integrate(fork, update, client)
        after = str(fork.get(ROOT, type=Text))
        edit = self._settle(base, author, client, before, after, update)
        return replace(edit, own_update=update, client=client)

    def commit(self, edit: TextEdit, *, seq: int, author: str | None) -> bytes:
        """Apply ``edit`` as the version of event ``seq``; the update applied (for the log)."""
        if edit.update:
            self.doc.apply_update(edit.update)
            self._value = str(self._text)
            self._changes += 1
            self._record(seq, author, edit.client, edit.update, edit.own_update, edit.repaired)
        return edit.update

    def follow(self, new_text: str, *, seq: int, author: str | None = None) -> bytes:
        """The document takes ``new_text`` as it stands now (the task changed its text some
        other way); the update applied, empty when nothing changed."""
        if new_text == self._value:
            return b""
        return self.commit(self.replacement(new_text, seq=seq), seq=seq, author=author)

    def apply_logged(self, update: bytes, *, seq: int, author: str | None,
                     client: int | None = None, own_update: bytes | None = None,
                     repaired: bool = False) -> None:
        """Replay: apply an update the event log recorded for event ``seq``."""
        self.commit(TextEdit("", update, seq, client=client, own_update=own_update,
                             repaired=repaired), seq=seq, author=author)

    # -- inside -------------------------------------------------------------------------------

    def _settle(self, base: TextVersion, author: str | None, client: int | None, before: str,
                intended: str, incoming: bytes) -> TextEdit:
        """Merge ``incoming`` (the operations that made ``before`` into ``intended`` on a fork
        at ``base``) into a copy of the current document; where it overlapped what others
        changed since, bring the result to the rule of
        :func:`~cogym_lab.core.concurrent_edits.merge`. A panel's own earlier versions are not
        others' changes, unless the session settled an overlap in them (it has not seen that)."""
        others = [v for v in self._since(base)
                  if client is None or v.client != client or v.repaired]
        scratch = self._copy()
        start = scratch.get_state()
        scratch.apply_update(incoming)
        text = scratch.get(ROOT, type=Text)
        result = str(text)
        if not others:
            return TextEdit(result, scratch.get_update(start), base.seq)
        versions_first = _author_key(author) <= min(_author_key(v.author) for v in others)
        # Yjs puts a panel's insertion (the lowest client ids) before others at one place.
        merged = merge(before, self._value, intended, ours_first=not versions_first,
                       ours_insert_first=client is None)
        repaired = merged.text != result and (bool(merged.overlaps) or not merged.keeps(result))
        if repaired:
            _apply_hunks(scratch, text, result, diff(result, merged.text))
            result = merged.text
        authors = tuple(dict.fromkeys(v.author or "the task" for v in others
                                      if v.author != author))
        return TextEdit(result, scratch.get_update(start), base.seq, merged=True,
                        authors=authors, overlaps=merged.overlaps, repaired=repaired)

    def _since(self, version: TextVersion) -> list[TextVersion]:
        """The versions after ``version`` (all kept ones if it is no longer kept)."""
        kept = list(self._versions)
        at = next((i for i, v in enumerate(kept) if v is version), -1)
        return kept[at + 1:]

    def _copy(self) -> Doc:
        """A copy of the current document that writes as the session's own client."""
        copy: Doc = Doc(client_id=SESSION_CLIENT, skip_gc=True)
        copy.apply_update(self.doc.get_update())
        return copy

    def _fork_client(self, seq: int) -> int:
        """A Yjs client id for a fork made at event ``seq`` that no operation has used yet
        (reusing one would make Yjs take new operations for ones it has)."""
        used = _state_vector(self.doc.get_state())
        client = FORK_CLIENTS + max(0, seq) * 64
        while client in used:
            client += 1
        return client

    def _fork(self, version: TextVersion, *, client: int | None = None,
              updates: Iterable[bytes] = ()) -> Doc:
        """A document at ``version`` (then ``updates``), writing as Yjs client ``client``: the
        last checkpoint at or before it, and the versions' updates from there."""
        kept = list(self._versions)
        at = next(i for i, v in enumerate(kept) if v is version)
        start = next(i for i in range(at, -1, -1) if kept[i].checkpoint is not None)
        fork: Doc = Doc(client_id=client, skip_gc=True)
        fork.apply_update(kept[start].checkpoint or b"")
        for later in kept[start + 1:at + 1]:
            fork.apply_update(later.update)
        for update in updates:
            fork.apply_update(update)
        return fork

    def _record(self, seq: int, author: str | None, client: int | None, update: bytes,
                own_update: bytes | None, repaired: bool = False) -> None:
        """Keep the version just committed. A checkpoint is taken once the updates since the
        last one are as large as the document (a fork then costs at most about two whole
        documents); the oldest versions are let go, the new oldest one given a checkpoint."""
        self._since_checkpoint += len(update)
        checkpoint = None
        if not self._versions or self._since_checkpoint >= self._checkpoint_size:
            checkpoint, self._since_checkpoint = self.doc.get_update(), 0
            self._checkpoint_size = len(checkpoint)
        self._versions.append(TextVersion(seq, author, client, update, _digest(self._value),
                                          own_update, repaired, checkpoint))
        if len(self._versions) > self._history:
            oldest = self._versions[1]
            if oldest.checkpoint is None:
                oldest.checkpoint = self._fork(oldest).get_update()
            self._versions.popleft()


def _author_key(author: str | None) -> tuple[int, str]:
    """Who comes first where two versions of the same lines are kept: members by role, the
    task's own changes last."""
    return (1, "") if author is None else (0, author)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _apply_hunks(doc: Doc, text: Text, before: str, hunks: Sequence[Hunk]) -> None:
    """Make ``hunks`` (character spans of ``before``, the text's value) on ``text`` in one
    transaction, converting to the UTF-8 offsets ``pycrdt`` counts in."""
    spans = []
    chars, octets = 0, 0
    for hunk in hunks:
        octets += _octets(before[chars:hunk.start])
        start = octets
        octets += _octets(before[hunk.start:hunk.end])
        chars = hunk.end
        spans.append((start, octets, hunk.text))
    with doc.transaction():
        for start, end, new in reversed(spans):  # from the end: earlier offsets stay right
            if end > start:
                del text[start:end]
            if new:
                text.insert(start, new)


def _octets(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _integrate(doc: Doc, update: bytes, client: int) -> None:
    """Apply panel ``client``'s update to ``doc``, a fork holding what that panel had. Refuse
    what is not an update, what holds other replicas' operations or changes more than the
    text, and operations that build on ones the session never got (they would wait, unseen)."""
    had = _state_vector(doc.get_state())
    try:
        doc.apply_update(update)  # a fork: what a refused update did to it is thrown away
    except Exception as error:  # noqa: BLE001 - pycrdt raises its own kinds for bad bytes
        raise TextEditError(f"Not a Yjs update: {error}") from None
    first = _first_items(update)
    if first is not None:
        if first[0] != client:
            raise TextEditError("The update holds operations of other replicas than the "
                                "panel's own.")
        if first[1] > had.get(client, 0):
            raise TextEditError("The update builds on text the session does not have: the "
                                "panel must sync first.")
    now = _state_vector(doc.get_state())
    if any(clock != had.get(other, 0) for other, clock in now.items() if other != client):
        raise TextEditError("The update holds operations of other replicas than the panel's "
                            "own.")
    if set(doc.keys()) - {ROOT}:
        raise TextEditError("A shared text's update may change its text only.")


def _first_items(update: bytes) -> tuple[int, int] | None:
    """The client and first clock of the items an update adds (``None``: it only deletes),
    read from its header; more than one client's items is refused."""
    numbers = _var_uints(update)
    try:
        clients = next(numbers)
        if clients == 0:
            return None
        if clients > 1:
            raise TextEditError("The update holds operations of other replicas than the "
                                "panel's own.")
        next(numbers)  # how many structs
        return next(numbers), next(numbers)
    except StopIteration:
        raise TextEditError("Not a Yjs update: it ends early.") from None


def _state_vector(encoded: bytes) -> dict[int, int]:
    """A Yjs state vector (client -> clock), from its encoding (lib0 variable-length ints)."""
    numbers = _var_uints(encoded)
    count = next(numbers, 0)
    vector = {}
    for _ in range(count):
        client = next(numbers, None)
        clock = next(numbers, None)
        if client is None or clock is None:
            raise TextEditError("A state vector that ends early.")
        vector[client] = clock
    return vector


def _var_uints(data: bytes) -> Iterator[int]:
    value, shift = 0, 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
            continue
        yield value
        value, shift = 0, 0
    if shift:
        raise TextEditError("A variable-length number that ends early.")
