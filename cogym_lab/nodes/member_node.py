"""Member nodes: wrap an agent, a simulated user or any object with ``start``, ``act`` and ``end``.

The env sends only what each event changed; the node keeps the member's copy of its view and
chat (``MemberCopy``), asks for a sync when it missed an update, and hands the member whole
notifications.

The node receives notifications in the background while its member thinks. Whatever arrived in
the meantime is merged into one notification: the newest view, every message not yet seen, and
the list of events it stands for. So nothing is dropped.

After sending an action the node waits (up to ``ack_timeout``) for the notification of that
action before it lets the member act again, so a member never acts on a view that does not yet
show its own last step (which would make it repeat itself).

Under strict turn-taking (``interaction = "turns"``, :mod:`cogym_lab.core.turns`) the
coordinator keeps the rule and the node follows it: every notification says whose turn it is,
and the member is woken only on its own (what arrives otherwise, such as a sync's answer, waits
to be merged into that turn's notification). The node waits for no echo of its step (the next
notification it gets is its next turn), and a member that chooses to do nothing, or fails to
act, passes its turn with ``WAIT_TEAMMATE_CONTINUE``, so the team never stalls on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import time
from collections import deque
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from cogym_lab.bus import Bus
from cogym_lab.core import Action, ActionError, Notification
from cogym_lab.core.actions import ActionSpec
from cogym_lab.core.collaboration import NOT_ECHOED, WAIT_TEAMMATE_CONTINUE
from cogym_lab.core.grammar import parse_action
from cogym_lab.core.member import Member
from cogym_lab.core.member_copy import MemberCopy, OutOfSync
from cogym_lab.core.messages import (
    AgentState,
    AgentStatus,
    EventType,
    MemberKind,
    StepRequest,
    Update,
    WaitingFor,
    obs_channel,
    status_channel,
    step_channel,
)
from cogym_lab.lm import LM, LMError
from cogym_lab.lm.calllog import deciding_on
from cogym_lab.lm.failures import FailingSide

log = logging.getLogger(__name__)

#: Seconds before a member that missed an update asks for a sync again, if none came.
SYNC_RETRY_SECONDS = 5.0


def merge_notifications(batch: list[Notification]) -> Notification:
    """One notification standing for ``batch``: newest state, all unseen messages, all events."""
    if len(batch) == 1:
        return batch[0]
    latest = batch[-1]
    messages = {m.seq: m for n in batch for m in n.new_messages}
    events = [e for n in batch for e in (n.merged_events or [n.event])]
    context = next((n.context for n in batch if n.context is not None), None)
    return latest.model_copy(update={
        "prev_seq": batch[0].prev_seq,
        "new_messages": [messages[seq] for seq in sorted(messages)],
        "merged_events": events,
        "context": context,
    })


def _action_text(action: str | dict[str, Any]) -> str:
    """A short, readable form of a sent action for the status line."""
    text = action if isinstance(action, str) else json.dumps(action, ensure_ascii=False)
    return text if len(text) <= 200 else text[:199] + "…"


def _may_act(notification: Notification, role: str) -> bool:
    """Whether ``role`` acts on ``notification``: always in the default interaction; under
    turn-taking only on its own turn, once the slow work of the act before is in."""
    turn = notification.turn
    return turn is None or (turn.role == role and not turn.busy)


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class MemberNode:
    """Connects one teammate to a session's channels."""

    kind: ClassVar[MemberKind] = "agent"
    publishes_status: ClassVar[bool] = False  # agents tell the people's panels what they do

    def __init__(self, bus: Bus, session_id: str, role: str, teammate: Member, *,
                 results_dir: str | Path | None = None, ack_timeout: float = 10.0,
                 report_lm_failures: bool = False) -> None:
        """``report_lm_failures``: tell the env node when the teammate's LM fails past its
        retries. For a member in a process of its own (``cogym-lab node agent|user``); a session
        that holds the member in its own process watches the LM itself."""
        self.bus = bus
        self.session_id = session_id
        self.role = role
        self.teammate = teammate
        self.results_dir = Path(results_dir) if results_dir else None
        self.final: Notification | None = None
        self.stats = {"notifications": 0, "merged": 0, "acts": 0, "actions_sent": 0,
                      "act_failures": 0, "gaps": 0, "syncs_asked": 0}
        self._inbox: list[Notification] = []
        self._wake = asyncio.Event()
        self._copy = MemberCopy(role)  # the view and chat, kept up to date from updates
        self._gap_asked_at: float | None = None  # when a sync was asked for a missed update
        self._started = False
        self._specs: dict[str, ActionSpec] = {}
        self.ack_timeout = ack_timeout
        self._awaiting: str | None = None  # id of our own step not yet seen in a notification
        # Per sync we asked for, the step it will show: the env answers syncs in order, after
        # every step sent before them, so a sync asked for earlier must not end the wait.
        self._syncs_asked: deque[str | None] = deque()
        self._last_action: str | None = None
        self._unreported: list[LMError] = []  # the teammate's LM failures not yet sent
        self._watched_lm: LM | None = None
        self._act_again = False  # the teammate asked to act again on the current state
        set_waker = getattr(teammate, "set_waker", None)
        if callable(set_waker):
            set_waker(self.act_again)
        lm = getattr(teammate, "lm", None)
        if report_lm_failures and isinstance(lm, LM):
            self._watched_lm = lm

    async def run(self) -> Notification:
        """Join, act on notifications until the session ends, and return the final one."""
        if self._watched_lm is not None:
            self._watched_lm.failure_watchers.append(self._unreported.append)
        try:
            return await self._run()
        finally:
            if self._watched_lm is not None:
                with contextlib.suppress(ValueError):
                    self._watched_lm.failure_watchers.remove(self._unreported.append)

    async def _run(self) -> Notification:
        subscription = await self.bus.subscribe(obs_channel(self.session_id, self.role))
        self.bus.on_reconnect(self.request_sync)
        await self._send(StepRequest(role=self.role, kind="join"))
        receiver = asyncio.create_task(self._receive(subscription))
        try:
            return await self._act_loop()
        finally:
            receiver.cancel()
            await asyncio.gather(receiver, return_exceptions=True)
            await subscription.close()
            self._write_results()

    async def request_sync(self) -> None:
        """Ask the env for the current state (after a reconnect or a detected gap)."""
        self._syncs_asked.append(self._awaiting)
        self.stats["syncs_asked"] += 1
        await self._send(StepRequest(role=self.role, kind="sync"))

    def act_again(self) -> None:
        """The teammate's waker (``Member``'s optional ``set_waker``): its background work has
        something to send, so it is woken with the current state (a sync's answer, no event)
        even when nothing happens in the session."""
        self._act_again = True
        self._wake.set()

    async def _receive(self, subscription: Any) -> None:
        async for message in subscription:
            try:
                update = Update.model_validate(message)
            except ValidationError as error:
                log.warning("%s: ignoring a malformed update: %s", self.role, error)
                continue
            notification = await self._apply(update)
            if notification is None:
                continue
            sync = update.event.type is EventType.SYNC
            shows_our_step = self._syncs_asked.popleft() == self._awaiting \
                if sync and self._syncs_asked else False
            if shows_our_step or update.event.type is EventType.RESUME or \
                    update.event.request_id == self._awaiting:
                self._awaiting = None
            self.stats["notifications"] += 1
            self._inbox.append(notification)
            self._wake.set()

    async def _apply(self, update: Update) -> Notification | None:
        """``update`` applied to the member's copy; ``None`` for one already seen or one that
        cannot apply, for which a sync is asked (again if its answer is long in coming)."""
        try:
            return self._copy.apply(update)
        except OutOfSync as gap:
            now = time.monotonic()
            if self._gap_asked_at is None or now - self._gap_asked_at > SYNC_RETRY_SECONDS:
                log.info("%s: %s; asking for a sync", self.role, gap)
                self.stats["gaps"] += 1
                self._gap_asked_at = now
                await self.request_sync()
            return None
        finally:
            if not self._copy.out_of_sync:
                self._gap_asked_at = None

    async def _act_loop(self) -> Notification:
        while True:
            if not await self._woken():
                continue
            self._wake.clear()
            if self._act_again and self._started:
                self._act_again = False
                await self.request_sync()  # its answer wakes the teammate
            if not self._inbox:
                continue
            if self._awaiting and not any(n.done for n in self._inbox):
                await self._wait_for_ack()
            batch, self._inbox = self._inbox, []
            self.stats["merged"] += len(batch) - 1
            notification = merge_notifications(batch)
            if not self._started and notification.context is not None:
                self._started = True
                context = notification.context
                if self.results_dir is not None:
                    context = context.model_copy(
                        update={"results_dir": str(self.results_dir / self.role)})
                self._specs = {s.name: s for s in (*context.action_specs,
                                                   *context.collaboration_specs)}
                await _maybe_await(self.teammate.start(context))
            if notification.done:
                self.final = notification
                await self._publish_status("finished")
                await _maybe_await(self.teammate.end(notification))
                return notification
            if not self._started:
                await self.request_sync()  # joined late and missed the start: get the context
                continue
            if not _may_act(notification, self.role):  # turn-taking: not this member's turn
                self._inbox.insert(0, notification)  # merged into its turn's notification
                continue
            await self._act(notification)

    async def _act(self, notification: Notification) -> None:
        self.stats["acts"] += 1
        await self._publish_status("thinking")
        turns = notification.turn is not None
        try:
            with deciding_on(notification.seq):  # its LM calls' log lines say what they saw
                action = await self.teammate.act(notification)
        except Exception:  # a member's failure is reported, not fatal to the session
            await self._report_lm_failures()
            self.stats["act_failures"] += 1
            log.exception("%s failed to act on event %s", self.role, notification.seq)
            await self._publish_status("failed")
            if turns:  # it cannot act this turn: the next member may
                await self._pass_turn(notification)
            return
        await self._report_lm_failures()  # before the action: the env reads them first
        failing = getattr(self.teammate, "lm_failing", False) is True  # its LM keeps failing
        if action is None and turns:  # doing nothing passes the turn
            await self._pass_turn(notification)
            await self._publish_status("failed" if failing else "waiting",
                                       waiting_for="teammate")
            return
        if action is None:
            await self._publish_status("failed" if failing else "waiting", waiting_for="tick")
            return
        if isinstance(action, Action):
            action = action.model_dump()
        # seen_seq: an edit of a whole text made on this view is merged with later edits.
        request = StepRequest(role=self.role, action=action, seen_seq=notification.seq)
        name = self._action_name(action)
        # A bad action comes back as an error. Under turn-taking the next notification is the
        # member's next turn (or that error): nothing to wait for.
        if (name is None or name not in NOT_ECHOED) and not turns:
            self._awaiting = request.id
        self.stats["actions_sent"] += 1
        self._last_action = _action_text(action)
        await self._send(request)
        waits = name == WAIT_TEAMMATE_CONTINUE.name
        await self._publish_status("failed" if failing else "waiting" if waits else "acting",
                                   waiting_for="teammate" if waits else None)

    async def _report_lm_failures(self) -> None:
        """Send the env node the LM failures of the act just made, in the step channel's order:
        a session that ends on them applies nothing the member sent after."""
        side: FailingSide = "user" if self.kind == "user" else "agent"
        while self._unreported:
            error = self._unreported.pop(0)
            failure = error.failure(self.role, side)
            await self._send(StepRequest(role=self.role, kind="lm_failed",
                                         failure=failure.model_dump(mode="json")))

    async def _pass_turn(self, notification: Notification) -> None:
        """Give the turn up (turn-taking): a wait, the act that passes it."""
        self.stats["actions_sent"] += 1
        self._last_action = f"{WAIT_TEAMMATE_CONTINUE.name}()"
        await self._send(StepRequest(role=self.role, action=self._last_action,
                                     seen_seq=notification.seq))

    async def _publish_status(self, status: AgentState,
                              waiting_for: WaitingFor | None = None) -> None:
        """Tell the panels what this member does now; a lost status never stops the member."""
        if not self.publishes_status:
            return
        update = AgentStatus(role=self.role, status=status, waiting_for=waiting_for,
                             last_action=self._last_action,
                             ts=time.time())
        try:
            await self.bus.publish(status_channel(self.session_id), update.model_dump(mode="json"))
        except Exception:
            log.warning("%s: could not publish its status %r", self.role, status, exc_info=True)

    def _action_name(self, action: str | dict[str, Any]) -> str | None:
        """The name of the action sent, or ``None`` when it does not parse."""
        try:
            parsed, _ = parse_action(action, self._specs)
        except ActionError:
            return None
        return parsed.name

    async def _woken(self) -> bool:
        """Wait for news; ``False`` when the member's own last step went unanswered for
        ``ack_timeout`` (its update was lost on a quiet session): a sync is asked for then."""
        if not self._awaiting:
            await self._wake.wait()
            return True
        try:  # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancellation
            async with asyncio.timeout(self.ack_timeout):
                await self._wake.wait()
        except TimeoutError:
            await self._resync_unanswered()
            return False
        return True

    async def _resync_unanswered(self) -> None:
        log.warning("%s: no notification for its own step after %.0fs; resyncing",
                    self.role, self.ack_timeout)
        self._awaiting = None
        await self.request_sync()

    async def _wait_for_ack(self) -> None:
        """Hold the member until its own last step shows up, collecting what arrives meanwhile."""
        deadline = asyncio.get_running_loop().time() + self.ack_timeout
        while self._awaiting and not any(n.done for n in self._inbox):
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                await self._resync_unanswered()
                return
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await self._wake.wait()

    async def _send(self, request: StepRequest) -> None:
        await self.bus.publish(step_channel(self.session_id), request)

    def _write_results(self) -> None:
        if self.results_dir is None:
            return
        folder = self.results_dir / self.role
        folder.mkdir(parents=True, exist_ok=True)
        summary = {"role": self.role, "kind": self.kind, "teammate": type(self.teammate).__name__,
                   "stats": self.stats,
                   "end_reason": self.final.end_reason if self.final else None}
        (folder / "member.json").write_text(json.dumps(summary, indent=2))


class AgentNode(MemberNode):
    """Wraps an LM agent (or any agent-side teammate); publishes its status for the panels."""

    kind: ClassVar[MemberKind] = "agent"
    publishes_status: ClassVar[bool] = True


class UserNode(MemberNode):
    """Wraps a simulated user."""

    kind: ClassVar[MemberKind] = "user"
