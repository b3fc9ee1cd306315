"""A session's shared texts: one :class:`~cogym_lab.core.shared_text.SharedText` per component
that a task action replaces whole (``@action(replaces="editor")``), kept by the coordinator.

The task keeps its text as a plain string, as any task keeps its state; the document is the
text's history and its merge. Every edit of a shared text is worked out on its document first
(:meth:`SharedTexts.replacement`, :meth:`SharedTexts.live_update`), and the task's own action
then takes the result; a text the task changes some other way (an action that appends a line,
a plan's output written below) is followed by the document (:meth:`SharedTexts.follow`). So
after every event, each document's text is exactly the task's.

Each event records the Yjs updates it made (``info["text_updates"]``, base64), so a replay
applies the same operations and rebuilds the same documents (:meth:`SharedTexts.edit_for`,
:meth:`SharedTexts.live_edit` and :meth:`SharedTexts.follow_event` take the
:class:`~cogym_lab.core.step_context.StepContext` to know where an edit started and whether it
is replayed). Person seats are sent what their panel's replica lacks
(:meth:`SharedTexts.payload`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from typing import Any

from cogym_lab.core.actions import Action, ActionError, ActionSpec
from cogym_lab.core.messages import TEXT_UPDATES
from cogym_lab.core.observation import Observation
from cogym_lab.core.shared_text import SharedText, TextEdit, TextEditError, TextVersion
from cogym_lab.core.transition import StepContext

#: The event ``info`` key holding the updates an event made: ``{component: base64 update}``.
UPDATES = TEXT_UPDATES
#: Within one event, each document's news for a replica state, worked out once for every seat.
TextPayloads = dict[tuple[str, bytes | None], str]


class SharedTexts:
    """The shared texts of one session, by component name."""

    def __init__(self, specs: Iterable[ActionSpec]) -> None:
        #: component -> the action that replaces its whole text
        self.specs: dict[str, ActionSpec] = {spec.replaces: spec for spec in specs
                                             if spec.replaces and not spec.internal}
        self.texts: dict[str, SharedText] = {}
        # (role, component) -> the document's change count and state vector as last sent
        self._sent: dict[tuple[str, str], tuple[int, bytes]] = {}

    def __bool__(self) -> bool:
        return bool(self.specs)

    def spec(self, component: Any) -> ActionSpec:
        """The action that replaces ``component``; :class:`ActionError` if it is no shared
        text."""
        spec = self.specs.get(component) if isinstance(component, str) else None
        if spec is None:
            names = ", ".join(self.specs) or "none"
            raise ActionError(f"{component!r} is not a shared text of this task (shared texts: "
                              f"{names}).")
        return spec

    def text(self, component: str) -> SharedText:
        return self.texts[component]

    # -- where an edit started -------------------------------------------------------------

    def base(self, component: str, *, text: str | None, seen_seq: int | None,
             last_shown: int | None) -> TextVersion:
        """The version an edit of ``component`` was made on: the text as of ``seen_seq`` (the
        update the sender acted on), else the latest version whose text is ``text``, else the
        text of the sender's last update ``last_shown``, else the current text."""
        shared = self.texts[component]
        if seen_seq is not None:
            return shared.version_at(seen_seq)
        if text is not None:
            version = shared.version_of(text)
            if version is not None:
                return version
        return shared.version_at(last_shown)

    def base_for(self, spec: ActionSpec, step: StepContext,
                 last_shown: int | None) -> TextVersion | None:
        """The version of ``spec.replaces`` that the sender of ``step`` edited: what the request
        said (the update it acted on, or the text it started from), else the text of its last
        update ``last_shown``. ``None`` for an action that replaces no shared text."""
        if spec.replaces is None or spec.replaces not in self.texts:
            return None
        return self.base(spec.replaces, text=step.base_text, seen_seq=step.seen_seq,
                         last_shown=last_shown)

    # -- edits -------------------------------------------------------------------------------

    def edit_for(self, action: Action, spec: ActionSpec, step: StepContext, *, seq: int,
                 author: str, base: TextVersion | None) -> tuple[Action, TextEdit] | None:
        """``action``, if it replaces a shared text whole, worked out on its document as event
        ``seq``: the action with the text it makes, and the edit to commit if the task takes
        it. ``None`` for any other action, and on replay (the log holds the merged text)."""
        if spec.replaces is None or step.replaying is not None or spec.replaces not in self.texts:
            return None
        return self.replacement(spec.replaces, action, seq=seq, author=author, base=base)

    def live_edit(self, component: str, args: Mapping[str, Any], step: StepContext, *,
                  seq: int, author: str) -> tuple[str, TextEdit | None]:
        """A panel's live edit (``EDIT_TEXT``'s ``args``) of ``component`` as event ``seq``: the
        text it makes and the edit to commit once the task took it. Replaying, the event's
        logged operations are applied instead (nothing is left to commit).
        :class:`ActionError` for an edit that cannot be applied."""
        shared = self.text(component)
        if step.replaying is not None:  # the logged operations, not a new merge
            logged = step.replaying.info.get(UPDATES, {}).get(component)
            if isinstance(logged, str):
                self.follow_logged(component, logged, seq=seq, author=author,
                                   client=args["client"], own=args["update"],
                                   repaired=step.replaying.info.get("settled") == component)
            return shared.text, None
        if step.seen_seq is None:
            raise ActionError("EDIT_TEXT needs the step's seen_seq: the update whose shared "
                              "texts the edit was made on.")
        base = self.base(component, text=None, seen_seq=step.seen_seq, last_shown=None)
        edit = self.live_update(component, args["update"], client=args["client"],
                                author=author, base=base)
        return edit.text, edit


    def replacement(self, component: str, action: Action, *, seq: int, author: str,
                    base: TextVersion | None) -> tuple[Action, TextEdit] | None:
        """``action`` (which replaces ``component`` whole) worked out on the document: the
        action to apply, with the text it makes, and the edit to commit once the task took it.
        ``None`` when its text is no string (the task refuses it as it stands)."""
        sent = action.args.get("text")
        if not isinstance(sent, str):
            return None
        edit = self.texts[component].replacement(sent, seq=seq, author=author, base=base)
        if edit.text == sent:
            return action, edit
        return action.model_copy(update={"args": {**action.args, "text": edit.text}}), edit

    def commit_edit(self, spec: ActionSpec, edit: TextEdit, *, seq: int, author: str,
                    info: dict[str, Any]) -> None:
        """:meth:`commit` the edit that ``spec``'s action (which replaces a text) made."""
        assert spec.replaces is not None
        self.commit(spec.replaces, edit, seq=seq, author=author, info=info)

    def live_update(self, component: str, encoded: Any, *, client: Any, author: str,
                    base: TextVersion) -> TextEdit:
        """A panel's live edit (its base64 Yjs update) worked out on the document;
        :class:`ActionError` for one that cannot be applied."""
        if not isinstance(client, int) or isinstance(client, bool):
            raise ActionError("EDIT_TEXT needs the replica's Yjs client id (an integer).")
        try:
            return self.texts[component].live_update(decode(encoded), client=client,
                                                      author=author, base=base)
        except TextEditError as error:
            raise ActionError(str(error)) from None

    def commit(self, component: str, edit: TextEdit, *, seq: int, author: str,
               info: dict[str, Any]) -> None:
        """Apply ``edit`` as event ``seq``'s, and say in the event's ``info`` what it did:
        the update (for replay), whose edits were merged in and where they overlapped."""
        update = self.texts[component].commit(edit, seq=seq, author=author)
        if update:
            info.setdefault(UPDATES, {})[component] = encode(update)
        if edit.merged:
            info["merged"] = component
        if edit.repaired:
            info["settled"] = component  # operations were added to settle the overlap
        if edit.overlaps:
            info["overlap"] = {"component": component, "with": list(edit.authors),
                               "lines": [list(overlap.lines) for overlap in edit.overlaps]}

    def follow_logged(self, component: str, encoded: str, *, seq: int, author: str,
                      client: Any, own: Any, repaired: bool) -> None:
        """Replay a live edit: apply its logged update, and keep the replica's own operations
        with the version (a later edit of that replica forks from them)."""
        own_update = decode(own) if isinstance(own, str) else None
        self.texts[component].apply_logged(
            decode(encoded), seq=seq, author=author, own_update=own_update, repaired=repaired,
            client=client if isinstance(client, int) and not isinstance(client, bool) else None)

    def follow(self, view: Observation, *, seq: int, author: str | None,
               info: dict[str, Any], logged: Mapping[str, Any] | None = None) -> None:
        """Bring every document in line with the task's text in ``view`` as of event ``seq``
        (starting the documents at the first call), recording in ``info`` the updates made.
        Replaying, ``logged`` is the event's recorded updates: they are applied first, so the
        documents are rebuilt operation for operation."""
        if logged:
            for component, encoded in logged.items():
                shared = self.texts.get(component)
                if shared is not None and isinstance(encoded, str):
                    shared.apply_logged(decode(encoded), seq=seq, author=author)
        for component in self.specs:
            if component not in view:
                continue
            content = view[component].content
            text = content if isinstance(content, str) else ""
            shared = self.texts.setdefault(component, SharedText())
            update = shared.follow(text, seq=seq, author=author)
            if update:
                info.setdefault(UPDATES, {})[component] = encode(update)

    def follow_event(self, view: Observation, step: StepContext, *, seq: int,
                     author: str | None, info: dict[str, Any]) -> dict[str, Any]:
        """:meth:`follow` for event ``seq`` as it is emitted (replaying it, with its logged
        updates first); ``info`` with the updates made."""
        replayed = step.replayed(seq)
        self.follow(view, seq=seq, author=author, info=info,
                    logged=replayed.info.get(UPDATES) if replayed else None)
        return info

    # -- what a person's panel is sent -----------------------------------------------------

    def payload(self, role: str, *, whole: bool, record: bool = True,
                cache: TextPayloads | None = None) -> dict[str, str] | None:
        """What ``role``'s replicas lack of each document (everything, for a ``whole``
        update), base64; ``None`` when they lack nothing. ``record=False`` for a watcher: what
        the seat itself was sent stays as it was."""
        payload = {}
        for component, shared in self.texts.items():
            sent = None if whole else self._sent.get((role, component))
            if sent is not None and sent[0] == shared.changes:
                continue  # nothing committed since
            known = sent[1] if sent is not None else None
            key = (component, known)
            encoded = cache.get(key) if cache is not None else None
            if encoded is None:
                encoded = encode(shared.update_since(known))
                if cache is not None:
                    cache[key] = encoded
            payload[component] = encoded
            if record:
                self._sent[(role, component)] = (shared.changes, shared.state_vector())
        return payload or None


def encode(update: bytes) -> str:
    return base64.b64encode(update).decode("ascii")


def decode(encoded: Any) -> bytes:
    """A base64 Yjs update; :class:`ActionError` if it is not base64 text."""
    if not isinstance(encoded, str) or not encoded:
        raise ActionError("A live edit's 'update' is a Yjs update in base64.")
    try:
        return base64.b64decode(encoded.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise ActionError("A live edit's 'update' is a Yjs update in base64.") from None


__all__ = ["UPDATES", "SharedTexts", "TextPayloads", "decode", "encode"]
