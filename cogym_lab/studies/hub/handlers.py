"""The study's REST API under ``/cogym/study/api``, for the participant a request comes from.

Every request acts for its caller only: the participant is the caller's login (its anonymous
id, :meth:`StudyFolder.anonymous_id`), and no route takes another participant's id to read or
change (``participants/<id>`` answers ``403`` for any id but the caller's own). Under
JupyterHub a participant's requests reach only their own single-user server anyway; these
rules hold on one shared Jupyter server too.

* ``GET  state``: the current step, as the participant may see it (assigns on the first call);
* ``POST visit`` / ``POST left``: the study's page was opened / left (telemetry);
* ``POST consent`` ``{"agree": true}``;
* ``POST steps/<id>/start``: the session of a session (or practice) step, created once with
  the participant as its owner and person; again: the same session (coming back resumes it);
* ``POST steps/<id>/done``: an instructions, practice, session or comparison step is over (a
  session still running is ended; a session compared with a baseline starts the baseline's
  team alone on the same instance, see :mod:`cogym_lab.studies.hub.comparison`; a comparison
  step is over once both outcomes were shown);
* ``POST steps/<id>/answers`` ``{"answers": {item: answer}}``: a questionnaire, checked against
  its items (``400`` naming the item that does not fit).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from cogym_lab.runtime.access import SessionAccess
from cogym_lab.runtime.hosted import HostedSession
from cogym_lab.runtime.hosting import HostingError
from cogym_lab.server.handlers import CogymAPIHandler
from cogym_lab.studies.design import StudyDesign
from cogym_lab.studies.hub.comparison import (
    comparison_after,
    draw_order,
    needs_baseline,
    outcomes_view,
)
from cogym_lab.studies.hub.flow import FlowError, ParticipantFlow
from cogym_lab.studies.hub.sessions import spec_for
from cogym_lab.studies.hub.store import ParticipantState, SessionPlayed, StudyFolder
from cogym_lab.studies.hub.telemetry import StudyTelemetry
from cogym_lab.studies.steps import Step

log = logging.getLogger(__name__)

SETTINGS_KEY = "cogym_lab_study"


class StudyParts:
    """What the study's handlers share: its folder, design and telemetry, and one lock per
    participant (two tabs of one participant change one file)."""

    def __init__(self, folder: StudyFolder, design: StudyDesign,
                 telemetry: StudyTelemetry) -> None:
        self.folder = folder
        self.design = design
        self.telemetry = telemetry
        self.locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)


class StudyHandler(CogymAPIHandler):
    """A study request: the caller's participant, under that participant's lock."""

    @property
    def study(self) -> StudyParts:
        parts = self.settings.get(SETTINGS_KEY)
        if parts is None:
            raise HostingError("No study is set up on this server (c.CogymStudy.study_dir).",
                               status=404)
        return parts

    def participant(self) -> tuple[ParticipantState, bool]:
        return self.study.folder.arrive(self.who)

    def emit(self, event: str, state: ParticipantState, step: str = "",
             **detail: Any) -> None:
        self.study.telemetry.emit(event, state.participant, step, detail or None)

    def moved_on(self, flow: ParticipantFlow, finished: str) -> None:
        """Save the participant and say which step ended and which began."""
        self.study.folder.save(flow.state)
        self.emit("step_finished", flow.state, finished)
        self.emit("step_started", flow.state, flow.current.id)

    async def run(self, act: Any) -> None:
        """Answer with ``act(flow)``'s result (then the participant's view), or the error."""
        try:
            study = self.study
            state, new = self.participant()
            async with study.locks[state.participant]:
                state, _ = self.participant()  # as saved by the request before this one
                flow = ParticipantFlow(study.design, state)
                if new:
                    self.emit("assigned", state, number=state.number)
                    self.emit("step_started", state, flow.current.id)
                extra = await act(flow)
                view = flow.view()
                if flow.current.kind == "comparison":
                    view["step"].update(await self.comparison(flow, flow.current))
        except HostingError as error:
            return self.error(error.status, error.message)
        except FlowError as error:
            return self.error(error.status, error.message)
        self.send({**view, **(extra or {})})

    async def start_baseline(self, flow: ParticipantFlow, step: Step) -> None:
        """Run comparison ``step``'s baseline: its team alone (no person seat) on the
        instance of the participant's session; kept with the participant's sessions."""
        assert step.session is not None
        with self.parts.quota.place(self.who):
            hosted = await self.host.create(spec_for(step.session, step.instance, person=False),
                                            access=SessionAccess(owner=self.who))
        flow.state.sessions[step.id] = SessionPlayed(
            session_id=hosted.session_id, role="",
            results_dir=str(self.host.results_dir / hosted.session_id), started_at=time.time())
        order = draw_order(flow, step).order
        self.study.folder.save(flow.state)
        self.emit("baseline_started", flow.state, step.id, order=order)

    async def comparison(self, flow: ParticipantFlow, step: Step) -> dict[str, Any]:
        """What comparison ``step`` shows now (its baseline started if it has none yet)."""
        if needs_baseline(self.host, flow, step):
            await self.start_baseline(flow, step)
        shown = outcomes_view(self.host, flow, step)
        kept = draw_order(flow, step)
        if shown["ready"] and kept.shown_at is None:
            kept.shown_at = time.time()
            self.study.folder.save(flow.state)
            self.emit("comparison_shown", flow.state, step.id, order=kept.order)
        return shown


class StateHandler(StudyHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        async def nothing(flow: ParticipantFlow) -> None:
            return None

        await self.run(nothing)


class ParticipantHandler(StudyHandler):
    """``GET participants/<id>``: the caller's own state by id; anyone else's is refused."""

    @web.authenticated
    @authorized
    async def get(self, participant: str) -> None:
        try:
            own = self.study.folder.anonymous_id(self.who)
        except HostingError as error:
            return self.error(error.status, error.message)
        if participant != own:
            return self.error(403, "A participant sees only their own state.")

        async def nothing(flow: ParticipantFlow) -> None:
            return None

        await self.run(nothing)


class VisitHandler(StudyHandler):
    """``POST visit``: the study's page opened (``returned`` after the first time)."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        async def visit(flow: ParticipantFlow) -> None:
            self.refuse_oversized()
            flow.state.visits += 1
            self.study.folder.save(flow.state)
            if flow.state.visits > 1:
                self.emit("returned", flow.state, flow.current.id)

        await self.run(visit)


class LeftHandler(StudyHandler):
    """``POST left``: the study's page was closed or left."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        async def left(flow: ParticipantFlow) -> None:
            self.refuse_oversized()
            self.emit("left", flow.state, flow.current.id)

        await self.run(left)


class ConsentHandler(StudyHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        async def consent(flow: ParticipantFlow) -> None:
            body = self.json_body()
            step = flow.consent(body.get("agree"))
            self.emit("consented", flow.state, step.id)
            self.moved_on(flow, step.id)

        await self.run(consent)


_SESSION_KINDS = ("practice", "calibration", "session")


class StepHandler(StudyHandler):
    """``POST steps/<id>/<start|done|answers>``."""

    @web.authenticated
    @authorized
    async def post(self, step_id: str, verb: str) -> None:
        acts = {"start": self.start, "done": self.done, "answers": self.answers}
        act = acts.get(verb)
        if act is None:
            return self.error(404, f"No such step action (use {', '.join(acts)}).")

        async def on_step(flow: ParticipantFlow) -> dict[str, Any] | None:
            return await act(flow, step_id)

        await self.run(on_step)

    async def start(self, flow: ParticipantFlow, step_id: str) -> dict[str, Any] | None:
        self.refuse_oversized()
        step = flow.expect(step_id, *_SESSION_KINDS)
        played = flow.state.sessions.get(step.id)
        if played is not None:
            return None  # coming back: the same session
        assert step.session is not None
        parts = self.parts
        with parts.quota.place(self.who):
            hosted = await self.host.create(spec_for(step.session, step.instance),
                                            access=SessionAccess(owner=self.who))
        flow.state.sessions[step.id] = SessionPlayed(
            session_id=hosted.session_id, role=step.session.person,
            results_dir=str(self.host.results_dir / hosted.session_id), started_at=time.time())
        if flow.state.status in ("assigned", "consented"):
            flow.state.status = "in_progress"
        self.study.folder.save(flow.state)
        self.emit("session_started", flow.state, step.id)
        return None

    async def done(self, flow: ParticipantFlow, step_id: str) -> dict[str, Any] | None:
        self.refuse_oversized()
        step = flow.expect(step_id, "instructions", "comparison", *_SESSION_KINDS)
        if step.kind == "comparison":
            kept = flow.state.comparisons.get(step.id)
            if kept is None or kept.shown_at is None:
                raise FlowError(f"Step {step.id}'s two outcomes have not been shown yet.")
        played = flow.state.sessions.get(step.id)
        if step.kind in _SESSION_KINDS:
            if played is None:
                raise FlowError(f"Step {step.id}'s session has not started.")
            entry = self.host.find(played.session_id)
            reason = ""
            if isinstance(entry, HostedSession) and entry.status == "running":
                entry = await self.host.end(played.session_id, reason="the participant moved on")
            reason = str(entry.summary().get("end_reason") or "")
            played.ended_at = time.time()
            self.emit("session_ended", flow.state, step.id, end_reason=reason)
            compared = comparison_after(flow, step)
            if compared is not None and needs_baseline(self.host, flow, compared):
                try:  # now, so that it runs while the participant answers
                    await self.start_baseline(flow, compared)
                except HostingError as error:  # tried again when the comparison step begins
                    log.warning("the baseline of %s could not start: %s", compared.id,
                                error.message)
        flow.finish(step)
        self.moved_on(flow, step.id)
        return None

    async def answers(self, flow: ParticipantFlow, step_id: str) -> dict[str, Any] | None:
        body = self.json_body()
        step, stored = flow.answer(step_id, body.get("answers"))
        self.emit("answer_submitted", flow.state, step.id, items=len(stored))
        self.moved_on(flow, step.id)
        return None


_STEP = r"(?P<step_id>[A-Za-z0-9_-]{1,100})"

HANDLERS: list[tuple[str, type[web.RequestHandler]]] = [
    (r"/cogym/study/api/state/?", StateHandler),
    (r"/cogym/study/api/visit/?", VisitHandler),
    (r"/cogym/study/api/left/?", LeftHandler),
    (r"/cogym/study/api/consent/?", ConsentHandler),
    (r"/cogym/study/api/participants/(?P<participant>[^/]{1,200})/?", ParticipantHandler),
    (rf"/cogym/study/api/steps/{_STEP}/(?P<verb>[a-z]{{1,20}})/?", StepHandler),
]

__all__ = ["HANDLERS", "SETTINGS_KEY", "StudyParts"]
