"""The collaboration acts every task shares, and who may use them."""

from __future__ import annotations

from cogym_lab.core.actions import ActionSpec, ParamSpec
from cogym_lab.core.messages import MemberKind

SEND_TEAMMATE_MESSAGE = ActionSpec(
    name="SEND_TEAMMATE_MESSAGE",
    description="Send a message to your teammates, or to one teammate named in 'to'.",
    params=(
        ParamSpec(name="message", description="What to say."),
        ParamSpec(name="to", required=False, default=None,
                  description="The role of one teammate; leave out to tell everyone."),
        ParamSpec(name="selection", type="object", required=False, default=None,
                  description='Text you selected in a shared component and ask about: '
                              '{"component": "...", "text": "...", "start": 0, "end": 0} '
                              "(offsets in the component's text); leave out otherwise."),
    ),
)
WAIT_TEAMMATE_CONTINUE = ActionSpec(
    name="WAIT_TEAMMATE_CONTINUE",
    description="Do nothing for now and wait for your teammates.",
)
FINISH = ActionSpec(name="FINISH", description="Declare the task done and end the session.")
REQUEST_TEAMMATE_CONFIRM = ActionSpec(
    name="REQUEST_TEAMMATE_CONFIRM",
    description="Ask a teammate to approve a task action before it runs.",
    params=(ParamSpec(name="pending_action", description="The task action, as an action string."),),
)
ACCEPT_CONFIRMATION = ActionSpec(
    name="ACCEPT_CONFIRMATION",
    description="Approve a pending request; its action runs as the requester.",
    params=(ParamSpec(name="request_id", description="The id of the pending request."),),
)
REJECT_CONFIRMATION = ActionSpec(
    name="REJECT_CONFIRMATION",
    description="Refuse a pending request; nothing runs and the requester is told.",
    params=(
        ParamSpec(name="request_id", description="The id of the pending request."),
        ParamSpec(name="reason", required=False, default="", description="Why, for the requester."),
    ),
)
PAUSE_AGENT = ActionSpec(
    name="PAUSE_AGENT",
    description="Pause an agent: it receives nothing and may not act until resumed.",
    params=(ParamSpec(name="agent", required=False, default=None,
                      description="The agent's role; leave out to pause every agent."),),
)
RESUME_AGENT = ActionSpec(
    name="RESUME_AGENT",
    description="Resume a paused agent; it gets the current state and the messages it missed.",
    params=(ParamSpec(name="agent", required=False, default=None,
                      description="The agent's role; leave out to resume every agent."),),
)

EDIT_TEXT = ActionSpec(
    name="EDIT_TEXT",
    description="A person's panel edits a shared text live: its Yjs update, made on the texts of "
                "the update named by the step's seen_seq.",
    params=(
        ParamSpec(name="component", description="The shared text's component."),
        ParamSpec(name="update", description="The replica's own operations: a Yjs update, "
                                             "base64."),
        ParamSpec(name="client", type="integer", description="The replica's Yjs client id."),
    ),
    internal=True,  # the panel's editor sends it; no form or prompt offers it
)

ALL_ACTS: tuple[ActionSpec, ...] = (
    SEND_TEAMMATE_MESSAGE, WAIT_TEAMMATE_CONTINUE, FINISH, REQUEST_TEAMMATE_CONFIRM,
    ACCEPT_CONFIRMATION, REJECT_CONFIRMATION, PAUSE_AGENT, RESUME_AGENT, EDIT_TEXT,
)
_HUMAN_ONLY = {PAUSE_AGENT.name, RESUME_AGENT.name}

#: Acts whose actor is not notified (a wait notifies nobody, a finish ends the session). After
#: any other act, its own messages included, a member hears back about its own step.
NOT_ECHOED: frozenset[str] = frozenset({WAIT_TEAMMATE_CONTINUE.name, FINISH.name})


def collaboration_specs(kind: MemberKind) -> list[ActionSpec]:
    """The acts a member of ``kind`` may take. Only the human side pauses and resumes agents;
    only a person's panel edits a text live."""
    return [spec for spec in ALL_ACTS if (kind != "agent" or spec.name not in _HUMAN_ONLY)
            and (kind == "person" or spec.name != EDIT_TEXT.name)]
