"""SessionHost: runs sessions inside the Jupyter server's event loop.

Each hosted session has its own bus (in-process unless a Redis URL is given), runs
``Session.run()`` as a background task and writes its results under ``results_dir/<session_id>``.
People (members of kind ``person``) hold seats that the host joins on their behalf, so the session
starts at once; a person's browser then follows the seat over a websocket and acts through
``act``.

Every session keeps the request that created it in ``hosting.json`` beside ``session.json``. A
server that starts calls ``recover()``: sessions an earlier server left behind are listed again,
finished ones as they are and open ones (no recorded end) marked ``interrupted``. ``resume`` then
rebuilds such a session from its request and restores its state from ``events.jsonl``; the log
goes on with the next sequence number. A server that shuts down interrupts its sessions the same
way, so a restart never ends a session.

The host counts the panels (seat WebSockets, local widget comms) open on each session: a running
session with person seats that has none open for ``panel_grace_seconds`` ends, with that reason
in its log (see :mod:`cogym_lab.runtime.panels`).
"""

from __future__ import annotations

import asyncio
import builtins
import json
import logging
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cogym_lab.bus import Bus, connect_bus
from cogym_lab.core.messages import StepKind, StepRequest, obs_channel, step_channel
from cogym_lab.core.settlements import INTERRUPTED, StepsClosed, ended_before
from cogym_lab.errors import CogymError
from cogym_lab.nodes.restore import ReplayMismatch
from cogym_lab.nodes.results import (
    SESSION_FILE,
    read_events,
    read_session,
    trim_torn_tail,
    update_session,
)
from cogym_lab.nodes.session import Session, SessionResult
from cogym_lab.runtime.access import SessionAccess
from cogym_lab.runtime.ended import DEFAULT_FINISHED_TTL, EndedSession, end_bus, read_statuses
from cogym_lab.runtime.models import (
    HOSTING_FILE,
    LIKERT_ITEMS,
    PAIRWISE_FIELDS,
    RATINGS_FILE,
    HostingRecord,
    PairwiseOffer,
    Rating,
    StoredRating,
    validation_message,
)
from cogym_lab.runtime.pairwise import make_offer, read_shown
from cogym_lab.runtime.panels import DEFAULT_PANEL_GRACE, PanelWatch
from cogym_lab.runtime.settlements import Settlements, Submitted
from cogym_lab.runtime.stored import (
    STORED_FIELDS,
    StoredSession,
    runs_elsewhere,
    summary_fields,
    this_process,
    write_json,
)
from cogym_lab.sessions.spec import SessionSpec

log = logging.getLogger(__name__)

SHUTDOWN_REASON = "the server stopped"
#: Seconds the end of a run waits for the env node's last answers to reach the host.
LAST_WORD_WAIT = 5.0


class HostingError(CogymError):
    """A request the host refuses; ``status`` is the HTTP status that fits it."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass
class HostedSession:
    """A session running (or run) by this server.

    Once it has ended, ``session`` is an :class:`EndedSession`: the coordinator, env, members
    and bus are given back, ``bus`` is a small stand-in holding the last statuses, and
    ``result`` loses its ``outcome`` when ``session.json`` holds it (``details()`` reads it from
    there). After the host's ``finished_session_ttl`` the host forgets it for a
    :class:`StoredSession` read from its results folder.
    """

    session: Session | EndedSession
    team: str
    task: str
    people: list[str]
    spec: SessionSpec
    bus: Bus | None = None
    created_at: float = field(default_factory=time.time)
    runner: asyncio.Task[SessionResult | None] | None = None
    result: SessionResult | None = None
    error: str | None = None
    restored_state: dict[str, Any] | None = None  # the state a resume rebuilt from the log
    access: SessionAccess | None = None  # whose it is; None: this process's own (no server)
    #: The env's answers to the actions published here, while the session runs.
    settlements: Settlements | None = None

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def directory(self) -> Path | None:
        return self.session.results_dir

    @property
    def live(self) -> Session:
        """The running session; ``HostingError`` 409 once it has ended and been released."""
        if isinstance(self.session, EndedSession):
            raise HostingError(f"Session {self.session_id!r} has ended.", status=409)
        return self.session

    @property
    def status(self) -> str:
        if isinstance(self.session, EndedSession):
            return self.session.status
        if self.runner is None or not self.runner.done():
            return "running"
        return _ended_status(self)

    @property
    def end_reason(self) -> str | None:
        if self.result is not None:
            return self.result.end_reason
        if isinstance(self.session, EndedSession):
            return self.session.end_reason
        return self.session.coordinator.end_reason

    def summary(self) -> dict[str, Any]:
        protocol = (self.session.protocol if isinstance(self.session, EndedSession)
                    else self.session.env.protocol)
        return {
            "session_id": self.session_id,
            "task": self.task,
            "team": self.team,
            "protocol": protocol,
            "members": [member.model_dump() for member in self.session.team],
            "people": list(self.people),
            "status": self.status,
            "end_reason": self.end_reason,
            "error": self.error,
            "created_at": self.created_at,
            "results_dir": str(self.directory) if self.directory else None,
            "delivered": self.result.delivered if self.result else None,
            "scores": self.result.scores if self.result else None,
            "score_reports": ([r.model_dump(mode="json") for r in self.result.score_reports]
                              if self.result else None),
        }

    def details(self) -> dict[str, Any]:
        result = self.result.model_dump(mode="json") if self.result else None
        if isinstance(self.session, EndedSession):
            state, outcome = self.session.final()
            if result is not None and self.session.on_disk:
                result["outcome"] = outcome
            return {"state": state, "result": result}
        coordinator = self.session.coordinator
        return {
            # None until the session starts: the env has no state before its reset
            "state": coordinator.snapshot() if coordinator.started_at else None,
            "result": result,
        }

    def release(self, status: str, bus: Bus | None) -> None:
        """Give back what only a running session needs; keep what :meth:`summary`,
        :meth:`details` and a late panel read. ``bus`` replaces the session's own (closed)."""
        if isinstance(self.session, EndedSession):
            return
        ended = EndedSession.of(self.session, status)
        if ended.on_disk and self.result is not None:
            self.result = self.result.model_copy(update={"outcome": None})
        self.session = ended
        self.bus = bus
        self.runner = None  # a done task holds the result, and a failure's traceback the frames
        self.restored_state = None


def _ended_status(hosted: HostedSession) -> str:
    """How a session whose run is over ended, from what the run left."""
    assert isinstance(hosted.session, Session)
    if hosted.session.interrupted:
        return "interrupted"
    return "failed" if hosted.error else "finished"


class SessionHost:
    """Creates, lists, follows, ends, resumes and rates sessions. Use it from one event loop
    (the server's, or a kernel's)."""

    def __init__(self, results_dir: str | Path, redis_url: str | None = None,
                 default_team: str | None = None, *, teams: Mapping[str, str] | None = None,
                 team_paths: bool = True,
                 panel_grace_seconds: float | None = DEFAULT_PANEL_GRACE,
                 build_in_thread: bool = True,
                 finished_session_ttl: float | None = DEFAULT_FINISHED_TTL,
                 baselines: Sequence[str | Path] = ()) -> None:
        """``teams`` registers team files by name beside the ready ones; ``team_paths`` says
        whether a team may also be a file path (yes in a kernel or a script, which run their
        owner's code anyway; never in a server, whose requests come from others).
        ``build_in_thread``: build sessions in a worker thread, off the loop (a server; a
        kernel's host, whose magics need ``create`` to finish at once, passes False).
        ``panel_grace_seconds``: how long a session with person seats goes on with no panel
        open before it ends (``None``, zero or less: it never ends for that).
        ``finished_session_ttl``: seconds an ended session stays hosted (its end views for
        late panels in memory) before only its results folder is read for it (zero: at once;
        ``None``: never). Its coordinator, env, members and bus are given back at its end
        either way. ``baselines``: folders of fully autonomous runs, where the rating form's
        pairwise question finds the autonomous outcome of a session's task and instance (see
        :mod:`cogym_lab.runtime.pairwise`); none: the form does not ask it."""
        self.results_dir = Path(results_dir)
        self.build_in_thread = build_in_thread
        self.redis_url = redis_url
        self.default_team = default_team
        self.teams = dict(teams or {})
        self.team_paths = team_paths
        self.sessions: dict[str, HostedSession] = {}
        self.stored: dict[str, StoredSession] = {}
        #: Links sessions to a person's notebook (its kernel and live document): a
        #: ``cogym_lab.server.live_notebooks.NotebookOpener``, set by the server extension.
        self.notebooks: Any = None
        self._panels = PanelWatch(panel_grace_seconds, self._end_unfollowed)
        self.finished_session_ttl = finished_session_ttl
        self._evictions: dict[str, asyncio.TimerHandle] = {}
        self.baselines = [Path(folder) for folder in baselines]
        #: Draws the order of the pairwise question's two outcomes (a test may seed it).
        self.pairwise_rng: random.Random = random.SystemRandom()

    # -- creating and resuming ----------------------------------------------------------------

    async def create(self, spec: SessionSpec | str | None = None, *,
                     access: SessionAccess | None = None, **fields: Any) -> HostedSession:
        """Build the session ``spec`` describes (or the spec that a task's name and ``fields``
        make: ``create(TASK, people=["user"])``) and start it in the background.

        A member left without an LM joins as a guide that says in the chat what to set. A spec
        with a ``notebook`` runs the task in that notebook's kernel and live document (its first
        person seat is the notebook's person). ``access`` says whose session it is and which
        seats are shared (a server sets it; ``None`` in a kernel). Raises ``HostingError``.
        """
        if not isinstance(spec, SessionSpec):
            try:
                spec = SessionSpec.model_validate({"task": spec, **fields} if spec else fields)
            except ValidationError as error:
                raise HostingError(validation_message(error)) from None
        elif fields:
            raise TypeError("give a spec or its fields, not both")
        hosted = await self._build_off_loop(spec)
        if access is not None:
            shared = sorted({*access.seat_users, *access.seat_tokens} - set(hosted.people))
            if shared:
                await hosted.live.env.aclose()
                raise HostingError(f"{', '.join(shared)} is not a person seat of this session "
                                   "(only person seats can be shared).")
            hosted.access = access
        await self._connect_notebook(hosted)
        self._save_record(hosted)
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
        stored = self._stored(session_id)
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
            hosted = await self._build_off_loop(stored.record.spec, session_id)
        except HostingError as error:
            raise HostingError(f"Session {session_id!r} cannot be rebuilt: {error.message}",
                               status=500) from None
        hosted.created_at = stored.record.created_at
        hosted.access = stored.access
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
            await self._connect_notebook(hosted)
        except (ReplayMismatch, ValueError) as error:  # ValueError: a line that is not an event
            await session.env.aclose()
            raise HostingError(f"Session {session_id!r} cannot be restored from its log: "
                               f"{error}", status=500) from None
        except BaseException:
            await session.env.aclose()
            raise
        hosted.restored_state = session.coordinator.snapshot()
        return hosted

    async def _build_off_loop(self, spec: SessionSpec,
                              session_id: str | None = None) -> HostedSession:
        """:meth:`_build` in a worker thread when ``build_in_thread``: building an env may load
        a dataset, which must not stall the server's other sessions and requests."""
        if self.build_in_thread:
            return await asyncio.to_thread(self._build, spec, session_id)
        return self._build(spec, session_id)

    def _build(self, spec: SessionSpec, session_id: str | None = None) -> HostedSession:
        """The session ``spec`` describes, not yet started. Raises ``HostingError``."""
        from cogym_lab.sessions import SessionBuildError, build_session

        if spec.team is None and self.default_team:
            spec = spec.model_copy(update={"team": self.default_team})
        notebook = self._link_notebook(spec) if spec.notebook is not None else None
        try:
            session = build_session(spec, session_id=session_id, guides=True,
                                    notebook=notebook, load_team=self._load_team)
        except SessionBuildError as error:
            raise HostingError(f"{error.field}: {error.message}", status=error.status) from None
        session.results_dir = self.results_dir / session.session_id
        seats = [member.role for member in session.team if member.kind == "person"]
        return HostedSession(session=session, team=session.spec.team_name, task=spec.task,
                             people=seats, spec=session.spec)

    def _load_team(self, team: Any) -> Any:
        from cogym_lab.teams.config import load_registered_team, load_team

        if self.team_paths:
            return load_team(team)
        return load_registered_team(team, self.teams)

    def _link_notebook(self, spec: SessionSpec) -> Any:
        """A (not yet connected) link to the notebook ``spec`` names, for its first seat."""
        if self.notebooks is None or spec.notebook is None:
            raise HostingError("notebook: sessions from a notebook need the cogym_lab server "
                               "extension running in the notebook's Jupyter server.", status=409)
        # The opener refuses a notebook it cannot use with a HostingError of its own.
        return self.notebooks.link(spec.notebook.model_dump(), spec.people[0])

    async def _connect_notebook(self, hosted: HostedSession) -> None:
        """Connect a notebook session to its kernel before anyone acts, so that no cell the
        person runs is missed."""
        link = getattr(hosted.live.env, "notebook", None)
        if link is None or not hasattr(link, "start"):
            return
        try:
            await link.start(hosted.session_id)
        except Exception as error:
            await link.close()
            raise HostingError(f"Could not connect to the notebook's kernel: {error}",
                               status=409) from error

    def _record(self, hosted: HostedSession) -> HostingRecord:
        """What ``hosting.json`` says of ``hosted``."""
        return HostingRecord(session_id=hosted.session_id, spec=hosted.spec.without_secrets(),
                             team=hosted.team, people=hosted.people,
                             created_at=hosted.created_at, access=hosted.access,
                             **this_process())

    def _save_record(self, hosted: HostedSession) -> None:
        record = self._record(hosted)
        directory = hosted.directory
        assert directory is not None
        directory.mkdir(parents=True, exist_ok=True)
        # A value JSON cannot hold (a DataFrame from a kernel) is kept as its repr: such a
        # session can be listed after a restart, not rebuilt.
        write_json(directory / HOSTING_FILE, record.model_dump(mode="python"))

    async def _start(self, hosted: HostedSession) -> None:
        bus = connect_bus(self.redis_url)
        await bus.connect()
        hosted.bus = hosted.live.bus = bus
        settlements = Settlements(hosted.session_id)
        await settlements.start(bus)  # before anyone acts: no answer is missed
        hosted.settlements = settlements
        for role in hosted.people:  # the host holds the seat: the session need not wait for it
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
        await self._close_settlements(hosted)
        try:
            if bus is not None:
                statuses = await read_statuses(bus, hosted.session_id)  # before it closes
                await bus.close()
        except Exception:  # closing a lost connection must not hide the result
            log.exception("closing the bus of session %s failed", hosted.session_id)
        try:
            hosted.release(_ended_status(hosted), await end_bus(hosted.session_id, statuses))
        except Exception:  # the session keeps its objects, as before there was a release
            log.exception("session %s: releasing its objects failed", hosted.session_id)
            return
        self._schedule_eviction(hosted.session_id)

    async def _close_settlements(self, hosted: HostedSession) -> None:
        """The run is over: every action still waiting for the env's answer is refused (the
        env node normally did so already). Never raises."""
        settlements = hosted.settlements  # kept, closed: an action from now on gets a 409
        if settlements is None:
            return
        try:
            session = hosted.session
            node = session.env_node if isinstance(session, Session) else None
            if node is not None and node.closed is not None:
                # It published its last word after all its answers: an answer still on its way
                # (on Redis) must resolve its action first, applied ones included.
                await settlements.last_word(LAST_WORD_WAIT)
                closed = node.closed
            elif isinstance(session, Session) and session.interrupted:
                closed = StepsClosed(interrupted=True, message=INTERRUPTED)
            else:
                reason = hosted.end_reason or ("failed" if hosted.error else None)
                closed = StepsClosed(end_reason=reason, message=ended_before(reason))
            settlements.close(closed, known=node.unsent if node is not None else None)
            await settlements.stop()
        except Exception:
            log.exception("session %s: refusing its last actions failed", hosted.session_id)

    def _schedule_eviction(self, session_id: str) -> None:
        ttl = self.finished_session_ttl
        if ttl is None:
            return
        if ttl <= 0:
            self._evict(session_id)
            return
        self._evictions[session_id] = asyncio.get_running_loop().call_later(
            ttl, self._evict, session_id)

    def _evict(self, session_id: str) -> None:
        """Forget an ended session for a :class:`StoredSession` on its results folder (as a
        later server would know it); it is listed, read and rated as before."""
        self._evictions.pop(session_id, None)
        hosted = self.sessions.get(session_id)
        if hosted is None or not isinstance(hosted.session, EndedSession):
            return
        directory = hosted.directory
        if directory is None:  # nothing on disk to read it from: it stays as it is
            return
        summary = hosted.summary()
        run = {key: summary[key] for key in STORED_FIELDS if key in summary}
        run["team"] = summary["members"]  # named as in session.json
        self.stored[session_id] = StoredSession(
            directory=directory, record=self._record(hosted), record_of_run=run, evicted=True)
        del self.sessions[session_id]

    def _record_failure(self, hosted: HostedSession) -> None:
        """Say so in ``session.json``, so a later server does not take it for interrupted."""
        directory = hosted.directory
        if directory is not None and (directory / SESSION_FILE).is_file():
            update_session(directory, status="failed", error=hosted.error, ended_at=time.time())

    def recover(self) -> list[StoredSession]:
        """List the sessions an earlier server left in ``results_dir``.

        A session whose ``session.json`` records no end (the server was killed) is marked
        ``interrupted`` there; its log is left as it is. Call once, when the server starts.
        """
        found = []
        for path in sorted(self.results_dir.glob(f"*/{HOSTING_FILE}")):
            directory = path.parent
            try:
                record = HostingRecord.model_validate_json(path.read_text(encoding="utf-8"))
                run = read_session(directory) if (directory / SESSION_FILE).is_file() else {}
            except (OSError, ValueError) as error:
                log.warning("skipping %s: %s", directory, error)
                continue
            if record.session_id in self.sessions or runs_elsewhere(record):
                continue
            stored = StoredSession(directory=directory, record=record, record_of_run=run)
            if run.get("status") not in ("finished", "failed", "interrupted"):
                marks = {"status": "interrupted", "interrupted_at": time.time(),
                         "interrupt_reason": SHUTDOWN_REASON}
                if run:
                    stored.record_of_run = summary_fields(update_session(directory, **marks))
                else:  # it never started: a session.json says so for every reader
                    stored.record_of_run = {"session_id": record.session_id,
                                            "task": record.spec.task, **marks}
                    write_json(directory / SESSION_FILE, stored.record_of_run)
            self.stored[record.session_id] = stored
            found.append(stored)
        return found

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

    def get(self, session_id: str) -> HostedSession:
        """A session this server runs (or ran). Raises ``HostingError``: 404 for an unknown id,
        409 for a session from an earlier server that has not been resumed."""
        hosted = self.sessions.get(session_id)
        if hosted is not None:
            return hosted
        stored = self._stored(session_id)
        if stored.evicted:
            raise HostingError(f"Session {session_id!r} is {stored.status}; only its results "
                               "are kept now (it ended more than finished_session_ttl seconds "
                               "ago).", status=409)
        hint = " Resume it first." if stored.status == "interrupted" else ""
        raise HostingError(f"Session {session_id!r} is {stored.status} (from an earlier server "
                           f"run).{hint}", status=409)

    def _stored(self, session_id: str) -> StoredSession:
        try:
            return self.stored[session_id]
        except KeyError:
            raise HostingError(f"No session {session_id!r}.", status=404) from None

    def _find(self, session_id: str) -> HostedSession | StoredSession:
        return self.sessions.get(session_id) or self._stored(session_id)

    def find(self, session_id: str) -> HostedSession | StoredSession:
        """A session this server runs or an earlier one left; ``HostingError`` 404 if neither."""
        return self._find(session_id)

    def entries(self) -> builtins.list[HostedSession | StoredSession]:
        """Every session known here, oldest first."""
        known: builtins.list[HostedSession | StoredSession] = [*self.stored.values(),
                                                      *self.sessions.values()]
        return sorted(known, key=_created_at)

    def running(self, owner: str | None = None) -> int:
        """How many sessions run here now (those of ``owner`` only, when given)."""
        return sum(1 for hosted in self.sessions.values() if hosted.status == "running"
                   and (owner is None or (hosted.access is not None
                                          and hosted.access.owner == owner)))

    def claim_seat(self, session_id: str, token: str, who: str) -> str:
        """Give ``who`` the seat a seat token opens, once; its role. ``HostingError`` 404 for an
        unknown session and for a token that opens none of its seats (a wrong one, or one used
        already), alike: a wrong guess learns nothing."""
        refusal = HostingError(f"No session {session_id!r} has a seat for that token (a seat "
                               "token works once).", status=404)
        try:
            entry = self._find(session_id)
        except HostingError:
            raise refusal from None
        access = entry.access
        role = access.claim(token, who) if access is not None else None
        if role is None:
            raise refusal
        if isinstance(entry, HostedSession):
            self._save_record(entry)
        else:
            entry.record.access = access
            write_json(entry.directory / HOSTING_FILE, entry.record.model_dump(mode="python"))
        return role

    def snapshot(self, session_id: str) -> dict[str, Any]:
        """Summary, current (or final) state, result, and ratings of a session."""
        entry = self._find(session_id)
        ratings = self.ratings(session_id)
        return entry.summary() | entry.details() | {"ratings": ratings}

    # -- acting -------------------------------------------------------------------------------

    async def end(self, session_id: str, reason: str = "ended by the user",
                  wait: float = 10.0) -> HostedSession | StoredSession:
        """Stop a running session and wait (up to ``wait`` seconds) for it to finish."""
        entry = self._find(session_id)
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
            raise HostingError(_not_a_seat(role, hosted.people), status=400)
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
    def panel_grace_seconds(self) -> float | None:
        """How long a session with person seats goes on with no panel open (``None``, zero or
        less: forever). Setting it affects grace periods that start later."""
        return self._panels.grace

    @panel_grace_seconds.setter
    def panel_grace_seconds(self, seconds: float | None) -> None:
        self._panels.grace = seconds

    def panel_opened(self, session_id: str, role: str) -> None:
        """A person's panel connected to seat ``role`` (a seat WebSocket opened, a local panel
        was made). Stops the session's grace period. Call on the host's loop, once per panel,
        and ``panel_closed`` once when it goes."""
        self._panels.opened(session_id, role)

    def panel_closed(self, session_id: str, role: str) -> None:
        """A panel that ``panel_opened`` counted went away. With none left open, a running
        session with person seats ends after ``panel_grace_seconds`` unless one connects."""
        self._panels.closed(session_id, role)

    def panels(self, session_id: str, role: str | None = None) -> int:
        """How many panels are open on a session (on its seat ``role`` only, when given)."""
        return self._panels.count(session_id, role)

    def _watch_panels(self, hosted: HostedSession) -> None:
        """Time a session that just started: one with person seats ends if no panel is open
        for the grace period (from now, when none has connected yet)."""
        session_id = hosted.session_id
        self._panels.started(session_id, timed=bool(hosted.people))
        if hosted.runner is not None:
            hosted.runner.add_done_callback(lambda _: self._panels.ended(session_id))

    async def _end_unfollowed(self, session_id: str, reason: str) -> None:
        """End a session whose grace period ran out with no panel open."""
        hosted = self.sessions.get(session_id)
        if hosted is not None and hosted.status == "running":
            await self.end(session_id, reason)

    # -- ratings ------------------------------------------------------------------------------

    def rate(self, session_id: str, role: str, outcome_rating: int, satisfaction: int,
             comment: str = "", *, steerability: int | None = None,
             ease_of_use: int | None = None, utility: int | None = None,
             pairwise: str | None = None, pairwise_order: Sequence[str] | None = None
             ) -> dict[str, Any]:
        """Save a person seat's rating of a session (while it runs or after it ended) in the
        session's ``ratings.json``, replacing that role's earlier one; returns all ratings.

        Ratings are 1 to 5 (outcome: how good the result is; satisfaction: how the
        collaboration felt). ``steerability``, ``ease_of_use`` and ``utility`` are the Cocoa
        study's optional 1-5 items; an item left out is not written. ``pairwise`` answers the
        comparison with the autonomous agent's outcome (``"own"``, ``"autonomous"`` or
        ``"tie"``), only after :meth:`pairwise_offer` showed it to this seat; the order it was
        shown in is recorded, and ``pairwise_order``, when given, must be that order. Raises
        ``HostingError`` (404 unknown session, 400 bad values, 409 a pairwise answer to a
        question not shown, or shown in another order), having saved nothing.
        """
        entry = self._find(session_id)
        if not isinstance(role, str) or role not in entry.people:
            raise HostingError(_not_a_seat(role, entry.people), status=400)
        try:
            rating = Rating.model_validate({
                "outcome_rating": outcome_rating, "satisfaction": satisfaction,
                "comment": comment, "steerability": steerability, "ease_of_use": ease_of_use,
                "utility": utility, "pairwise": pairwise, "pairwise_order": pairwise_order})
        except ValidationError as error:
            raise HostingError(validation_message(error)) from None
        directory = entry.directory
        if directory is None:
            raise HostingError(f"Session {session_id!r} has no results directory.", status=409)
        shown = None
        if rating.pairwise is not None:
            shown = read_shown(directory).get(role)
            if shown is None:
                raise HostingError("pairwise: no comparison with the autonomous agent was "
                                   "shown to this seat.", status=409)
            if rating.pairwise_order is not None and rating.pairwise_order != shown.order:
                raise HostingError("pairwise_order: the comparison was shown in the order "
                                   f"{' | '.join(shown.order)}; reload the form.", status=409)
        ratings = self.ratings(session_id)
        stored = StoredRating(**rating.model_dump(exclude={"pairwise_order"}), ts=time.time(),
                              pairwise_order=shown.order if shown else None,
                              pairwise_baseline=shown.baseline if shown else None)
        # Unanswered items are left out, so a form without them writes the file it always
        # wrote.
        ratings[role] = stored.model_dump(exclude={
            item for item in (*LIKERT_ITEMS, *PAIRWISE_FIELDS) if getattr(stored, item) is None})
        directory.mkdir(parents=True, exist_ok=True)
        write_json(directory / RATINGS_FILE, ratings)
        return ratings

    async def pairwise_offer(self, session_id: str, role: str) -> PairwiseOffer:
        """The rating form's pairwise question for person seat ``role``: this session's
        outcome and the autonomous agent's on the same task and instance, in the order kept
        for the seat, or why there is none (see :mod:`cogym_lab.runtime.pairwise`). The
        baseline folders are searched in a worker thread, off the loop. Raises
        ``HostingError`` (404 unknown session, 400 no person seat, 409 not ended yet)."""
        entry = self._find(session_id)
        if not isinstance(role, str) or role not in entry.people:
            raise HostingError(_not_a_seat(role, entry.people), status=400)
        ended, outcome = _final_outcome(entry)
        if not ended:
            raise HostingError(f"Session {session_id!r} has not ended: its outcome is compared "
                               "once it is over.", status=409)
        directory = entry.directory
        if directory is None:
            raise HostingError(f"Session {session_id!r} has no results directory.", status=409)
        return await asyncio.to_thread(make_offer, directory, role, outcome,
                                       list(self.baselines), self.pairwise_rng)

    def ratings(self, session_id: str) -> dict[str, Any]:
        """The ratings saved for a session, by role (``{}`` when there are none)."""
        directory = self._find(session_id).directory
        path = directory / RATINGS_FILE if directory is not None else None
        if path is None or not path.is_file():
            return {}
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            log.warning("%s is not JSON; starting the ratings afresh", path)
            return {}

    # -- shutting down ------------------------------------------------------------------------

    async def close(self, wait: float = 10.0) -> None:
        """Interrupt every running session (the server is going down): nothing is ended, each
        is recorded as interrupted, and a later server can resume it."""
        self._panels.close()  # sockets closing as the server stops must not end any session
        for timer in self._evictions.values():
            timer.cancel()
        self._evictions.clear()
        running = [hosted for hosted in self.sessions.values() if hosted.status == "running"]
        for hosted in running:
            await hosted.live.interrupt(SHUTDOWN_REASON)
        runners = {hosted.runner for hosted in running if hosted.runner is not None}
        if runners:
            await asyncio.wait(runners, timeout=wait)


def _created_at(entry: HostedSession | StoredSession) -> float:
    return entry.created_at if isinstance(entry, HostedSession) else entry.record.created_at


def _final_outcome(entry: HostedSession | StoredSession) -> tuple[bool, Any]:
    """Whether the session has ended, and its final outcome. A hosted session's result has
    it once the run is over; before that (grading), the env's outcome is final as soon as the
    coordinator has ended."""
    if isinstance(entry, HostedSession) and isinstance(entry.session, Session):
        if entry.result is not None:
            return True, entry.result.outcome
        if entry.session.coordinator.end_reason is None:
            return False, None
        return True, entry.session.env.outcome()
    result = entry.details().get("result")
    if isinstance(result, dict):
        return True, result.get("outcome")
    return entry.status in ("finished", "failed"), None  # interrupted: it may go on


def _not_a_seat(role: Any, people: list[str]) -> str:
    seats = ", ".join(people) or "none"
    return f"{role!r} is not a person seat of this session (person seats: {seats})."


def _request(role: str, kind: StepKind, action: Any) -> StepRequest:
    if isinstance(action, dict):
        if not isinstance(action.get("name"), str):
            raise HostingError("An action object needs a 'name' (and optional 'args').")
        if not isinstance(action.get("args", {}), dict):
            raise HostingError("An action's 'args' must be an object.")
    elif not isinstance(action, str) or not action.strip():
        raise HostingError("'action' must be an action string or {\"name\": ..., \"args\": {...}}.")
    return StepRequest(role=role, kind=kind, action=action)
