"""EnvNode: reads ``{session}/step``, runs the coordinator, writes ``{session}/{role}/obs``."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import ValidationError

from cogym_lab.bus import Bus, Subscription
from cogym_lab.core import Deferred
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import (
    Event,
    EventType,
    StepRequest,
    Update,
    obs_channel,
    step_channel,
)
from cogym_lab.core.settlements import (
    INTERRUPTED,
    Settlement,
    StepsClosed,
    ended_before,
    settled_channel,
)
from cogym_lab.core.transition import Transition
from cogym_lab.nodes.restore import Restored

log = logging.getLogger(__name__)
EventObserver = Callable[[Event], Any]
UpdateWatcher = Callable[[Update], None]

#: The end reason of a session whose event log could not be written.
LOG_FAILED = "log_failed"


class _RecentIds:
    """The last ``size`` request ids, for dropping re-deliveries: a set to look them up (a
    deque alone costs a scan of thousands per request, every seat's join included)."""

    def __init__(self, size: int) -> None:
        self._order: deque[str] = deque()
        self._ids: set[str] = set()
        self._size = size

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._ids

    def add(self, request_id: str) -> None:
        if request_id in self._ids:
            return
        self._order.append(request_id)
        self._ids.add(request_id)
        if len(self._order) > self._size:
            self._ids.discard(self._order.popleft())


class TickClock:
    """The schedule of a clocked env's ticks, and how well it was kept: the lag of every tick
    (how late it fired, in seconds) for the benchmarks, never for tests."""

    #: Lags kept for the figures; a long game keeps its latest ticks.
    KEPT = 100_000

    def __init__(self, period: float, *, catch_up: float = 1.0) -> None:
        self.period = period
        self.catch_up = catch_up  # further behind than this: start the schedule afresh
        self.next_at = time.monotonic() + period
        self.fired_ticks = 0
        self.dropped = 0
        self.lags: deque[float] = deque(maxlen=self.KEPT)

    def until_due(self) -> float:
        return max(0.0, self.next_at - time.monotonic())

    def due(self) -> bool:
        return time.monotonic() >= self.next_at

    def fired(self) -> None:
        now = time.monotonic()
        lag = now - self.next_at
        self.lags.append(lag)
        self.fired_ticks += 1
        self.next_at += self.period
        if lag > self.catch_up:  # a stall: drop the backlog rather than burst through it
            behind = int((now - self.next_at) // self.period) + 1
            self.dropped += max(0, behind)
            self.next_at = now + self.period


class EnvNode:
    """Hosts one session's env on a bus.

    It waits (up to ``join_timeout``) until every member has joined, starts the session, then
    applies each step in arrival order. When nothing arrives for ``idle_seconds`` it fires a tick.
    Every event goes to the ``recorders`` (the event log), then to the ``observers`` (a
    transcript printer, the leakage guard), before its notifications are published, so the log
    is never behind what the members have seen. An observer that fails costs nothing but its own
    work. A recorder that fails stops the session at once: an applied event must never go
    unlogged, so the event is not published, the session ends with reason ``log_failed`` (its
    END reaches the members but is not logged either, so the log stays a replayable prefix), and
    :attr:`log_failure` says why.

    Every action request it reads is settled on ``{session}/settled``
    (:mod:`cogym_lab.core.settlements`): applied, once its event is logged and published, or
    refused, with the reason, when the session is over, stopping, or its log failed. At its end
    it refuses the actions still queued and says it reads no more (:class:`StepsClosed`).

    ``watchers`` see every update just before it is published (the leakage guard).

    ``restored`` (from :func:`cogym_lab.nodes.restore.restore`) carries on a session whose
    coordinator was rebuilt from its log: instead of starting, every member gets the current
    state, and deferred work the log left unfinished runs again.

    A person's live typing in a shared text reaches the other people as it comes; the members
    who are not people are told once the typing pauses for ``announce_after`` seconds
    (:meth:`Coordinator.announce_edits`), not at every keystroke.
    """

    def __init__(self, bus: Bus, coordinator: Coordinator, *, idle_seconds: float = 60.0,
                 join_timeout: float = 30.0, seed: int | None = None,
                 recorders: Iterable[EventObserver] = (),
                 observers: Iterable[EventObserver] = (),
                 watchers: Iterable[UpdateWatcher] = (),
                 restored: Restored | None = None, announce_after: float = 1.5) -> None:
        self.bus = bus
        self.coordinator = coordinator
        #: Told of a member's LM failure its own node reported (role, ``LMFailure`` as JSON).
        self.on_member_lm_failure: Callable[[str, dict[str, Any]], None] | None = None
        self.idle_seconds = idle_seconds
        self.join_timeout = join_timeout
        self.seed = seed
        self.recorders = list(recorders)
        self.observers = list(observers)
        self.watchers = list(watchers)
        self.joined: set[str] = set()
        self.started = asyncio.Event()
        self.log_failure: str | None = None  # why the event log could not be written
        self.log_error: BaseException | None = None  # the error that said so (a full disk?)
        self.last_logged_seq = 0  # the last event every recorder took
        self._seen_ids = _RecentIds(4096)
        self._stop_reason: str | None = None
        self._stop_info: dict[str, Any] = {}  # the END's info when a stop ends the session
        self._closing: set[asyncio.Task[None]] = set()  # request_stop's closes under way
        self._subscription: Subscription | None = None
        self._deferred: set[asyncio.Task[None]] = set()
        self.restored = restored
        self.clock: TickClock | None = None  # a clocked env's schedule, once it runs
        self.announce_after = announce_after
        self._announce_at: float | None = None  # when typing news is due (monotonic)
        self._end_on_stop = True
        self._ending: dict[str, Any] | None = None  # the END's info, once it was logged
        #: Its last word on the settled channel, once it reads no more steps.
        self.closed: StepsClosed | None = None
        #: Answers the bus would not take (request id -> answer): whoever waits for them reads
        #: them here when the session's run is over (an applied action is never refused).
        self.unsent: dict[str, Settlement] = {}
        if restored is not None:  # a transport may deliver the old steps again: skip them
            for request_id in restored.request_ids:
                self._seen_ids.add(request_id)
            self.last_logged_seq = coordinator.seq

    @property
    def session_id(self) -> str:
        return self.coordinator.session_id

    async def run(self) -> None:
        """Run the session to its end."""
        self._subscription = subscription = await self.bus.subscribe(
            step_channel(self.session_id), from_beginning=True)
        early: list[StepRequest] = []
        try:
            deadline = time.monotonic() + self.join_timeout
            waiting = set(self.coordinator.members)  # not recomputed per join: seats may be many
            while not self._stop_reason and waiting:
                message = await subscription.get(max(0.0, deadline - time.monotonic()))
                if message is None:
                    break
                request = self._accept(message)
                if request and request.kind == "join":
                    self.joined.add(request.role)
                    waiting.discard(request.role)
                elif request:
                    early.append(request)
            missing = sorted(waiting)
            if missing and not self._stop_reason:  # a few names: there may be thousands
                log.warning("session %s starts without %d member(s): %s%s", self.session_id,
                            len(missing), ", ".join(missing[:10]),
                            ", ..." if len(missing) > 10 else "")
            if self.restored is None:
                await self._deliver(self.coordinator.start(time.time(), seed=self.seed))
            else:
                await self._resume(self.restored)
            self.started.set()
            self._follow_observed_steps()
            for request in early:
                await self._on_request(request)
            await self._loop(subscription)
            if self._stop_reason and self._end_on_stop and not self.log_failure:
                await self._deliver(self.coordinator.end(time.time(), self._stop_reason,
                                                         **self._stop_info))
        finally:
            for task in self._deferred:  # the session is over: its slow work is moot
                task.cancel()
            await asyncio.gather(*self._deferred, return_exceptions=True)
            await self._close_steps(subscription, failed=sys.exc_info()[1] is not None)
            await subscription.close()

    async def stop(self, reason: str = "stopped", *, end: bool = True) -> None:
        """Ask the session to end (a timeout, the user ending it).

        ``run`` then delivers the END to every member and returns; await it. With ``end=False``
        nothing is logged (a server going down): the log stays open, to be resumed.
        """
        if not self._stop_reason:
            self._end_on_stop = end
        self._stop_reason = self._stop_reason or reason
        if self._subscription is not None:
            await self._subscription.close()  # wakes run() wherever it waits

    def request_stop(self, reason: str, info: dict[str, Any] | None = None) -> None:
        """End the session for ``reason`` from code that cannot await (an LM's failure watcher,
        called inside the failing call). The reason holds at once, so no step read after this
        is applied; ``info`` goes into the END event (the failure that ended it)."""
        if self._stop_reason:
            return
        self._end_on_stop = True
        self._stop_reason = reason
        self._stop_info = dict(info or {})
        if self._subscription is not None:  # wake run() wherever it waits
            task = asyncio.get_running_loop().create_task(self._subscription.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def _loop(self, subscription: Any) -> None:
        if self.coordinator.env.tick_seconds is not None:
            await self._clocked_loop(subscription, self.coordinator.env.tick_seconds)
            return
        last_activity = time.monotonic()
        while not self.coordinator.done and not self._stop_reason:
            due = last_activity + self.idle_seconds
            if self._announce_at is not None:
                due = min(due, self._announce_at)
            message = await subscription.get(max(0.0, due - time.monotonic()))
            if self._stop_reason:
                return
            if message is None:
                if await self._announce_if_due():
                    continue
                await self._deliver(self.coordinator.tick(time.time()))
                last_activity = time.monotonic()
                continue
            request = self._accept(message)
            if request is not None:
                if request.kind == "action":
                    last_activity = time.monotonic()  # every step, waits included, keeps it alive
                await self._on_request(request)
            self._consumed(subscription, message)

    async def _clocked_loop(self, subscription: Any, period: float) -> None:
        """A clocked env's loop: the world advances every ``period`` seconds whether or not
        anyone acts, and the steps that arrive in between are applied as they come (a clocked
        env only queues them; they take effect at the next tick).

        Ticks keep to a fixed schedule, so a late tick does not push the later ones back. A
        loop that falls far behind (the machine stalled) starts the schedule afresh instead of
        firing a burst of ticks, and counts the ticks it dropped in :attr:`clock`.
        """
        if self.clock_waits_for_a_person():
            await self._wait_for_a_person(subscription)
        clock = self.clock = TickClock(period)
        while not self.coordinator.done and not self._stop_reason:
            message = await subscription.get(clock.until_due())
            if self._stop_reason:
                return
            if message is not None:
                request = self._accept(message)
                if request is not None:
                    await self._on_request(request)
                self._consumed(subscription, message)
            if clock.due():
                clock.fired()
                await self._deliver(self.coordinator.clock(time.time()))
            await self._announce_if_due()

    def clock_waits_for_a_person(self) -> bool:
        """Whether a clocked env's clock waits for a person's first play (the panel's Start
        button, or any key they play with; not chat or co-planning: ``Coordinator.person_played``):
        a real-time game with a person in it must not run while they find the panel or plan.
        Without a person (agents, simulated users) the clock starts with the session; a game
        that ticked already (a resumed one) goes on at once."""
        return (not self.coordinator.person_played and self.coordinator.clock_ticks == 0
                and any(member.kind == "person" for member in self.coordinator.members.values()))

    async def _wait_for_a_person(self, subscription: Any) -> None:
        """Apply steps as they come, without ticks, until a person plays."""
        while not (self.coordinator.done or self._stop_reason or self.coordinator.person_played):
            wait = None if self._announce_at is None \
                else max(0.0, self._announce_at - time.monotonic())
            message = await subscription.get(wait)
            if self._stop_reason:
                return
            request = self._accept(message) if message is not None else None
            if request is not None:
                await self._on_request(request)
            if message is not None:
                self._consumed(subscription, message)
            await self._announce_if_due()

    async def _announce_if_due(self) -> bool:
        """Tell the members who are not people of the typing that paused; whether it did."""
        if self._announce_at is None or time.monotonic() < self._announce_at:
            return False
        self._announce_at = None
        await self._deliver(self.coordinator.announce_edits(time.time()))
        return True

    def _consumed(self, subscription: Subscription, message: dict[str, Any]) -> None:
        """The step ``message`` is handled and its events are in the log (or it had none to
        log: a join, a sync, a re-delivery): the bus may drop it, and the steps before it, from
        the step channel's history. A resumed session rebuilds them from the log and never
        reads them again; one whose log failed keeps them, as its unlogged steps are there.
        The joins and early steps read before the start were applied by then too."""
        if not self.log_failure:
            subscription.consumed(message)

    def _accept(self, message: dict[str, Any]) -> StepRequest | None:
        try:
            request = StepRequest.model_validate(message)
        except ValidationError as error:
            log.warning("ignoring a malformed step message: %s", error.errors()[:1])
            return None
        if request.id in self._seen_ids:  # a transport re-delivery
            return None
        self._seen_ids.add(request.id)
        return request

    async def _on_request(self, request: StepRequest) -> None:
        if request.kind == "lm_failed":  # a member in another process: its LM failed
            if self.on_member_lm_failure is not None:
                self.on_member_lm_failure(request.role, request.failure or {})
            return
        if self.log_failure:  # stopping: nothing more is applied
            if request.kind == "action":
                await self._settle(self._refusal(request))
            return
        now = time.time()
        if request.kind == "action":
            try:
                transition = self.coordinator.handle(request.role, request.action, now,
                                                     request_id=request.id, base=request.base,
                                                     seen_seq=request.seen_seq)
            except Exception:  # a bug must cost one step, not the session
                log.exception("step from %s failed: %r", request.role, request.action)
                await self._settle(Settlement(
                    request_id=request.id, role=request.role, status="refused",
                    message="This action could not be applied: the server failed on it."))
                return
            await self._deliver(transition, request)
        elif request.role in self.coordinator.members:  # join or sync: send the current state
            self.joined.add(request.role)
            await self._send_state(request.role, now)

    async def _send_state(self, role: str, now: float) -> None:
        update = self.coordinator.sync(role, now)
        if update is not None:
            self._watch([update])
            await self.bus.publish(obs_channel(self.session_id, role), update)

    async def _resume(self, restored: Restored) -> None:
        """Carry on a restored session: everyone gets the current state (with its context, so
        fresh agents can start), and work whose result the log lacks runs again."""
        now = time.time()
        for role in self.coordinator.members:
            await self._send_state(role, now)
        for work in restored.pending:
            self._start_deferred(work.role, work.deferred, work.started_by)

    async def _deliver(self, transition: Transition, request: StepRequest | None = None) -> None:
        """Log, observe and publish ``transition``; with the action ``request`` that made it,
        settle that request too (after the updates, in the same batch)."""
        if self.log_failure:  # the session is stopping: no event goes out unlogged
            if request is not None:
                await self._settle(self._refusal(request))
            return
        # The log first: no member ever sees an event the log lacks.
        for event in transition.events:
            error = await self._record(event)
            if error is not None:
                await self._stop_unlogged(event, error, transition)
                if request is not None:  # applied if its own event made it into the log
                    await self._settle(self._settlement(request, transition))
                return
            if event.type is EventType.END:
                self._ending = event.info
            for observer in self.observers:
                try:
                    result = observer(event)
                    if asyncio.iscoroutine(result):
                        await result
                except Exception:  # an observer's bug must not stop the session
                    log.exception("event observer failed on event %s", event.seq)
        self._watch(transition.updates)
        settlement = None if request is None else self._settlement(request, transition)
        settled = [] if settlement is None else [(settled_channel(self.session_id), settlement)]
        try:
            await self.bus.publish_many([
                *((obs_channel(self.session_id, u.recipient), u) for u in transition.updates),
                *settled])
        except BaseException:
            if settlement is not None:
                self.unsent[settlement.request_id] = settlement
            raise
        if any(event.type is EventType.EDIT for event in transition.events):
            self._announce_at = time.monotonic() + self.announce_after  # after the typing
        for role, deferred in transition.deferred:
            self._start_deferred(role, deferred, transition.events[0])

    def _settlement(self, request: StepRequest, transition: Transition) -> Settlement:
        """What became of ``request``, which made ``transition``: applied when the event that
        records it (the first that names it, else the first) is in the log."""
        event = next((e for e in transition.events if e.request_id == request.id),
                     transition.events[0] if transition.events else None)
        if event is None or event.seq > self.last_logged_seq:
            return self._refusal(request)
        return Settlement(request_id=request.id, role=request.role, status="applied",
                          seq=event.seq, error=event.error if event.status == "error" else None)

    def _refusal(self, request: StepRequest) -> Settlement:
        """``request`` was not applied: the session is over or its log failed."""
        reason, info = self._end_reason()
        return Settlement(request_id=request.id, role=request.role, status="refused",
                          end_reason=reason, message=ended_before(reason, info))

    def _end_reason(self) -> tuple[str | None, dict[str, Any] | None]:
        if self.log_failure:
            return LOG_FAILED, None
        if self.coordinator.end_reason is not None:
            return self.coordinator.end_reason, self._ending
        return self._stop_reason, None

    async def _settle(self, settlement: Settlement) -> None:
        try:
            await self.bus.publish(settled_channel(self.session_id), settlement)
        except Exception:  # its sender reads it in unsent when the session's run is over
            self.unsent[settlement.request_id] = settlement
            log.exception("session %s: could not settle request %s", self.session_id,
                          settlement.request_id)

    async def _close_steps(self, subscription: Subscription, *, failed: bool = False) -> None:
        """The node reads no more steps (``failed``: its run raised): send the answers the bus
        would not take before, refuse the actions still queued, then say so
        (:class:`StepsClosed`), so that whoever waits on a later one refuses it too. An
        interrupted session refuses nothing: its queued steps wait for it to be resumed."""
        try:
            interrupted = (not self._end_on_stop and not self.coordinator.done
                           and not self.log_failure and not failed)
            reason, info = self._end_reason()
            if failed and reason is None:
                reason = "failed"
            closed = self.closed = StepsClosed(
                end_reason=reason, interrupted=interrupted,
                message=INTERRUPTED if interrupted else ended_before(reason, info))
            channel = settled_channel(self.session_id)
            answers = list(self.unsent.values())
            while not interrupted:
                message = await subscription.get(0)
                if message is None:
                    break
                request = self._accept(message)
                if request is not None and request.kind == "action":
                    answers.append(closed.settle(request.id, request.role))
            await self.bus.publish_many([*((channel, answer) for answer in answers),
                                         (channel, closed)])
        except Exception:  # the host refuses what is pending when the run ends, regardless
            log.exception("session %s: could not refuse its last steps", self.session_id)

    async def _record(self, event: Event) -> Exception | None:
        """Give ``event`` to every recorder; the first failure, or ``None``."""
        for recorder in self.recorders:
            try:
                result = recorder(event)
                if asyncio.iscoroutine(result):
                    await result
            except Exception as error:  # noqa: BLE001 - any failure means the event is unlogged
                return error
        self.last_logged_seq = event.seq
        return None

    async def _stop_unlogged(self, event: Event, error: Exception,
                             transition: Transition) -> None:
        """The log could not take ``event``: end the session now, without logging or publishing
        anything more but the END that tells the members to stop."""
        self.log_error = error
        self.log_failure = (f"the event log could not take event {event.seq} "
                            f"({event.type.value}): {type(error).__name__}: {error}")
        log.error("session %s stops: %s", self.session_id, self.log_failure)
        ending = self.coordinator.end(time.time(), LOG_FAILED, unlogged_seq=event.seq)
        # If the unlogged event was itself the END, the members still need to hear of it.
        ends = ending.updates or [u for u in transition.updates if u.event.type is EventType.END]
        try:
            await self.bus.publish_many([
                (obs_channel(self.session_id, u.recipient), u) for u in ends])
        except Exception:  # a transport that fails too must not hide the log failure
            log.exception("session %s: the END after the log failure was not sent",
                          self.session_id)
        if self._subscription is not None:
            await self._subscription.close()  # wakes run() wherever it waits

    def _watch(self, updates: list[Update]) -> None:
        for watcher in self.watchers:
            for update in updates:
                try:
                    watcher(update)
                except Exception:  # a watcher's bug must not stop the session
                    log.exception("update watcher failed on event %s", update.seq)

    def _start_deferred(self, role: str, deferred: Deferred, started_by: Event) -> None:
        task = asyncio.create_task(self._run_deferred(role, deferred, started_by))
        self._deferred.add(task)
        task.add_done_callback(self._deferred.discard)

    def _follow_observed_steps(self) -> None:
        """Record what the env sees members do outside the session (``CoEnv.observed_steps``);
        the task is cancelled with the deferred work when the session ends."""
        steps = self.coordinator.env.observed_steps()
        if steps is None:
            return

        async def follow() -> None:
            async for role, action in steps:
                if self.log_failure:  # stopping: nothing more is applied
                    return
                try:
                    transition = self.coordinator.apply_observed(role, action, time.time())
                except Exception:  # a bug must cost one observation, not the session
                    log.exception("observed step of %s failed: %r", role, action)
                    continue
                await self._deliver(transition)

        task = asyncio.create_task(follow())
        self._deferred.add(task)
        task.add_done_callback(self._deferred.discard)

    async def _run_deferred(self, role: str, deferred: Deferred, started_by: Event) -> None:
        """Await slow work an action started, then apply its result as ``role``'s next step."""
        try:
            follow_up = await deferred.work()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - a failing LM must not end the session
            log.warning("deferred %s for %s failed: %s", deferred.label, role, error)
            if self.log_failure:
                return
            await self._deliver(self.coordinator.deferred_failed(
                role, started_by.action or deferred.label, f"{deferred.label or 'The action'} "
                f"failed: {error}", time.time(), failed=type(error).__name__))
            return
        if self.log_failure:  # stopping: nothing more is applied
            return
        await self._deliver(self.coordinator.apply_follow_up(role, follow_up, time.time(),
                                                             seen_seq=started_by.seq))
