"""Wire formats: what travels on the bus and what the event log holds."""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cogym_lab.core.actions import ActionSpec
from cogym_lab.core.observation import Component, Observation
from cogym_lab.core.progress import Progress

MemberKind = Literal["agent", "user", "person"]


class TeamMember(BaseModel):
    """A team member: an LM agent, a simulated user, or a real person."""

    model_config = ConfigDict(frozen=True)

    role: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    kind: MemberKind = "agent"

    @property
    def is_human(self) -> bool:
        """People and simulated users play the human side of the team."""
        return self.kind != "agent"


class EventType(StrEnum):
    START = "start"
    ACTION = "action"  # a task action that succeeded
    MESSAGE = "message"
    WAIT = "wait"
    ERROR = "error"  # refused: bad syntax, unknown action, bad role, not allowed now
    CONFIRM_REQUEST = "confirm_request"
    CONFIRM_ACCEPT = "confirm_accept"
    CONFIRM_REJECT = "confirm_reject"
    PAUSE = "pause"
    RESUME = "resume"
    FINISH = "finish"
    TICK = "tick"  # inactivity past the threshold
    CLOCK = "clock"  # one tick of a clocked env's world (CoEnv.advance)
    #: A person's live edit of a shared text (a Yjs update from their panel): logged, told to
    #: the people at once, and to the others once the typing pauses (an ACTION with
    #: ``info["live"]``, see ``Coordinator.announce_edits``).
    EDIT = "edit"
    END = "end"
    SYNC = "sync"  # a member asked for the current state; never logged


#: How much of a logged action (or of a text in its ``info``) an update repeats: what the action
#: changed travels in the update's components, so a long text need not travel twice.
SENT_TEXT_CHARS = 2000


#: The event ``info`` key holding the operations an event made on the shared texts' documents
#: (``{component: base64 Yjs update}``): for replay. Updates do not carry it: a person's seat
#: gets the same news in ``Update.texts``, and other members need none.
TEXT_UPDATES = "text_updates"


def _shortened(text: str) -> str:
    return text[:SENT_TEXT_CHARS - 1] + "…"


class Event(BaseModel):
    """One line of ``events.jsonl``. Small on purpose: never a copy of the chat or the views."""

    seq: int
    time: float
    type: EventType
    actor: str | None = None
    action: str | None = None  # canonical form when it parsed; the raw text otherwise
    status: Literal["ok", "error"] = "ok"
    error: str | None = None
    private: bool = False
    recipients: list[str] = Field(default_factory=list)
    reward: float | None = None
    info: dict[str, Any] = Field(default_factory=dict)
    request_id: str | None = None  # the StepRequest that caused it, so its sender sees the ack

    def as_sent(self) -> Event:
        """This event as updates carry it: an action, and texts in ``info``, longer than
        :data:`SENT_TEXT_CHARS` are shortened (the log keeps them whole), and
        ``info["action_chars"]`` gives the full action's length."""
        long_action = self.action is not None and len(self.action) > SENT_TEXT_CHARS
        long_info = [key for key, value in self.info.items()
                     if isinstance(value, str) and len(value) > SENT_TEXT_CHARS]
        if not long_action and not long_info and TEXT_UPDATES not in self.info:
            return self
        info = {**{key: value for key, value in self.info.items() if key != TEXT_UPDATES},
                **{key: _shortened(self.info[key]) for key in long_info}}
        update: dict[str, Any] = {"info": info}
        if long_action and self.action is not None:
            update["action"] = _shortened(self.action)
            info["action_chars"] = len(self.action)
        return self.model_copy(update=update)

    def records(self, action: str) -> bool:
        """Whether this event, as logged or as sent, records ``action``."""
        if self.action is None:
            return False
        full = self.info.get("action_chars")
        if isinstance(full, int) and len(self.action) < full:  # shortened on the way
            return len(action) == full and action.startswith(self.action[:-1])
        return self.action == action


class TextSelection(BaseModel):
    """Text a member selected in a shared component and sent a message about (Cocoa §4.1.1:
    invoking the agent on highlighted text, with the whole document as its context).

    ``start`` and ``end`` are offsets in the component's text as it stood when the message was
    sent, counted in code points (Python's string indices), ``end`` after the last one."""

    model_config = ConfigDict(frozen=True)

    component: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1)
    start: int = Field(ge=0)
    end: int = Field(ge=0)

    @model_validator(mode="after")
    def _in_order(self) -> TextSelection:
        if self.end < self.start:
            raise ValueError("a selection's end comes after its start")
        return self


class ChatMessage(BaseModel):
    seq: int  # the event that sent it
    time: float
    sender: str
    text: str
    to: str | None = None  # None: everyone
    #: The text the sender selected and asks about, if the message was sent on a selection.
    selection: TextSelection | None = None

    def visible_to(self, role: str) -> bool:
        return self.to is None or role in (self.to, self.sender)


class Confirmation(BaseModel):
    """An action waiting for a teammate's approval."""

    request_id: str
    requester: str
    pending_action: str  # canonical
    seq: int
    time: float


class SessionContext(BaseModel):
    """What a member needs to start: the task and the actions it may take."""

    session_id: str
    task: str
    task_description: str
    role: str
    kind: MemberKind
    # Every member for an agent or a simulated user; for a person, the members who are not
    # people and the person itself (a session may seat thousands of people).
    team: list[TeamMember]
    action_specs: list[ActionSpec]  # the task's actions
    collaboration_specs: list[ActionSpec]  # the collaboration acts open to this member
    step_limit: int | None = None
    results_dir: str | None = None  # this member's results folder, filled in by its node


class Turn(BaseModel):
    """Whose turn it is, in a session with strict turn-taking (``interaction = "turns"``,
    :mod:`cogym_lab.core.turns`): each logged event's ``info["turn"]`` and each update's
    ``turn`` say it as it stands after the event. ``None`` in the default interaction."""

    role: str  # the member in turn: the only one that may act
    number: int  # turns so far, the first being 1
    #: The member's act started slow work (a draft, a cell) whose result is not in yet: nobody
    #: may act, and the turn passes once the result is applied.
    busy: bool = False


class SessionMoment(BaseModel):
    """What a notification and an update both say: the event, for whom, and the small parts
    of the shared state that are sent whole every time."""

    session_id: str
    seq: int  # the session-wide event number
    prev_seq: int | None  # the seq of the previous one sent to this recipient
    recipient: str
    event: Event  # as logged, but a person is not sent the other people among its recipients
    pending_confirmations: list[Confirmation]
    # The recipient's own count and limit, and those of every member who is not a person
    # (agents and simulated users): never the whole table of a team with many people seats.
    step_counts: dict[str, int]
    step_limits: dict[str, int]
    paused: list[str]
    started_at: float
    time: float
    done: bool = False
    end_reason: str | None = None
    context: SessionContext | None = None  # with a whole update (first, START, END, sync, RESUME)
    #: Under strict turn-taking, whose turn it is after this event; a member acts on its
    #: notification only when it is its own and not ``busy``. ``None`` otherwise.
    turn: Turn | None = None


class Notification(SessionMoment):
    """What a member acts on: one event and the member's whole current state after it.

    Members never receive this over the bus: the env sends :class:`Update` frames, which carry
    only what changed, and the member's :class:`~cogym_lab.core.member_copy.MemberCopy` keeps
    the whole state and hands the member this.
    """

    view: Observation
    chat: list[ChatMessage]
    new_messages: list[ChatMessage]  # messages to this recipient since its previous notification
    merged_events: list[Event] = Field(default_factory=list)  # filled by AgentNode when merging


class Update(SessionMoment):
    """What the env sends a member on ``{session}/{role}/obs``: one event and what it changed.

    A member keeps its own copy of its view and chat (``MemberCopy``) and applies each update
    to it, so an update's size does not grow with the chat or with the parts of the view that
    did not change. ``docs/notifications.md`` describes the format.

    * ``whole``: ``components`` is the whole view and ``messages`` the whole chat the member
      may see; the receiver replaces its copy. Sent with the first update a member gets, at the
      start and the end, on a join or a sync, to an agent a RESUME wakes, and to a watcher.
    * Otherwise ``components`` holds the components that changed (or appeared) since the
      member's previous update, and ``messages`` the messages it may see that were sent since
      then (its own included).
    * ``versions`` names every component of the view, in display order, with the ``seq`` of the
      event at which it last changed for this member. A component left out of ``components``
      must be in the receiver's copy at exactly that version, and ``prev_seq`` must be the last
      ``seq`` it received; otherwise it missed an update and asks for a sync.
    """

    whole: bool
    components: list[Component]
    versions: dict[str, int]
    messages: list[ChatMessage]
    #: For a person's seat only: per shared text (a component an action replaces, see
    #: ``core.shared_text``), the base64 Yjs update that brings the seat's replica of its
    #: document up to date (the whole document with a ``whole`` update). The component's
    #: ``content`` still carries the text itself.
    texts: dict[str, str] | None = None


#: What a step request asks: to act, to join the session, or for the current state; or what
#: it tells: that the member's own LM failed past its retries (a member in another process,
#: whose LM the session cannot watch itself).
StepKind = Literal["action", "join", "sync", "lm_failed"]


class StepRequest(BaseModel):
    """What a member sends on ``{session}/step``."""

    role: str
    kind: StepKind = "action"
    action: str | dict[str, Any] | None = None
    id: str = Field(default_factory=lambda: uuid.uuid4().hex)  # lets the env drop duplicates
    # Where a whole-text replacement started from, so edits made meanwhile are merged, not lost:
    base: str | None = None  # the text the sender edited (a person's editor)
    seen_seq: int | None = None  # the notification the sender acted on (an agent)
    #: With ``kind="lm_failed"``: the failure (``LMFailure`` as JSON). It comes on the step
    #: channel, not the status channel, so it is read before any step the member sent after it.
    failure: dict[str, Any] | None = None


def step_channel(session_id: str) -> str:
    return f"{session_id}/step"


def obs_channel(session_id: str, role: str) -> str:
    return f"{session_id}/{role}/obs"


def resyncs(channel: str) -> bool:
    """Whether ``channel``'s readers need none of its history: a member's notification
    channel. Its readers subscribe from the newest message and are sent the whole state when
    they join, and one that misses notifications sees a gap in their ``seq`` and asks for the
    whole state again (a sync); so a bus may keep only its last few messages."""
    return channel.endswith("/obs")


AgentState = Literal["thinking", "acting", "waiting", "paused", "failed", "finished"]
WaitingFor = Literal["teammate", "tick"]


class AgentStatus(BaseModel):
    """What an agent is doing, published on ``status_channel`` for the people's panels."""

    role: str
    status: AgentState
    #: When waiting: for a teammate's answer (it asked them to go on), or for the next
    #: notification or idle tick (it chose to do nothing yet).
    waiting_for: WaitingFor | None = None
    last_action: str | None = None
    ts: float


class SetupStatus(BaseModel):
    """How far the session's set-up (the env's ``prepare``: building an index, loading data)
    got, on ``status_channel`` beside the agents' statuses; ``setup`` is ``None`` once it is
    over. The panels show it as a progress bar with the time left."""

    setup: Progress | None
    #: Why the set-up failed, in words for the person (the session stops there).
    error: str | None = None
    ts: float


def status_channel(session_id: str) -> str:
    """Where agent nodes publish :class:`AgentStatus` updates, and the session its
    :class:`SetupStatus` (one channel per session)."""
    return f"{session_id}/status"
