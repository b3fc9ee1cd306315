"""Session: wires a team and an env onto a bus, runs it to the end and writes its results."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from cogym_lab._version import __version__
from cogym_lab.bus import Bus, MemoryBus
from cogym_lab.core import CoEnv
from cogym_lab.core.blocking import lm_clients_closed_after
from cogym_lab.core.coordinator import Coordinator, default_step_limits
from cogym_lab.core.env import ScoreReport
from cogym_lab.core.member import Member, SeatDriver, SeatDriverFailed
from cogym_lab.core.messages import (
    Event,
    MemberKind,
    SetupStatus,
    TeamMember,
    obs_channel,
    status_channel,
    step_channel,
)
from cogym_lab.core.outcome_class import LM_FAILED, OutcomeClass, outcome_class
from cogym_lab.core.progress import Progress
from cogym_lab.core.protocol import ScoringProtocol, get_protocol
from cogym_lab.core.settlements import settled_channel
from cogym_lab.core.turns import NOTIFICATIONS, check_interaction
from cogym_lab.datasets import DataSample, DatasetError, data_dir
from cogym_lab.envs.task_data import DataSource, missing_data_message
from cogym_lab.lm import LM, LMError
from cogym_lab.lm.failures import FailingSide, LMFailure
from cogym_lab.nodes.env_node import LOG_FAILED, EnvNode, EventObserver
from cogym_lab.nodes.grading import Grading, GradingStatus, grade, is_delivered
from cogym_lab.nodes.leakage import LeakageGuard, LeakageReport
from cogym_lab.nodes.member_node import AgentNode, MemberNode, UserNode
from cogym_lab.nodes.restore import Restored, restore
from cogym_lab.nodes.results import ResultsWriter

#: The end reason of a session whose outside agent (a :class:`SeatDriver`) stopped of its own
#: accord before the end; the same as ``cogym-lab mcp``'s when its client goes away.
OUTSIDE_AGENT_LEFT = "the outside agent left"
#: What an LM failing past its retries does to a session (``SessionConfig.on_lm_failure``).
LM_FAILURE_POLICIES = ("auto", "end", "continue")

if TYPE_CHECKING:
    from pydantic import BaseModel

    from cogym_lab.teams.config import TeamConfig


@dataclass
class SessionConfig:
    """Limits and timing. ``step_limits`` overrides the per-role defaults: agents get
    ``agent_step_limit``; simulated users get ``user_step_limit``, or the scoring protocol's
    limit when it is ``None``; people are never limited.

    ``channel_ttl``: seconds the bus keeps a session's channels after it ended (its steps, every
    member's notifications with their private views, the agents' statuses), so that a panel
    opened late still finds the end; then they are deleted (on Redis, an expiry on each stream).
    ``None`` keeps them. An interrupted session keeps its channels: it may be resumed.

    ``interaction``: ``"notifications"`` (Co-Gym's protocol, the default) or ``"turns"``, strict
    turn-taking (the paper's §5.3 ablation, :mod:`cogym_lab.core.turns`).

    ``announce_seconds``: how long a person's live typing in a shared text must pause before
    the agents are told of it (they are not woken at every keystroke).

    ``on_lm_failure``: what a member's (or a task tool's) LM failing past its retries and
    deadline does. ``"end"``: the session ends at once, for ``lm_failed``, naming the member and
    the failure (``session.json``'s ``failure``; reports count it apart). ``"continue"``: the
    agent tells its teammates in the chat and waits (a simulated user does nothing that turn);
    the failure is still recorded (``lm_failures``). ``"auto"``, the default: ``"continue"``
    when a person is in the team (who can read the agent's message and decide), else
    ``"end"``."""

    idle_seconds: float = 60.0
    max_idle_ticks: int = 3
    max_events: int = 2000
    agent_step_limit: int = 30
    user_step_limit: int | None = None
    step_limits: dict[str, int] | None = None
    join_timeout: float = 30.0
    timeout: float | None = None  # wall-clock limit for the whole session
    seed: int | None = None
    channel_ttl: float | None = 3600.0
    interaction: str = NOTIFICATIONS
    announce_seconds: float = 1.5
    on_lm_failure: str = "auto"

    def __post_init__(self) -> None:
        self.interaction = check_interaction(self.interaction)  # a typo in a team file fails
        if self.on_lm_failure not in LM_FAILURE_POLICIES:
            raise ValueError(f"on_lm_failure is one of {', '.join(LM_FAILURE_POLICIES)}; got "
                             f"{self.on_lm_failure!r}")

    def limits_for(self, team: Iterable[TeamMember],
                   protocol: ScoringProtocol | str | None = None) -> dict[str, int]:
        team = list(team)
        limits = default_step_limits(team, self.agent_step_limit)
        user_limit = self.user_step_limit if self.user_step_limit is not None \
            else get_protocol(protocol).simulated_user_step_limit
        if user_limit is not None:
            limits |= {member.role: user_limit for member in team if member.kind == "user"}
        return limits | (self.step_limits or {})


class SessionResult(BaseModel):
    session_id: str
    task: str
    end_reason: str | None
    delivered: bool
    outcome: Any
    scores: dict[str, float]
    step_counts: dict[str, int]
    events: int
    duration: float
    results_dir: str | None
    #: The scores explained in plain words by the task (``CoEnv.explain_scores``).
    score_reports: list[ScoreReport] = Field(default_factory=list)
    #: Why there are no scores, in plain words for the person (``None`` when there are some).
    grading_note: str | None = None
    #: The error of a grader that failed, as raised: for the record, not for the panel's text.
    grading_error: str | None = None
    #: The LM failure that ended the session (``end_reason`` ``lm_failed``) or cost its grade (a
    #: judge's), named by member and kind; ``None`` when no LM failed past its retries.
    failure: LMFailure | None = None
    #: Whether the session counts (``completed``) or ended for a cause outside the team
    #: (:mod:`cogym_lab.core.outcome_class`).
    outcome_class: OutcomeClass = "completed"


def _kind_of(role: str, member: Any, kinds: Mapping[str, MemberKind]) -> MemberKind:
    """A member's kind, as ``kinds`` or the member's own ``kind`` attribute says; a seat with
    no object is a person's. Missing or contradictory kinds are errors: a simulated user taken
    for an agent would be given an agent's limits and the agent's place in every metric."""
    given, declared = kinds.get(role), getattr(member, "kind", None)
    if given is not None and declared is not None and given != declared:
        raise ValueError(f"Member {role!r} is said to be {given!r} but declares itself "
                         f"{declared!r}.")
    kind = given or declared or ("person" if member is None else None)
    if kind is None:
        raise ValueError(f"Say what member {role!r} is: pass kinds={{{role!r}: 'agent'}} (or "
                         "'user' for a simulated user), or give its class a kind attribute. "
                         "Team files get kinds from their member types.")
    return kind


def new_session_id() -> str:
    """A new, unique session id: readable (its start time) and random enough that ids made in
    the same second by many processes never meet (48 random bits; a bus also refuses an id that
    has history, :meth:`Bus.claim_session`)."""
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:12]


def build_coordinator(env: CoEnv, team: list[TeamMember], session_id: str, config: SessionConfig,
                      task: str | None = None) -> Coordinator:
    protocol = get_protocol(env.protocol)
    # A clocked game ends on its clock, and its players act many times a second: only the
    # limits a session asks for apply.
    limits = dict(config.step_limits or {}) if env.tick_seconds is not None \
        else config.limits_for(team, protocol)
    return Coordinator(env, team, session_id=session_id, task=task or env.name,
                       step_limits=limits,
                       max_idle_ticks=config.max_idle_ticks, max_events=config.max_events,
                       every_act_is_a_step=protocol.every_act_is_a_step,
                       interaction=config.interaction)


log = logging.getLogger(__name__)

_NODE_FOR_KIND: dict[str, type[MemberNode]] = {"agent": AgentNode, "user": UserNode}


class Session:
    """One collaboration session.

    ``members`` maps each role to its teammate object. A teammate's ``kind`` attribute
    (``"agent"``, ``"user"`` or ``"person"``) says which side it plays; the default is agent. A
    role mapped to ``None`` is a seat for someone who joins through the bus (a person in a widget);
    give its kind in ``kinds``.
    """

    def __init__(self, env: CoEnv, members: Mapping[str, Member | None], *,
                 kinds: Mapping[str, MemberKind] | None = None, bus: Bus | None = None,
                 results_dir: str | Path | None = None, session_id: str | None = None,
                 config: SessionConfig | None = None, task: str | None = None,
                 observers: Iterable[EventObserver] = ()) -> None:
        self.env = env
        self.task = task or env.name
        self.members = dict(members)
        self.team = [TeamMember(role=role, kind=_kind_of(role, teammate, dict(kinds or {})))
                     for role, teammate in self.members.items()]
        self.bus = bus
        self.session_id = session_id or new_session_id()
        self.results_dir = Path(results_dir) if results_dir else None
        self.config = config or SessionConfig()
        self.observers = list(observers)
        self.coordinator = build_coordinator(env, self.team, self.session_id, self.config,
                                             self.task)
        self.env_node: EnvNode | None = None
        self.leakage = LeakageGuard(env.hidden_strings(),
                                    agents={m.role for m in self.team if not m.is_human},
                                    humans={m.role for m in self.team if m.is_human})
        self._watch_agent_prompts()
        self.restored: Restored | None = None
        self._prepared = False  # the env's set-up (``prepare``) has run
        self.interrupted: str | None = None  # why the session stopped without ending
        #: What ``build_session`` set: the spec this session was built from (``session.json``
        #: stores it), the LMs its members and tools use, and the roles given a setup guide.
        self.spec: Any = None
        self.lms: dict[str, LM] = {}
        self.guided: list[str] = []
        #: Which data the task reads, as ``build_session`` found it: ``"full"``, ``"sample"``
        #: (the small sample that comes with the package; ``data_sample`` is it) or ``None``
        #: (the task reads no dataset). ``session.json`` records it as ``data``.
        self.data_source: DataSource | None = None
        self.data_sample: DataSample | None = None
        #: The team file ``build_session`` built the members from (``None``: members given in
        #: code), for the record of what the session was made with.
        self.team_config: TeamConfig | None = None
        #: What the session was made with (``session.json``'s ``provenance``): worked out by
        #: ``provenance_of`` (set by the layer that knows versions, teams and data, see
        #: ``cogym_lab.sessions.provenance``) when ``run`` starts writing results.
        self.provenance: BaseModel | None = None
        self.provenance_of: Callable[[Session], BaseModel | None] | None = None
        #: What the layer running the session adds to ``session.json``, so that it costs no
        #: write of its own: ``record_fields`` in the first write (a batch session's place in
        #: its batch), ``closing_fields()`` in the last (the batch runner's LM usage). The
        #: session's own fields win where both name one.
        self.record_fields: dict[str, Any] = {}
        self.closing_fields: Callable[[], dict[str, Any]] | None = None
        #: Every LM call of a member or task tool that failed past its retries while the
        #: session ran, and the one that ended it or cost its grade (``failure``).
        self.lm_failures: list[LMFailure] = []
        self.failure: LMFailure | None = None
        self._failure_watches: list[tuple[LM, Callable[[LMError], None]]] = []

    def restore(self, events: Iterable[Event]) -> Restored:
        """Rebuild the state an earlier run's log ends in, so that ``run`` carries on from it:
        members get the current state, and new events continue the log's sequence numbers."""
        events = list(events)
        self.restored = restore(self.coordinator, events)
        for event in events:  # what the human side wrote before the interruption counts too
            self.leakage.watch_event(event)
        return self.restored

    async def prepare(self, bus: Bus | None = None) -> None:
        """Run the env's slow set-up (:meth:`CoEnv.prepare`) once, in a worker thread, so the
        event loop keeps serving every other session meanwhile; with a ``bus``, the panels are
        told how far it got (:class:`SetupStatus` on the status channel, then one saying it is
        over)."""
        if type(self.env).prepare is CoEnv.prepare:  # nothing to prepare: no thread hop
            self._prepared = True
        if self._prepared:
            return
        loop = asyncio.get_running_loop()
        reported = False

        async def publish(status: SetupStatus) -> None:
            if bus is None:
                return
            try:
                await bus.publish(status_channel(self.session_id), status.model_dump(mode="json"))
            except Exception:  # a lost progress report never stops the set-up
                log.warning("could not publish the set-up progress", exc_info=True)

        def report(progress: Progress) -> None:  # called in the worker thread
            nonlocal reported
            reported = True
            status = SetupStatus(setup=progress, ts=time.time())  # stamped here: panels keep
            asyncio.run_coroutine_threadsafe(publish(status), loop)  # the latest by its time

        try:
            await asyncio.to_thread(self.env.prepare, report)
        except Exception as error:  # the panels say why instead of showing a bar that stopped
            await publish(SetupStatus(setup=None, ts=time.time(),
                                      error=f"The session could not be set up: "
                                            f"{self._setup_failure(error)}"))
            raise
        self._prepared = True
        if reported:  # over: the panels take the bar away
            await publish(SetupStatus(setup=None, ts=time.time()))

    def _setup_failure(self, error: Exception) -> str:
        """Why the set-up failed, with advice that works where the session was started from:
        missing data from a notebook names ``%cogym config data_dir=…``, not a command-line
        option (the spec that ``build_session`` set says where it came from)."""
        origin = getattr(self.spec, "origin", None)
        if not isinstance(error, DatasetError) or origin != "notebook":
            return str(error)
        folder = data_dir(getattr(self.spec, "data_dir", None))
        return missing_data_message(self.task, folder, str(error), where="notebook")

    async def interrupt(self, reason: str = "interrupted") -> None:
        """Stop ``run`` without ending the session: no END is logged, no grading is done, and
        ``session.json`` says ``interrupted``, so the session can be restored and resumed."""
        self.interrupted = self.interrupted or reason
        if self.env_node is not None:
            await self.env_node.stop(reason, end=False)

    async def run(self) -> SessionResult:
        """Run the session to its end (or its interruption) and return what it produced."""
        bus = self.bus or MemoryBus()
        await bus.connect()
        # Before anything is published: a reused id must fail here, not replay an old run's
        # steps (its members' notification channels are written by this session alone).
        await bus.claim_session(self.session_id, [obs_channel(self.session_id, member.role)
                                                  for member in self.team],
                                resume=self.restored is not None)
        await self.prepare(bus)
        resumed = self.restored is not None and self.restored.events > 0
        writer = ResultsWriter(self.results_dir, keep=resumed) if self.results_dir else None
        started = time.time()
        if writer and self.provenance_of is not None:  # hashes data files: off the event loop
            self.provenance = await asyncio.to_thread(self.provenance_of, self)
        if writer:
            writer.add_to_next_write(self.record_fields)
        if writer and resumed:
            started = writer.session.get("started_at", started)
            writer.write_session(**self.describe(), status="running",
                                 resumed_at=[*writer.session.get("resumed_at", []), time.time()])
        elif writer:
            writer.write_session(**self.describe(), started_at=started, status="running")
        self.env_node = EnvNode(
            bus, self.coordinator, idle_seconds=self.config.idle_seconds,
            join_timeout=self.config.join_timeout, seed=self.config.seed,
            recorders=[writer.append_event] if writer else [],
            observers=[self.leakage.watch_event, *self.observers],
            watchers=[self.leakage.watch_update] if self.leakage.active else [],
            restored=self.restored if resumed else None,
            announce_after=self.config.announce_seconds,
        )
        self.env_node.on_member_lm_failure = self._on_reported_lm_failure
        if self.interrupted:  # interrupted before it could start
            await self.env_node.stop(self.interrupted, end=False)
        member_tasks = [asyncio.create_task(self._hold_seat(bus, member, teammate))
                        for member, teammate in zip(self.team, self.members.values(), strict=True)
                        if teammate is not None]
        env_task = asyncio.create_task(self.env_node.run())
        self._watch_lm_failures()
        try:
            done, _ = await asyncio.wait({env_task}, timeout=self.config.timeout)
            if not done:
                await self.env_node.stop("timeout")
            await env_task
        finally:
            self._unwatch_lm_failures()  # grading's judge failures are the grading's to say
            if not env_task.done():  # run() itself was cancelled
                await self.env_node.stop("cancelled")
                await asyncio.wait({env_task}, timeout=5)
            # Members got the END notification; give them a moment to close, then stop them.
            if member_tasks and not self.interrupted:
                await asyncio.wait(member_tasks, timeout=self._end_grace())
            for task in member_tasks:
                task.cancel()
            await asyncio.gather(*member_tasks, return_exceptions=True)
            if not self.interrupted:
                await self._expire_channels(bus)
            if self.bus is None:
                await bus.close()
        if self.interrupted:
            return await self._close_interrupted(writer, started)
        if self.env_node.log_failure:
            return await self._close_log_failed(writer, started)
        result, grading = await self._graded_result(started)
        await self._release()
        if writer:
            self._add_closing_fields(writer)
            writer.write_session(status="finished", ended_at=time.time(),
                                 **result.model_dump(exclude={"results_dir", "task",
                                                              "session_id"}),
                                 lm_failures=[f.model_dump(mode="json")
                                              for f in self.lm_failures],
                                 leakage=self.leakage_report().model_dump(mode="json"),
                                 final_state=self.coordinator.snapshot())
            writer.close()
        await self._publish_grading(grading)
        return result

    def _hold_seat(self, bus: Bus, member: TeamMember, teammate: Any
                   ) -> Coroutine[Any, Any, Any]:
        """What holds ``member``'s seat: the teammate itself when it drives its seat (an
        outside agent the session launches), else a member node of its kind."""
        if isinstance(teammate, SeatDriver):
            return self._drive(bus, member, teammate)
        node = _NODE_FOR_KIND.get(member.kind, UserNode)(
            bus, self.session_id, member.role, teammate, results_dir=self.results_dir)
        return node.run()

    async def _drive(self, bus: Bus, member: TeamMember, driver: SeatDriver) -> None:
        """Run ``driver`` on its seat; if it ends before the session does, the session hears of
        it: a driver that returns left (the session ends), one that raises failed (recorded as
        the member's failure; see :class:`SeatDriver`)."""
        try:
            await driver.drive(bus, self.session_id, member.role, self.results_dir)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - any failure of the agent is its failure
            if self._running():
                self._record_lm_failure(_driver_failure(member, driver, error))
            else:  # the session had ended: the agent's trouble winding down costs nothing
                log.info("session %s: the outside agent %s stopped after the end: %s",
                         self.session_id, member.role, error)
            return
        if self._running() and self.env_node is not None:
            log.warning("session %s: the outside agent %s left before the end",
                        self.session_id, member.role)
            self.env_node.request_stop(OUTSIDE_AGENT_LEFT, {"left": member.role})

    def _running(self) -> bool:
        """Whether the session is under way: started, not ended, not stopping."""
        return self.env_node is not None and not self.coordinator.done \
            and not self.interrupted and self.failure is None

    def _end_grace(self) -> float:
        """How long members get after the END to close before they are stopped: 5 s, or more
        for an outside agent that asks for it (its program winding down, writing its usage)."""
        graces = [getattr(teammate, "end_grace", 0.0) for teammate in self.members.values()
                  if isinstance(teammate, SeatDriver)]
        return max([5.0, *(g for g in graces if isinstance(g, int | float))])

    async def _close_log_failed(self, writer: ResultsWriter | None,
                                started: float) -> SessionResult:
        """The log could not be written: the session stopped there. Nothing is graded (the
        outcome holds an event the log lacks, so no replay could check it), and ``session.json``
        says why, if the disk still takes that much."""
        assert self.env_node is not None
        result = self.result(time.time() - started, {}).model_copy(
            update={"delivered": False, "end_reason": LOG_FAILED,
                    "outcome_class": "infrastructure"})
        await self._release()
        if writer:
            try:
                self._add_closing_fields(writer)
                writer.write_session(status="failed", error=self.env_node.log_failure,
                                     end_reason=LOG_FAILED, ended_at=time.time(), delivered=False,
                                     outcome_class="infrastructure",
                                     logged_events=self.env_node.last_logged_seq,
                                     events=self.coordinator.seq)
            except OSError as error:
                log.error("session %s: session.json could not say why it stopped (%s): %s",
                          self.session_id, self.env_node.log_failure, error)
            writer.close()
        return result

    async def _release(self) -> None:
        """Close the env (a kernel, say) and the LM clients the session was built with: their
        connection pools would otherwise stay open until garbage collection. An LM used again
        afterwards opens a new client."""
        await self.env.aclose()
        for role, lm in self.lms.items():
            try:
                await lm.aclose()
            except Exception:  # a client that will not close must not cost the results
                log.exception("session %s: the LM of %s could not be closed", self.session_id,
                              role)

    async def _expire_channels(self, bus: Bus) -> None:
        """Let the bus delete this session's channels ``channel_ttl`` seconds from now."""
        if self.config.channel_ttl is None:
            return
        try:
            await bus.expire(self.channels(), self.config.channel_ttl)
        except Exception:  # a lost transport must not cost the results
            log.exception("session %s: its bus channels could not be given an expiry",
                          self.session_id)

    def channels(self) -> list[str]:
        """Every bus channel of this session: steps and their settlements, each member's
        notifications, statuses."""
        return [step_channel(self.session_id), settled_channel(self.session_id),
                status_channel(self.session_id),
                *(obs_channel(self.session_id, member.role) for member in self.team)]

    async def _close_interrupted(self, writer: ResultsWriter | None,
                                 started: float) -> SessionResult:
        result = self.result(time.time() - started, {})
        await self._release()
        if writer:
            self._add_closing_fields(writer)
            writer.write_session(status="interrupted", interrupted_at=time.time(),
                                 interrupt_reason=self.interrupted, events=self.coordinator.seq)
            writer.close()
        return result

    def _add_closing_fields(self, writer: ResultsWriter) -> None:
        """``closing_fields()`` into the last write of ``session.json`` (whose own fields win
        where both name one); a failing hook costs its fields, not the session's record."""
        if self.closing_fields is None:
            return
        try:
            writer.add_to_next_write(dict(self.closing_fields()))
        except Exception:  # the runner's record must not cost the session's own
            log.exception("session %s: the fields to close session.json with could not be "
                          "worked out", self.session_id)

    def leakage_report(self) -> LeakageReport:
        """Which hidden strings reached an agent other than through the human side so far."""
        return self.leakage.report()

    def _watch_agent_prompts(self) -> None:
        """Give the leakage guard every prompt of an in-process agent's LM."""
        if not self.leakage.active:
            return
        for role, teammate in self.members.items():
            lm = getattr(teammate, "lm", None)
            if role in self.leakage.agents and isinstance(lm, LM):
                lm.prompt_watchers.append(functools.partial(self._watch_prompt, role))

    def _watch_prompt(self, role: str, messages: Any, purpose: str = "") -> None:
        self.leakage.watch_prompt(role, messages, purpose)

    # -- LM failures -------------------------------------------------------------------------

    def _watch_lm_failures(self) -> None:
        """Hear of every member's and task tool's LM call that fails past its retries."""
        kinds = {member.role: member.kind for member in self.team}
        watched: list[tuple[LM, str, FailingSide]] = []
        for role, teammate in self.members.items():
            lm = getattr(teammate, "lm", None)
            if isinstance(lm, LM):
                watched.append((lm, role, "user" if kinds.get(role) == "user" else "agent"))
        for slot, value in list(vars(self.env).items()):
            if slot.endswith("_lm") and isinstance(value, LM):
                watched.append((value, slot.removesuffix("_lm"), "tool"))
        for lm, member, side in watched:
            watcher = functools.partial(self._on_lm_failure, member, side)
            lm.failure_watchers.append(watcher)
            self._failure_watches.append((lm, watcher))

    def _unwatch_lm_failures(self) -> None:
        for lm, watcher in self._failure_watches:
            with contextlib.suppress(ValueError):
                lm.failure_watchers.remove(watcher)
        self._failure_watches.clear()

    def ends_on_lm_failure(self) -> bool:
        """Whether an LM failure ends this session (``SessionConfig.on_lm_failure``)."""
        policy = self.config.on_lm_failure
        if policy == "auto":
            return not any(member.kind == "person" for member in self.team)
        return policy == "end"

    def _on_lm_failure(self, member: str, side: FailingSide, error: LMError) -> None:
        """Record ``member``'s LM failure; end the session for it when the policy says so
        (called inside the failing call, before the member hears of it: nothing the member
        does about it afterwards is applied)."""
        self._record_lm_failure(error.failure(member, side))

    def _on_reported_lm_failure(self, role: str, reported: dict[str, Any]) -> None:
        """A member in another process (``cogym-lab node agent|user``) reported that its LM
        failed past its retries: the same as a local member's failure. Only for a member this
        process does not hold: a local member's LM is watched directly, once, and an outside
        agent it launched (a ``SeatDriver``) fails by raising ``SeatDriverFailed``."""
        if role not in self.members or self.members[role] is not None:
            return
        kinds = {member.role: member.kind for member in self.team}
        side: FailingSide = "user" if kinds.get(role) == "user" else "agent"
        try:  # the member is named by the step's role, whatever the report claims
            failure = LMFailure.model_validate({**reported, "member": role, "side": side})
        except ValueError:
            log.warning("session %s: ignoring a malformed LM failure report from %s",
                        self.session_id, role)
            return
        self._record_lm_failure(failure)

    def _record_lm_failure(self, failure: LMFailure) -> None:
        """Record ``failure``; end the session for it when the policy says so."""
        member = failure.member
        self.lm_failures.append(failure)
        log.warning("session %s: %s", self.session_id, failure.describe())
        # A member that plays on without its LM (the kitchen's agents fall back to their
        # rule-based half and try the LM again later) is not stopped by one failed call.
        recovers = getattr(self.members.get(member), "recovers_from_lm_failure", False)
        if self.failure is not None or self.env_node is None or recovers \
                or not self.ends_on_lm_failure():
            return
        if self.coordinator.done:
            return  # it ended already (a member's last call, say)
        self.failure = failure
        self.env_node.request_stop(LM_FAILED, {"failure": failure.model_dump(mode="json")})

    def run_sync(self) -> SessionResult:
        """``run`` for scripts and the CLI, outside an event loop. The loop is this call's own,
        so the LM clients still open on it when the session ends are closed before it ends:
        members' LMs made in a script have no other loop to close them on."""
        return asyncio.run(lm_clients_closed_after(self.run()))

    async def _graded_result(self, started: float) -> tuple[SessionResult, Grading]:
        """The result of a session that ended, graded (:func:`grade`)."""
        grading = await grade(self.env, self.coordinator.end_reason, self.session_id)
        if self.failure is not None:  # it ended for an LM failure: say that, not "not graded"
            grading = grading.model_copy(update={"failure": self.failure,
                                                 "note": _ended_by_failure(self.failure)})
        else:
            self.failure = grading.failure  # a judge that failed: the result has no grade
        result = self.result(time.time() - started, grading.scores,
                             reports=grading.score_reports, note=grading.note,
                             error=grading.error)
        return result, grading

    async def _publish_grading(self, grading: Grading) -> None:
        """Tell the panels the graded end (:class:`GradingStatus` on the status channel). Only
        on a bus someone else gave: a bus of the session's own has no panel on it, and is
        closed by now."""
        if self.bus is None:
            return
        status = GradingStatus(grading=grading, ts=time.time())
        try:
            await self.bus.publish(status_channel(self.session_id), status.model_dump(mode="json"))
        except Exception:  # a lost report never costs the results, which session.json has
            log.warning("session %s: could not publish its scores", self.session_id,
                        exc_info=True)

    def result(self, duration: float, scores: dict[str, float], *,
               reports: list[ScoreReport] | None = None, note: str | None = None,
               error: str | None = None) -> SessionResult:
        outcome = self.env.outcome()
        failure = self.failure
        end_reason = self.coordinator.end_reason
        return SessionResult(
            session_id=self.session_id, task=self.task, end_reason=self.coordinator.end_reason,
            delivered=is_delivered(self.env, self.coordinator.end_reason), outcome=outcome,
            scores=scores,
            step_counts=dict(self.coordinator.step_counts), events=self.coordinator.seq,
            duration=duration, results_dir=str(self.results_dir) if self.results_dir else None,
            score_reports=list(reports or []), grading_note=note, grading_error=error,
            failure=failure,
            outcome_class=outcome_class({"failure": failure.model_dump() if failure else None,
                                         "end_reason": end_reason}),
        )

    def describe(self) -> dict[str, Any]:
        """The static part of ``session.json``: enough to rebuild the session for replay."""
        return {
            "session_id": self.session_id,
            "task": self.task,
            "env_args": self.env.env_args(),
            "team": [member.model_dump() for member in self.team],
            "protocol": self.env.protocol,
            "interaction": self.config.interaction,
            "config": asdict(self.config) | {"step_limits": self.coordinator.step_limits},
            "cogym_lab_version": __version__,
            **({"spec": self.spec.stored()} if self.spec is not None else {}),
            **({"data": self.data_source} if self.data_source is not None else {}),
            **({"provenance": self.provenance.model_dump(mode="json")}
               if self.provenance is not None else {}),
        }


def _driver_failure(member: TeamMember, driver: Any, error: Exception) -> LMFailure:
    """An outside agent's failure as the member's failure (an LM failure of kind ``failed``):
    the session ends on it and reports count it as the agent's, like an LM that failed."""
    agent = getattr(driver, "model", None) or getattr(error, "agent", None) \
        or getattr(driver, "teammate", None)
    if isinstance(error, SeatDriverFailed):
        reason, detail = error.reason, error.detail
    else:
        reason, detail = f"the outside agent's driver failed: {type(error).__name__}", \
            str(error)
    side: FailingSide = "user" if member.kind == "user" else "agent"
    return LMFailure(member=member.role, side=side, kind="failed", reason=reason,
                     detail=detail[-2000:], model=str(agent) if agent else None,
                     purpose="outside agent")


def _ended_by_failure(failure: LMFailure) -> str:
    """The panel's note for a session an LM failure ended: whose LM, how, and what it means."""
    return (f"Not counted: {failure.plain()}, so the session ended there. The result is saved, "
            f"but it says nothing about the team: reports count this session apart and leave "
            f"it out of delivery and performance.")
