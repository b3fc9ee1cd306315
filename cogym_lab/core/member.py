"""The member contract: what a team member is, and what its factory is given.

A *member* is any object with ``start(context)``, ``async act(notification) -> action | None``
and ``end(final)``: an LM agent, a simulated user, a rule-based script. A person is a member too,
who acts from a panel instead of through such an object.

A member may also have ``set_waker(wake)``: its node then gives it ``wake``, a callable that has
``act`` called again on the current state, for background work (an LM writing something) that
has an action to send when no notification would come.

A *member type* is how a team file names one (``type = "collaborative"``). It is registered
once, with its kind, and builds the member from a :class:`MemberSetup`:

* the role the member plays;
* the env's public description (what every member may know of the task);
* its LM, when the type uses one;
* for a simulated user (kind ``"user"``), the hidden information of the task.

Nothing else: a member never gets the env itself, so it cannot read what the task hides.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from cogym_lab.core.actions import Action, ActionSpec
from cogym_lab.errors import CogymError

if TYPE_CHECKING:
    from pathlib import Path

    from cogym_lab.bus import Bus
    from cogym_lab.core.env import CoEnv
    from cogym_lab.core.messages import Notification, SessionContext
    from cogym_lab.lm import LM

#: The kinds a member type may have; a person (``"person"``) joins from a panel, not a type.
MemberTypeKind = Literal["agent", "user"]
ActionLike = str | dict[str, Any] | Action


@runtime_checkable
class Member(Protocol):
    """What every team member implements. ``act`` returns an action, or ``None`` to wait."""

    def start(self, context: SessionContext) -> Any: ...

    async def act(self, notification: Notification) -> ActionLike | None: ...

    def end(self, final: Notification) -> Any: ...


@runtime_checkable
class SeatDriver(Protocol):
    """A teammate that holds its seat itself rather than through a member node: an outside
    agent that the session launches (an ACP agent, a program that is an MCP client).

    The session starts ``drive`` beside the env, before the session starts, so that it can join
    as a member node would; it follows the seat on ``bus`` and acts as ``role`` until the
    session ends, when the session cancels it (after ``end_grace`` seconds, if the teammate
    has that attribute, else 5, for the agent to wind down). It writes its own record under
    ``results_dir/role``.

    ``drive`` ending before the session does is the agent leaving: returning means it stopped
    of its own accord (the session then ends at once, end reason ``the outside agent left``,
    graded and counted as the team's doing); raising means it failed (it crashed, exited with
    an error, or could not start: :class:`SeatDriverFailed` says why in plain words), which the
    session records as that member's failure, as it does an LM failing past its retries: it
    ends for ``lm_failed`` (``SessionConfig.on_lm_failure``), and reports count it as an agent
    failure (``outcome_class``), not as a session the team played out."""

    async def drive(self, bus: Bus, session_id: str, role: str,
                    results_dir: Path | None) -> None: ...


class SeatDriverFailed(CogymError):
    """An outside agent failed before its session ended. ``reason`` says how in plain words
    ("its program exited with code 1"); ``detail`` is for logs (the last lines it printed);
    ``agent`` names it ("mcp-client: claude")."""

    def __init__(self, reason: str, *, detail: str = "", agent: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail
        self.agent = agent


@dataclass(frozen=True)
class TaskDescription:
    """The public description of a task: what every member may know of it."""

    name: str
    description: str
    action_specs: tuple[ActionSpec, ...]

    @classmethod
    def of(cls, env: CoEnv) -> TaskDescription:
        return cls(name=env.name, description=env.task_description,
                   action_specs=tuple(env.action_specs()))


@dataclass(frozen=True)
class MemberSetup:
    """What a member factory is given."""

    role: str
    task: TaskDescription
    lm: LM | None = None  # the member's LM, when its type uses one
    hidden_information: str | None = None  # given to simulated users only
    options: Mapping[str, Any] = field(default_factory=dict)  # the team file's options table


@dataclass(frozen=True)
class MemberType:
    """A member type that team files may name: its name, its kind, and its factory.

    Register one with an entry point in the ``cogym_lab.members`` group that names a
    ``MemberType`` object, or with ``cogym_lab.members.register_member``.
    """

    name: str
    kind: MemberTypeKind
    build: Callable[[MemberSetup], Member | SeatDriver]
    uses_lm: bool = True
    summary: str = ""
    #: It takes a ``traits`` option (a simulated user's: :mod:`cogym_lab.users.traits`); a
    #: team file giving traits to a type that does not is an error.
    takes_traits: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ("agent", "user"):
            raise ValueError(f"Member type {self.name!r} must be of kind 'agent' or 'user', not "
                             f"{self.kind!r} (a person joins from a panel).")


def lm_builder(member_class: Callable[..., Member]) -> Callable[[MemberSetup], Member]:
    """A member type's ``build`` for an LM member: ``member_class(setup.lm, **options)``, the
    team file's options as keyword arguments."""

    def build(setup: MemberSetup) -> Member:
        assert setup.lm is not None  # the registry gives every LM type its LM
        return member_class(setup.lm, **setup.options)

    return build


def lm_agent_type(name: str, member_class: Callable[..., Member], summary: str) -> MemberType:
    """An agent member type built with its own LM (:func:`lm_builder`)."""
    return MemberType(name=name, kind="agent", build=lm_builder(member_class), summary=summary)


__all__ = ["ActionLike", "Member", "MemberSetup", "MemberType", "MemberTypeKind",
           "SeatDriver", "SeatDriverFailed", "TaskDescription", "lm_agent_type", "lm_builder"]
