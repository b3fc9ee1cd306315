"""SessionHost: runs sessions on one event loop: in a Jupyter server, the hosted sessions' own
loop on a thread of the server's process (``cogym_lab.server.sessions_loop``), never the
server's; in a kernel, the kernel's.

Each hosted session has its own bus (in-process unless a Redis URL is given), runs
``Session.run()`` as a background task and writes its results under ``results_dir/<session_id>``.
People (members of kind ``person``) hold seats that the host joins on their behalf, so the session
starts at once; a person's browser then follows the seat (:meth:`SessionHost.follow`) and acts
through ``act``.

Every session keeps the request that created it in ``hosting.json`` beside ``session.json``. A
server that starts calls ``recover()``: sessions an earlier server left behind are listed again,
finished ones as they are and open ones (no recorded end) marked ``interrupted``. ``resume`` then
rebuilds such a session from its request and restores its state from ``events.jsonl``; the log
goes on with the next sequence number. A server that shuts down interrupts its sessions the same
way, so a restart never ends a session.

The host counts the panels (seat WebSockets, local widget comms) open on each session. A running
session goes on while its panels are closed; one with person seats that no one has been at (no
panel open, no person's action) for ``unattended_seconds`` ends, with that reason in its log (see
:mod:`cogym_lab.runtime.panels`).

The host composes the parts each concern keeps: :mod:`~cogym_lab.runtime.building` (a spec
becomes a session), :mod:`~cogym_lab.runtime.registry` (the sessions known here, recovered and
forgotten), :mod:`~cogym_lab.runtime.hosted` (what it keeps of one session),
:mod:`~cogym_lab.runtime.feeds` (a panel's channels), :mod:`~cogym_lab.runtime.panels` and
:mod:`~cogym_lab.runtime.ratings` (a person rating a session).
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cogym_lab.bus import connect_bus
from cogym_lab.core.messages import StepKind, StepRequest, obs_channel, step_channel
from cogym_lab.nodes.restore import ReplayMismatch
from cogym_lab.nodes.results import SESSION_FILE, read_events, trim_torn_tail, update_session
from cogym_lab.nodes.session import SessionResult
from cogym_lab.runtime.access import SessionAccess
from cogym_lab.runtime.building import SessionBuilder
from cogym_lab.runtime.ended import DEFAULT_FINISHED_TTL, EndedSession, end_bus, read_statuses
from cogym_lab.runtime.errors import HostingError, not_a_seat
from cogym_lab.runtime.feeds import SeatFeed, subscribe_statuses, subscribe_updates
from cogym_lab.runtime.hosted import HostedSession, ended_status
from cogym_lab.runtime.models import (
    HOSTING_FILE,
    CreatedIn,
    PairwiseOffer,
    validation_message,
)
from cogym_lab.runtime.panels import DEFAULT_UNATTENDED_SECONDS, PanelWatch
from cogym_lab.runtime.ratings import Ratings
from cogym_lab.runtime.registry import SHUTDOWN_REASON, SessionRegistry
from cogym_lab.runtime.settlements import Settlements, Submitted
from cogym_lab.runtime.stored import StoredSession, write_json
from cogym_lab.sessions.spec import SessionSpec

log = logging.getLogger(__name__)

#: Seconds the end of a run waits for the env node's last answers to reach the host.
LAST_WORD_WAIT = 5.0


class SessionHost:
    """Creates, lists, follows, ends, resumes and rates sessions. Use it from one event loop
    (a server's sessions' loop, or a kernel's): its state is not guarded against threads."""

    def __init__(self, results_dir: str | Path, redis_url: str | None = None,
                 default_team: str | None = None, *, teams: Mapping[str, str] | None = None,
                 team_paths: bool = True,
                 unattended_seconds: float | None = DEFAULT_UNATTENDED_SECONDS,
                 build_in_thread: bool = True,
                 finished_session_ttl: float | None = DEFAULT_FINISHED_TTL,
                 baselines: Sequence[str | Path] = ()) -> None:
        """``teams``, ``team_paths``, ``default_team`` and ``build_in_thread``: how sessions
        are built (see :class:`~cogym_lab.runtime.building.SessionBuilder`; a server builds
        off the loop and loads registered teams only, a kernel's host builds at once).
        ``unattended_seconds``: how long a session with person seats goes on with no one at
        it (no panel open, no person's action) before it ends (``None``, zero or less: it
        never ends for that).
        ``finished_session_ttl``: seconds an ended session stays hosted (its end views for
        late panels in memory) before only its results folder is read for it (zero: at once;
        ``None``: never). Its coordinator, env, members and bus are given back at its end
        either way. ``baselines``: folders of fully autonomous runs, where the rating form's
        pairwise question finds the autonomous outcome of a session's task and instance (see
        :mod:`cogym_lab.runtime.pairwise`); none: the form does not ask it."""
        self.results_dir = Path(results_dir)
        self.redis_url = redis_url
        self.builder = SessionBuilder(default_team=default_team, teams=teams,
                                      team_paths=team_paths, in_thread=build_in_thread)
        self.registry = SessionRegistry()
        self.sessions = self.registry.sessions  # hosted here, by id
        self.stored = self.registry.stored  # known from their files only, by id
        self._panels = PanelWatch(unattended_seconds, self._end_unattended)
        self.finished_session_ttl = finished_session_ttl
        self.rating_store = Ratings(self.find, baselines)

    @property
    def notebooks(self) -> Any:
        """Links sessions to a person's notebook (its kernel and live document): a
        ``cogym_lab.server.live_notebooks.NotebookOpener``, set by the server extension."""
        return self.builder.notebooks

    @notebooks.setter
    def notebooks(self, opener: Any) -> None:
        self.builder.notebooks = opener

    # -- creating and resuming ----------------------------------------------------------------

    async def create(self, spec: SessionSpec | str | None = None, *,
                     access: SessionAccess | None = None, created_in: CreatedIn | None = None,
                     **fields: Any) -> HostedSession:
        """Build the session ``spec`` describes (or the spec that a task's name and ``fields``
        make: ``create(TASK, people=["user"])``) and start it in the background.

        A member left without an LM joins as a guide that says in the chat what to set. A spec
        with a ``notebook`` runs the task in that notebook's kernel and live document (its first
        person seat is the notebook's person). ``access`` says whose session it is and which
        seats are shared (a server sets it; ``None`` in a kernel). ``created_in``: the notebook
        cell that asked for it (the session belongs to its kernel). Raises ``HostingError``.
        """
        if not isinstance(spec, SessionSpec):
            try:
                spec = SessionSpec.model_validate({"task": spec, **fields} if spec else fields)
            except ValidationError as error:
                raise HostingError(validation_message(error)) from None
        elif fields:
            raise TypeError("give a spec or its fields, not both")
        hosted = await self._build(spec)
        if access is not None:
            seats = {*hosted.people, *hosted.outside}
            shared = sorted({*access.seat_users, *access.seat_tokens} - seats)
            if shared:
                await hosted.live.env.aclose()
                raise HostingError(f"{', '.join(shared)} is not a person seat or an outside "
                                   "seat of this session (only those can be shared).")
            hosted.access = access
        hosted.created_in = created_in
        await self.builder.connect_notebook(hosted)
        hosted.save_record()
        await self._start(hosted)
        return hosted

    async def resume(self, session_id: str) -> HostedSession:
        """Carry on a session an earlier server left interrupted.

        The env and team are rebuilt from ``hosting.json`` and the state from ``events.jsonl``
        (deferred results come from the log: no LM or kernel call is repeated); the members get
        the current state and go on. Raises ``HostingError`` (404 unknown, 409 not interrupted).
        """
        hosted = self.sessions.get(session_id)
        if hosted is not None:
            raise HostingError(f"Session {session_id!r} is {hosted.status}: only an interrupted "
                               "session can be resumed.", status=409)
        stored = self.registry.stored_session(session_id)
        if stored.status != "interrupted":
            raise HostingError(f"Session {session_id!r} is {stored.status}: only an interrupted "
                               "session can be resumed.", status=409)
        if stored.resuming:
            raise HostingError(f"Session {session_id!r} is being resumed.", status=409)
        stored.resuming = True  # before any wait: a second resume is refused
        try:
            hosted = await self._restore(stored)
        except BaseException:
            stored.resuming = False
            raise
        self.sessions[session_id] = hosted  # from here on it is this server's (409 if again)
        del self.stored[session_id]
        await self._start(hosted)
        return hosted

    async def _restore(self, stored: StoredSession) -> HostedSession:
        """The interrupted session ``stored`` rebuilt, in the state its log ends in, with its
        notebook connected; not yet started. Raises ``HostingError``."""
        session_id = stored.session_id
        try:
            hosted = await self._build(stored.record.spec, session_id)
        except HostingError as error:
            raise HostingError(f"Session {session_id!r} cannot be rebuilt: {error.message}",
                               status=500) from None
        hosted.created_at = stored.record.created_at
        hosted.access = stored.access
        hosted.created_in = stored.record.created_in
        cut = trim_torn_tail(stored.directory)
        if cut:
            log.warning("session %s: dropped a half-written last event (%d bytes)", session_id,
                        cut)
        session = hosted.live
        try:
            await session.prepare()  # replaying a search needs the index, off the loop
            events = read_events(stored.directory) if (stored.directory / "events.jsonl"
                                                       ).is_file() else []
            session.restore(events)
            await self.builder.connect_notebook(hosted)
        except (ReplayMismatch, ValueError) as error:  # ValueError: a line that is not an event
            await session.env.aclose()
            raise HostingError(f"Session {session_id!r} cannot be restored from its log: "
                               f"{error}", status=500) from None
        except BaseException:
            await session.env.aclose()
            raise
        hosted.restored_state = session.coordinator.snapshot()
        hosted.resumed = True
        return hosted

    async def _build(self, spec: SessionSpec, session_id: str | None = None) -> HostedSession:
        """The session ``spec`` describes, not yet started, its results under ``results_dir``.
        Raises ``HostingError``."""
        hosted = await self.builder.build(spec, session_id)
        hosted.live.results_dir = self.results_dir / hosted.session_id
        return hosted

    async def _start(self, hosted: HostedSession) -> None:
        bus = connect_bus(self.redis_url)
        await bus.connect()
        hosted.bus = hosted.live.bus = bus
        settlements = Settlements(hosted.session_id)
        await settlements.start(bus)  # before anyone acts: no answer is missed
        hosted.settlements = settlements
        # The host holds the person and outside seats: the session need not wait for them
        # (an MCP client attaches to its outside seat later, and is sent its state then).
        for role in [*hosted.people, *hosted.outside]:
            await bus.publish(step_channel(hosted.session_id),
                              StepRequest(role=role, kind="join").model_dump(mode="json"))
        hosted.runner = asyncio.create_task(self._run(hosted))
        self.sessions[hosted.session_id] = hosted
        self._watch_panels(hosted)

    async def _run(self, hosted: HostedSession) -> SessionResult | None:
        session = hosted.live
        try:
            hosted.result = await session.run()
            env_node = session.env_node
            if env_node is not None and env_node.log_failure:  # ended, but its log is cut short
                hosted.error = env_node.log_failure
        except asyncio.CancelledError:
            hosted.error = "cancelled"
            raise
        except Exception as error:
            log.exception("session %s failed", hosted.session_id)
            hosted.error = f"{type(error).__name__}: {error}"
            self._record_failure(hosted)
        finally:
            await self._finish(hosted)
        return hosted.result

    async def _finish(self, hosted: HostedSession) -> None:
        """The run is over: close the session's bus, keep what is read after the end (see
        :class:`EndedSession`) and let go of the rest; forget the session altogether after
        ``finished_session_ttl``. Never raises: it runs in the runner's ``finally``."""
        bus = hosted.bus
        statuses = []
        await hosted.refuse_pending(LAST_WORD_WAIT)
        try:
            if bus is not None:
                statuses = await read_statuses(bus, hosted.session_id)  # before it closes
                await bus.close()
        except Exception:  # closing a lost connection must not hide the result
            log.exception("closing the bus of session %s failed", hosted.session_id)
        try:
            hosted.release(ended_status(hosted), await end_bus(hosted.session_id, statuses))
        except Exception:  # the session keeps its objects, as before there was a release
            log.exception("session %s: releasing its objects failed", hosted.session_id)
            return
        self.registry.schedule_eviction(hosted.session_id, self.finished_session_ttl)

    def _evict(self, session_id: str) -> None:
        """Forget an ended session for its results folder now (what the timer does after
        ``finished_session_ttl``)."""
        self.registry.evict(session_id)

    def _record_failure(self, hosted: HostedSession) -> None:
        """Say so in ``session.json``, so a later server does not take it for interrupted."""
        directory = hosted.directory
        if directory is not None and (directory / SESSION_FILE).is_file():
            update_session(directory, status="failed", error=hosted.error, ended_at=time.time())

    def recover(self) -> builtins.list[StoredSession]:
        """List the sessions an earlier server left in ``results_dir`` (see
        :meth:`SessionRegistry.recover`). Call once, when the server starts."""
        return self.registry.recover(self.results_dir)

    # -- looking up ---------------------------------------------------------------------------

    def list(self) -> builtins.list[dict[str, Any]]:
        return [entry.summary() for entry in self.entries()]

    def watched(self, session_id: str, role: str) -> dict[str, Any] | None:
        """Member ``role``'s current view as a ``sync`` notification, for a read-only panel
        that just connected; ``None`` before the session has started (the member's first
        notification, with its context, reaches the watcher then). Built by the coordinator
        without publishing anything: a sync asked of the env would come on the member's own
        channel, and an agent or a simulated user there would take it as news and act once
        more. Raises ``HostingError`` like :meth:`get`."""
        session = self.get(session_id).session
        if isinstance(session, EndedSession):  # its view at the end, kept when it ended
            return session.view(role)
        notification = session.coordinator.watch(role, time.time())
        return None if notification is None else notification.model_dump(mode="json")

    async def follow(self, session_id: str, role: str, *, watch: bool = False
                     ) -> SeatFeed | None:
        """Subscribe a panel to ``role``'s updates and the agents' statuses; ``None`` when the
        session has ended meanwhile (its bus is gone). With ``watch``, the feed holds the
        member's current state too, taken right after subscribing, with no wait between: every
        later update comes through the feed, after it (see :meth:`watched`). Raises
        ``HostingError`` like :meth:`get`."""
        hosted = self.get(session_id)
        if hosted.bus is None:
            return None
        updates = await subscribe_updates(hosted.bus, session_id, role)
        current = self.watched(session_id, role) if watch else None
        statuses = await subscribe_statuses(hosted.bus, session_id)
        return SeatFeed(updates, statuses, current)

    def get(self, session_id: str) -> HostedSession:
        """A session this server runs (or ran). Raises ``HostingError``: 404 for an unknown id,
        409 for a session from an earlier server that has not been resumed."""
        return self.registry.get(session_id)

    def find(self, session_id: str) -> HostedSession | StoredSession:
        """A session this server runs or an earlier one left; ``HostingError`` 404 if neither."""
        return self.registry.find(session_id)

    def entries(self) -> builtins.list[HostedSession | StoredSession]:
        """Every session known here, oldest first."""
        return self.registry.entries()

    def running(self, owner: str | None = None) -> int:
        """How many sessions run here now (those of ``owner`` only, when given)."""
        return self.registry.running(owner)

    def claim_seat(self, session_id: str, token: str, who: str) -> str:
        """Give ``who`` the seat a seat token opens, once; its role. ``HostingError`` 404 for an
        unknown session and for a token that opens none of its seats (a wrong one, or one used
        already), alike: a wrong guess learns nothing."""
        refusal = HostingError(f"No session {session_id!r} has a seat for that token (a seat "
                               "token works once).", status=404)
        try:
            entry = self.find(session_id)
        except HostingError:
            raise refusal from None
        access = entry.access
        role = access.claim(token, who) if access is not None else None
        if role is None:
            raise refusal
        if isinstance(entry, HostedSession):
            entry.save_record()
        else:
            entry.record.access = access
            write_json(entry.directory / HOSTING_FILE, entry.record.model_dump(mode="python"))
        return role

    def snapshot(self, session_id: str) -> dict[str, Any]:
        """Summary, current (or final) state, result, and ratings of a session."""
        entry = self.find(session_id)
        ratings = self.ratings(session_id)
        return entry.summary() | entry.details() | {"ratings": ratings}

    # -- acting -------------------------------------------------------------------------------

    async def end(self, session_id: str, reason: str = "ended by the user",
                  wait: float = 10.0) -> HostedSession | StoredSession:
        """Stop a running session and wait (up to ``wait`` seconds) for it to finish."""
        entry = self.find(session_id)
        if not isinstance(entry, HostedSession):
            return entry  # from an earlier server: nothing runs
        hosted = entry
        runner = hosted.runner
        if hosted.status != "running" or runner is None:
            return hosted
        session = hosted.live  # held here: the runner lets go of it when the run is over
        deadline = time.monotonic() + wait
        while session.env_node is None and not runner.done():
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.01)  # run() has not built its env node yet
        if session.env_node is not None:
            await session.env_node.stop(reason)
        else:
            runner.cancel()
        await asyncio.wait({runner}, timeout=max(0.0, deadline - time.monotonic()))
        return hosted

    def check_seat(self, session_id: str, role: Any) -> HostedSession:
        hosted = self.get(session_id)
        if not isinstance(role, str) or role not in hosted.people:
            raise HostingError(not_a_seat(role, hosted.people), status=400)
        return hosted

    async def act(self, session_id: str, role: Any, action: Any,
                  base: str | None = None, seen_seq: int | None = None) -> StepRequest:
        """Publish a person's action as a ``StepRequest``; the env answers on the obs channel.
        :meth:`submit` does the same and gives the env's answer too."""
        submitted = await self.submit(session_id, role, action, base=base, seen_seq=seen_seq)
        return submitted.request

    async def submit(self, session_id: str, role: Any, action: Any,
                     base: str | None = None, seen_seq: int | None = None) -> Submitted:
        """Publish a person's action as a ``StepRequest``; the env answers on the obs channel,
        and ``await submitted.settled(wait)`` says whether it was applied (and logged) or
        refused, and why (:mod:`cogym_lab.core.settlements`). Every action is answered, at the
        latest when the session's run is over. Raises ``HostingError`` (409 once the session
        has ended or its env reads no more actions).

        ``base`` is the text a whole-text replacement (an editor save) started from, and
        ``seen_seq`` the update a live edit of a shared text was made on, so that edits made
        meanwhile by others are merged rather than lost.
        """
        hosted = self.check_seat(session_id, role)
        settlements = hosted.settlements
        if settlements is not None and settlements.closed is not None:  # says how it ended
            raise HostingError(settlements.closed.message, status=409)
        if hosted.status != "running" or hosted.bus is None:
            raise HostingError(f"Session {session_id!r} has ended.", status=409)
        if base is not None and not isinstance(base, str):
            raise HostingError("'base' must be the text the edit started from.")
        if seen_seq is not None and (not isinstance(seen_seq, int) or isinstance(seen_seq, bool)):
            raise HostingError("'seen_seq' must be the seq of an update.")
        request = _request(role, "action", action)
        request.base = base
        request.seen_seq = seen_seq
        outcome = settlements.expect(request) if settlements is not None else None
        try:
            await hosted.bus.publish(step_channel(session_id), request.model_dump(mode="json"))
        except BaseException:
            if settlements is not None:
                settlements.forget(request.id)
            raise
        self._panels.acted(session_id)  # someone is at the seat, panel or not
        return Submitted(request, outcome)

    async def interrupt(self, session_id: str) -> bool:
        """Interrupt the cell the session's kernel is running (a person's stop button);
        ``False`` when the task has no kernel or none was started yet."""
        hosted = self.get(session_id)
        if hosted.status != "running":
            return False
        executor = getattr(hosted.live.env, "executor", None)
        if executor is None or not executor.alive:
            return False
        await executor.interrupt()
        return True

    async def sync(self, session_id: str, role: str) -> None:
        """Ask the env for ``role``'s current state (a reconnecting browser)."""
        hosted = self.check_seat(session_id, role)
        if hosted.bus is None:
            return
        if isinstance(hosted.session, EndedSession):
            # No env to ask: the seat's view at the end goes to the panels that just
            # subscribed to the stand-in bus, as a running env's answer would.
            view = hosted.session.view(role)
            if view is not None:
                await hosted.bus.publish(obs_channel(session_id, role), view)
        elif hosted.status == "running":
            await hosted.bus.publish(step_channel(session_id),
                                     StepRequest(role=role, kind="sync").model_dump(mode="json"))

    # -- panels -------------------------------------------------------------------------------

    @property
    def unattended_seconds(self) -> float | None:
        """How long a session with person seats goes on with no one at it (``None``, zero or
        less: forever). Setting it affects unattended times that start later."""
        return self._panels.limit

    @unattended_seconds.setter
    def unattended_seconds(self, seconds: float | None) -> None:
        self._panels.limit = seconds

    def panel_opened(self, session_id: str, role: str) -> None:
        """A person's panel connected to seat ``role`` (a seat WebSocket opened, a local panel
        was made): someone is at the session, so its unattended time stops. Call on the host's
        loop, once per panel, and ``panel_closed`` once when it goes."""
        self._panels.opened(session_id, role)

    def panel_closed(self, session_id: str, role: str) -> None:
        """A panel that ``panel_opened`` counted went away. With none left open, a running
        session with person seats goes on, and ends after ``unattended_seconds`` unless a
        panel connects or a person acts meanwhile."""
        self._panels.closed(session_id, role)

    def panels(self, session_id: str, role: str | None = None) -> int:
        """How many panels are open on a session (on its seat ``role`` only, when given)."""
        return self._panels.count(session_id, role)

    def _watch_panels(self, hosted: HostedSession) -> None:
        """Time a session that just started: one with person seats ends if no one is at it
        for ``unattended_seconds`` (from now, when no panel has connected yet)."""
        session_id = hosted.session_id
        self._panels.started(session_id, timed=bool(hosted.people))
        if hosted.runner is not None:
            hosted.runner.add_done_callback(lambda _: self._panels.ended(session_id))

    async def _end_unattended(self, session_id: str, reason: str) -> None:
        """End a session no one was at for ``unattended_seconds``."""
        hosted = self.sessions.get(session_id)
        if hosted is not None and hosted.status == "running":
            await self.end(session_id, reason)

    # -- ratings (runtime.ratings) ----------------------------------------------------------

    def rate(self, session_id: str, role: str, outcome_rating: int, satisfaction: int,
             comment: str = "", *, likert: Mapping[str, Any] | None = None,
             pairwise: str | None = None, pairwise_order: Sequence[str] | None = None
             ) -> dict[str, Any]:
        """Save a person seat's rating of a session; all its ratings (:meth:`Ratings.rate`)."""
        return self.rating_store.rate(
            session_id, role, outcome_rating, satisfaction, comment, likert=likert,
            pairwise=pairwise, pairwise_order=pairwise_order)

    async def pairwise_offer(self, session_id: str, role: str) -> PairwiseOffer:
        """The rating form's pairwise question for a seat (:meth:`Ratings.pairwise_offer`)."""
        return await self.rating_store.pairwise_offer(session_id, role)

    def ratings(self, session_id: str) -> dict[str, Any]:
        """The ratings saved for a session, by role (``{}`` when there are none)."""
        return self.rating_store.saved(session_id)

    # -- shutting down ------------------------------------------------------------------------

    async def close(self, wait: float = 10.0) -> None:
        """Interrupt every running session (the server is going down): nothing is ended, each
        is recorded as interrupted, and a later server can resume it."""
        self._panels.close()  # sockets closing as the server stops must not end any session
        self.registry.cancel_evictions()
        running = [hosted for hosted in self.sessions.values() if hosted.status == "running"]
        for hosted in running:
            await hosted.live.interrupt(SHUTDOWN_REASON)
        runners = {hosted.runner for hosted in running if hosted.runner is not None}
        if runners:
            await asyncio.wait(runners, timeout=wait)


def _request(role: str, kind: StepKind, action: Any) -> StepRequest:
    if isinstance(action, dict):
        if not isinstance(action.get("name"), str):
            raise HostingError("An action object needs a 'name' (and optional 'args').")
        if not isinstance(action.get("args", {}), dict):
            raise HostingError("An action's 'args' must be an object.")
    elif not isinstance(action, str) or not action.strip():
        raise HostingError("'action' must be an action string or {\"name\": ..., \"args\": {...}}.")
    return StepRequest(role=role, kind=kind, action=action)


__all__ = ["LAST_WORD_WAIT", "SHUTDOWN_REASON", "HostedSession", "HostingError", "SessionHost"]
