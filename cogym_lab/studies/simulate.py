"""The simulated arm of a study: the whole design, walked by simulated participants.

Participant *i* (anonymous id ``sim-0001`` for *i* = 0) gets :func:`sequence_for` ``(design, i,
seed)`` and walks :func:`plan_steps`, as a person would: consent and instructions are recorded
as events; practice, calibration and study sessions run for real (``build_session``), with the
person's seat taken by a simulated user; the questionnaires due are answered; then the export
(:func:`write_export`, arm ``simulated``) is written to the output folder, with each session's
results folder under ``sessions/PARTICIPANT/STEP``.

Who takes the person's seat:

* by default, the LM simulated user (``simulated``, with the task's hidden information and the
  condition's ``simulated_traits``); a seat the team fills with a rule-based partner of kind
  ``agent`` (the kitchen's partners, which stand in for the person in DPT-Agent's experiments)
  keeps it. Questionnaire items are answered by the same LM, one JSON answer per item, checked
  against the item's kind (one repair prompt, then the item is left unanswered and an event
  says so);
* with ``scripted``, the questionnaires are answered by rule, deterministically, from the
  sessions' outcomes and the traits (no LM for them), and the seat goes to the rule-based member
  the team file puts there where it has one (the todo task's ``example-user``, the kitchen's
  partners: no LM for the person at all). Tasks with no rule-based user (travel planning,
  related work, tabular analysis, and Cocoa's plans on any of them) keep the team's LM
  simulated user in the seat: give it a model, or point it at a scripted OpenAI-compatible
  server (as the tests do) for a run with no real LM anywhere. A clocked task (the kitchen)
  runs at its fastest clock (``MIN_TICK_SECONDS`` a tick) unless the design sets
  ``tick_seconds``: rule-based chefs do not need the time, and the game's ticks are the same.

A condition that ``compare_with`` a baseline has its ``comparison`` step played too: the
baseline's team (the autonomous agent) runs alone on the same instance, its session row is
written under the baseline condition, and the participant's ``comparison`` answers weigh their
own outcome against it (scripted: the better performance wins, equal ones tie).

The session's modes are honoured where a session can: ``turns`` makes the session turn-based;
``plans``/``chat`` is the team's (a team with or without plans); ``moves``/``macros`` (what a
person may do in the kitchen) does not change a simulated participant, who is a rule-based chef
or an LM, and is recorded in a ``session_mode`` event (``person_controls``) for the hub and the
analysis. ``SimulationSettings.time_limit`` caps every session's time and ``env_args`` sets task
arguments for every session whose task takes them (a quick pilot: shorter kitchen games).

A simulation resumes: each participant's rows are kept in ``participants/PARTICIPANT.json`` once
they finished, and a run again with the same folder skips them (a participant cut short starts
again from consent).
"""

from __future__ import annotations

import inspect
import json
import math
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from cogym_lab.core.env import MIN_TICK_SECONDS
from cogym_lab.envs.registry import task_class
from cogym_lab.errors import CogymError
from cogym_lab.lm import LM, LMConfig, LMError, make_lm
from cogym_lab.members import member_type
from cogym_lab.prompts import render
from cogym_lab.records.trajectory import load_session
from cogym_lab.sessions import EVERY_LM, SessionBuildError, SessionSpec, build_session
from cogym_lab.studies.assignment import sequence_for
from cogym_lab.studies.design import (
    ChoiceItem,
    FreeTextItem,
    Item,
    LikertItem,
    Questionnaire,
    RankingItem,
    SessionPlan,
    StudyDesign,
    TaskLoadItem,
)
from cogym_lab.studies.designs import StudyDesignError, load_design
from cogym_lab.studies.session_rows import session_row
from cogym_lab.studies.steps import Step, plan_steps
from cogym_lab.studies.tables import (
    AnswerRow,
    EventRow,
    ParticipantRow,
    SessionRow,
    write_export,
)
from cogym_lab.teams.config import MemberConfig, TeamConfig, load_team
from cogym_lab.users.traits import check_traits

SIMULATION_FILE = "simulation.json"
PARTICIPANTS_DIR = "participants"
SESSIONS_DIR = "sessions"
#: The task-load form's subscales (NASA-TLX), each 0-100 in steps of 5.
TASK_LOAD_SCALES = ("mental", "physical", "temporal", "performance", "effort", "frustration")
#: The LM simulated user's options when the team's seat holds no simulated user of its own
#: (those of the ready collaborative teams).
DEFAULT_PERSONA = {"proactive_feedback": True, "proactive_action": True, "lazy": True,
                   "max_turns": 30}


class SimulationError(CogymError, ValueError):
    """A design that cannot be simulated as asked, or a folder holding another simulation."""


class ParticipantRecord(BaseModel):
    """What one finished simulated participant left: their rows of the four tables."""

    model_config = ConfigDict(extra="forbid")

    participant: ParticipantRow
    sessions: list[SessionRow]
    answers: list[AnswerRow]
    events: list[EventRow]


@dataclass(frozen=True)
class SimulationSettings:
    """How to simulate: ``scripted`` (rule-based people, no LM for them), the LM settings by
    key as a session spec takes them (``"*"``, a role, ``"tools"``), and the assignment seed."""

    scripted: bool = False
    lm: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    seed: int = 0
    #: Seconds every session may take at most (the design's own limit, if shorter, stays).
    time_limit: float | None = None
    #: Task arguments for every session whose task takes them (``{"ticks": 60}``).
    env_args: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class SimulationSummary:
    out: Path
    participants: int
    ran: int
    skipped: int
    counts: dict[str, int]


def load_study_design(name_or_path: str | Path) -> StudyDesign:
    """A ready design by name, or a design file (TOML) by path, checked against this
    installation (:func:`cogym_lab.studies.designs.load_design`)."""
    try:
        return load_design(name_or_path)
    except StudyDesignError as error:
        raise SimulationError(str(error)) from None


def participant_id(number: int) -> str:
    """The anonymous id of simulated participant ``number`` (0-based): ``sim-0001``..."""
    return f"sim-{number + 1:04d}"


async def simulate_study(design: StudyDesign, out: Path, participants: int, *,
                         settings: SimulationSettings = SimulationSettings(),
                         on_participant: Callable[[str, bool], None] | None = None,
                         ) -> SimulationSummary:
    """Simulate ``participants`` participants of ``design`` into ``out`` (see the module
    docstring); ``on_participant(id, skipped)`` is called as each one is done."""
    if participants < 1:
        raise SimulationError("simulate one participant or more")
    _check_env_args(design, settings.env_args)
    _claim(out, design, settings)
    records: list[ParticipantRecord] = []
    ran = skipped = 0
    for number in range(participants):
        pid = participant_id(number)
        record = _kept(out, pid)
        done_before = record is not None
        if record is not None:
            skipped += 1
        else:
            record = await _Participant(design, number, out, settings).walk()
            _keep(out, record)
            ran += 1
        records.append(record)
        if on_participant is not None:
            on_participant(pid, done_before)
    counts = write_export(
        out, design=design.name, arm="simulated",
        participants=[r.participant for r in records],
        sessions=[row for r in records for row in r.sessions],
        answers=[row for r in records for row in r.answers],
        events=[row for r in records for row in r.events])
    return SimulationSummary(out=out, participants=participants, ran=ran, skipped=skipped,
                             counts=counts)


def _kept(out: Path, participant: str) -> ParticipantRecord | None:
    """The rows of ``participant`` if they finished in an earlier run; else ``None``, and
    whatever sessions they left are cleared (a participant cut short starts afresh)."""
    kept = out / PARTICIPANTS_DIR / f"{participant}.json"
    if kept.is_file():
        return ParticipantRecord.model_validate_json(kept.read_text(encoding="utf-8"))
    shutil.rmtree(out / SESSIONS_DIR / participant, ignore_errors=True)
    return None


def _keep(out: Path, record: ParticipantRecord) -> None:
    kept = out / PARTICIPANTS_DIR / f"{record.participant.participant}.json"
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(record.model_dump_json(indent=1), encoding="utf-8")


def _takes(task: str, argument: str) -> bool:
    """Whether ``task``'s constructor takes ``argument``."""
    factory = task_class(task)
    if factory is None:
        return False
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    return argument in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


def _check_env_args(design: StudyDesign, env_args: Mapping[str, Any]) -> None:
    """Refuse a task argument that no session of the design takes (a typo, most likely)."""
    plans = [c.session for c in design.conditions] + [
        r.session for r in [*design.practice, *design.calibration]]
    for key in env_args:
        if not any(_takes(plan.task, key) for plan in plans):
            tasks = ", ".join(sorted({plan.task for plan in plans}))
            raise SimulationError(f"No session of {design.name!r} takes the task argument "
                                  f"{key!r} (its tasks: {tasks}).")


def _claim(out: Path, design: StudyDesign, settings: SimulationSettings) -> None:
    """Mark ``out`` as this simulation's; refuse a folder that holds another one."""
    out.mkdir(parents=True, exist_ok=True)
    mine: dict[str, Any] = {"design": design.model_dump(mode="json"), "seed": settings.seed,
                            "scripted": settings.scripted}
    if settings.time_limit is not None or settings.env_args:  # older folders lack them
        mine["time_limit"] = settings.time_limit
        mine["env_args"] = dict(settings.env_args)
    marker = out / SIMULATION_FILE
    if marker.is_file():
        kept = json.loads(marker.read_text(encoding="utf-8"))
        if kept != mine:
            raise SimulationError(f"{out} holds a simulation of another design, seed or kind "
                                  "(--scripted or not, time limit, task arguments); give "
                                  "another --out folder.")
        return
    marker.write_text(json.dumps(mine, indent=1), encoding="utf-8")


class _Participant:
    """One simulated participant walking their steps."""

    def __init__(self, design: StudyDesign, number: int, out: Path,
                 settings: SimulationSettings) -> None:
        self.design = design
        self.id = participant_id(number)
        self.number = number
        self.out = out
        self.settings = settings
        self.sequence = sequence_for(design, number, settings.seed)
        self.sessions: list[SessionRow] = []  # the participant's own, practice included
        self.rows: list[SessionRow] = []  # for sessions.csv: theirs and the baselines', in order
        self.answers: list[AnswerRow] = []
        self.events: list[EventRow] = []
        #: position (or ``baseline-POSITION``) -> what the person saw, for LM answers
        self.summaries: dict[int | str, str] = {}
        self.baselines: dict[int, SessionRow] = {}  # position -> the baseline compared with
        self._lm: LM | None = None

    async def walk(self) -> ParticipantRecord:
        started = time.time()
        try:
            for step in plan_steps(self.design, self.sequence, self.number):
                self._event("step_started", step.id)
                if step.kind == "consent":
                    self._event("consented", step.id)
                elif step.kind in ("practice", "calibration", "session"):
                    await self._play(step)
                elif step.kind == "comparison":
                    await self._baseline(step)
                elif step.kind == "questionnaire":
                    await self._answer(step)
                self._event("step_finished", step.id)
        finally:
            if self._lm is not None:
                await self._lm.aclose()
        traits = dict.fromkeys(t for name in self.sequence
                               for t in self.design.condition(name).simulated_traits)
        participant = ParticipantRow(
            participant=self.id, arm="simulated", sequence="|".join(self.sequence),
            status="finished", started_at=started, finished_at=time.time(),
            traits="|".join(traits))
        return ParticipantRecord(participant=participant, sessions=self.rows,
                                 answers=self.answers, events=self.events)

    def _event(self, event: str, step: str = "", **detail: Any) -> None:
        self.events.append(EventRow(participant=self.id, ts=time.time(), event=event, step=step,
                                    detail=json.dumps(detail) if detail else ""))

    def _traits(self, step: Step) -> tuple[str, ...]:
        if step.kind != "session":
            return ()  # practice rounds are played as the cooperative default
        return check_traits(self.design.condition(step.condition).simulated_traits)

    # -- sessions ------------------------------------------------------------------------------

    async def _play(self, step: Step) -> None:
        plan = step.session
        assert plan is not None and step.instance is not None  # a session step has both
        traits = self._traits(step)
        team = self._team(plan, traits, step)
        self._event("session_mode", step.id, **session_mode(plan))
        await self._run(step, plan, team, traits, person=plan.person)

    async def _baseline(self, step: Step) -> None:
        """A comparison step: the baseline's team alone on the session's instance."""
        plan = step.session
        assert plan is not None and step.instance is not None  # a comparison step has both
        try:
            team = load_team(plan.team)
        except (FileNotFoundError, ValueError) as error:
            raise SimulationError(f"{step.id}: {error}") from None
        await self._run(step, plan, team, (), person="")

    def _limits(self, plan: SessionPlan) -> dict[str, Any]:
        limits: dict[str, Any] = {}
        caps = [t for t in (plan.time_limit_seconds, self.settings.time_limit) if t is not None]
        if caps:
            limits["timeout"] = min(caps)
        if "turns" in plan.mode:
            limits["interaction"] = "turns"
        return limits

    async def _run(self, step: Step, plan: SessionPlan, team: TeamConfig,
                   traits: Sequence[str], *, person: str) -> None:
        assert step.instance is not None
        results = self.out / SESSIONS_DIR / self.id / step.id
        limits = self._limits(plan)
        try:
            spec = SessionSpec.model_validate({
                "task": plan.task, "instance": step.instance, "env_args": self._env_args(plan),
                "team": team, "lm": self._lm_settings(team, baseline=not person),
                "limits": limits})
            session = build_session(spec, results_dir=results)
        except (SessionBuildError, ValidationError) as error:
            raise SimulationError(f"{self.id}, step {step.id} ({plan.task}, team "
                                  f"{plan.team}): {error}") from None
        hidden = session.env.hidden_information()
        await session.run()
        record = load_session(results)
        row = session_row(record, participant=self.id, position=step.position,
                          condition=step.condition, label=step.label,
                          practice=step.kind not in ("session", "comparison"),
                          instance=step.instance, person=person, traits="|".join(traits))
        if step.kind == "comparison":
            self.baselines[step.position] = row
        else:
            self.sessions.append(row)
        self.rows.append(row)
        chat = "\n".join(f"[{m.sender}] {m.text}" for m in record.messages[-30:])
        key = step.position if step.kind != "comparison" else f"baseline-{step.position}"
        self.summaries[key] = render(
            "cogym_lab.studies", "session_summary", label=step.label or step.title,
            task=session.env.task_description, hidden=hidden or "(nothing beyond the request)",
            chat=chat or "(no messages)", end_reason=row.end_reason or "unknown",
            delivered="yes" if row.delivered else "no")

    def _lm_settings(self, team: TeamConfig, *, baseline: bool) -> dict[str, dict[str, Any]]:
        """The LM settings for a session; a baseline (the agent alone) drops those of seats it
        does not have (the simulated user's)."""
        return {k: dict(v) for k, v in self.settings.lm.items()
                if not baseline or k in (EVERY_LM, "tools") or k in team.members}

    def _env_args(self, plan: SessionPlan) -> dict[str, Any]:
        args = dict(plan.env_args)
        args.update({k: v for k, v in self.settings.env_args.items() if _takes(plan.task, k)})
        factory = task_class(plan.task)
        if self.settings.scripted and "tick_seconds" not in args and factory is not None:
            try:
                clocked = "tick_seconds" in inspect.signature(factory).parameters
            except (TypeError, ValueError):
                clocked = False
            if clocked:  # rule-based chefs need no wall time: the same ticks, sooner
                args["tick_seconds"] = MIN_TICK_SECONDS
        return args

    def _team(self, plan: SessionPlan, traits: Sequence[str], step: Step) -> TeamConfig:
        """The condition's team with the simulated participant in the person's seat."""
        try:
            team = load_team(plan.team)
        except (FileNotFoundError, ValueError) as error:
            raise SimulationError(f"{step.id}: {error}") from None
        seat = plan.person
        member = team.members.get(seat)
        stand_in = member is not None and not member.is_person \
            and member_type(member.type).kind == "agent"  # a partner playing the person
        # Scripted: the team's own member stays (rule-based where the task has one, else its LM
        # simulated user); otherwise the LM simulated user takes every seat but a stand-in's.
        keep = member is not None and not member.is_person if self.settings.scripted \
            else stand_in
        if not keep:
            own = member is not None and member.type == "simulated"
            member = MemberConfig(
                type="simulated",
                lm=dict(member.lm) if own and member is not None else {"temperature": 0.0},
                options={**DEFAULT_PERSONA, **(member.options if own and member else {})})
        assert member is not None
        if traits:
            if member_type(member.type).takes_traits:
                given = check_traits(member.options.get("traits"))
                member = member.model_copy(update={"options": {
                    **member.options, "traits": list(dict.fromkeys([*given, *traits]))}})
            else:
                self._event("traits_not_applied", step.id, member_type=member.type,
                            traits=list(traits))
        return team.model_copy(update={"members": {**team.members, seat: member}})

    # -- questionnaires ------------------------------------------------------------------------

    async def _answer(self, step: Step) -> None:
        questionnaire = next(q for q in self.design.questionnaires
                             if q.name == step.questionnaire)
        about = self._about(step, questionnaire)
        traits = self._traits_of(step)
        labels = list(dict.fromkeys(row.label for row in self.sessions if not row.practice))
        for item in questionnaire.items:
            if self.settings.scripted:
                baseline = self.baselines.get(step.position) \
                    if questionnaire.after == "comparison" else None
                parts: list[tuple[str, str]] | None = scripted_answer(
                    item, about, traits, labels, self.sessions, baseline=baseline)
            else:
                parts = await self._lm_answer(item, step, questionnaire, about, labels)
            if parts is None:
                continue
            for part, value in parts:
                self.answers.append(AnswerRow(
                    participant=self.id, questionnaire=questionnaire.name,
                    moment=questionnaire.after, condition=step.condition,
                    position=step.position, item=item.name, kind=item.kind, part=part,
                    value=value))

    def _about(self, step: Step, questionnaire: Questionnaire) -> list[SessionRow]:
        """The sessions a questionnaire asks about: the one just played, the condition's
        block, or all of them at the end."""
        played = [row for row in self.sessions if not row.practice]
        if questionnaire.after == "end":
            return played
        if questionnaire.after == "session":
            return [row for row in played if row.position == step.position]
        block: list[SessionRow] = []
        for row in reversed(played):
            if row.condition != step.condition:
                break
            block.insert(0, row)
        return block

    def _traits_of(self, step: Step) -> tuple[str, ...]:
        if step.condition:
            return check_traits(self.design.condition(step.condition).simulated_traits)
        return check_traits(list(dict.fromkeys(
            t for name in self.sequence for t in self.design.condition(name).simulated_traits)))

    async def _lm_answer(self, item: Item, step: Step, questionnaire: Questionnaire,
                         about: list[SessionRow], labels: list[str]
                         ) -> list[tuple[str, str]] | None:
        lm = self._answer_lm()
        shown: list[int | str] = [row.position for row in about]
        if questionnaire.after == "comparison":
            shown.append(f"baseline-{step.position}")
        sessions = "\n\n".join(self.summaries[key] for key in shown if key in self.summaries)
        context = render("cogym_lab.studies", "answer_context",
                         traits=", ".join(self._traits_of(step)) or "none",
                         sessions=sessions or "(no sessions yet)")
        instruction = render("cogym_lab.studies", "answer_item",
                             title=questionnaire.title or questionnaire.name, text=item.text,
                             form=answer_form(item, labels))
        messages: list[dict[str, str]] = [{"role": "system", "content": context},
                                          {"role": "user", "content": instruction}]
        reply = ""
        try:
            for attempt in range(2):
                reply = (await lm.complete(messages, purpose="questionnaire")).text
                try:
                    return read_answer(item, reply, labels)
                except ValueError as problem:
                    if attempt:
                        raise
                    messages += [{"role": "assistant", "content": reply},
                                 {"role": "user", "content": render(
                                     "cogym_lab.studies", "repair_answer", error=problem,
                                     form=answer_form(item, labels))}]
        except ValueError as problem:
            self._event("answer_unusable", step.id, item=item.name, error=str(problem),
                        reply=reply[:500])
        except LMError as error:
            self._event("answer_unusable", step.id, item=item.name, error=str(error))
        return None

    def _answer_lm(self) -> LM:
        if self._lm is None:
            settings = {**self.settings.lm.get("*", {}), **self.settings.lm.get("user", {})}
            config = LMConfig.resolve(arguments=settings, toml={"temperature": 0.0})
            self._lm = make_lm(config, member="the simulated participant")
            self._lm.log_to(self.out / SESSIONS_DIR / self.id / "questionnaire_calls.jsonl")
        return self._lm


# -- answers ---------------------------------------------------------------------------------

def _mean_performance(rows: Sequence[SessionRow]) -> float:
    values = [row.performance if row.performance is not None else
              (0.5 if row.delivered else 0.0) for row in rows]
    return sum(values) / len(values) if values else 0.5


def _fives(value: float) -> str:
    return str(int(min(100, max(0, 5 * round(value / 5)))))


def session_mode(plan: SessionPlan) -> dict[str, Any]:
    """What a session's modes mean for it, as the ``session_mode`` event records them:
    ``interaction`` (turns or notifications), ``plans`` (the team's choice), and for a real-time
    task ``person_controls`` (``moves``: move and interact only; ``macros``: macro actions too),
    which the hub applies to a person's panel and a simulated participant does not need."""
    detail: dict[str, Any] = {"mode": list(plan.mode),
                              "interaction": "turns" if "turns" in plan.mode else "notifications"}
    if "plans" in plan.mode or "chat" in plan.mode:
        detail["plans"] = "plans" in plan.mode
    if "moves" in plan.mode or "macros" in plan.mode:
        detail["person_controls"] = "macros" if "macros" in plan.mode else "moves"
    return detail


def _pairwise(item: ChoiceItem, own: float, baseline: float) -> str | None:
    """``own``, ``autonomous`` or ``tie`` for a pairwise item (None for another choice)."""
    if not {"own", "autonomous", "tie"} <= set(item.options):
        return None
    if abs(own - baseline) < 1e-9:
        return "tie"
    return "own" if own > baseline else "autonomous"


def scripted_answer(item: Item, about: Sequence[SessionRow], traits: Sequence[str],
                    labels: Sequence[str], played: Sequence[SessionRow], *,
                    baseline: SessionRow | None = None) -> list[tuple[str, str]]:
    """A scripted participant's answer to ``item`` as ``(part, value)`` rows: it follows from
    how the sessions asked about went (their mean performance) and the traits; a pairwise
    choice after a comparison weighs that against the ``baseline``'s performance."""
    performance = _mean_performance(about)
    if isinstance(item, LikertItem):
        value = 1 + round(performance * (item.points - 1))
        value -= ("sceptical" in traits) + ("impatient" in traits
                                             and not all(r.delivered for r in about))
        return [("", str(min(item.points, max(1, value))))]
    if isinstance(item, FreeTextItem):
        if "terse" in traits:
            return [("", "ok" if performance >= 0.5 else "not good")]
        endings = ", ".join(sorted({r.end_reason or "unknown" for r in about})) or "none"
        return [("", f"The work got {performance:.0%} of the way (ended: {endings}).")]
    if isinstance(item, RankingItem):
        by_label = {label: _mean_performance([r for r in played if r.label == label
                                              and not r.practice]) for label in labels}
        ranked = sorted(labels, key=lambda label: -by_label[label])  # stable: first met first
        return [(label, str(rank)) for rank, label in enumerate(ranked, 1)]
    if isinstance(item, ChoiceItem):
        if baseline is not None:
            picked = _pairwise(item, performance, _mean_performance([baseline]))
            if picked is not None:
                return [("", picked)]
        index = 0 if performance >= 2 / 3 else (len(item.options) - 1 if performance < 1 / 3
                                                else len(item.options) // 2)
        return [("", item.options[index])]
    assert isinstance(item, TaskLoadItem)
    load = {"mental": 50.0, "physical": 10.0, "temporal": 70.0 if "impatient" in traits else 40.0,
            "performance": 100 * (1 - performance),
            "effort": 70.0 if "confused" in traits else 50.0,
            "frustration": 60 * (1 - performance) + (20 if "sceptical" in traits else 0)}
    return [(scale, _fives(load[scale])) for scale in TASK_LOAD_SCALES]


def answer_form(item: Item, labels: Sequence[str]) -> str:
    """The JSON an LM is asked to answer ``item`` with, in words and an example."""
    if isinstance(item, LikertItem):
        return (f'{{"answer": N}} where N is a whole number from 1 ("{item.low}") to '
                f'{item.points} ("{item.high}")')
    if isinstance(item, FreeTextItem):
        return '{"answer": "your answer in one or two sentences"}'
    if isinstance(item, RankingItem):
        return (f'{{"answer": [...]}} listing each of {json.dumps(list(labels))} once, best '
                "first")
    if isinstance(item, ChoiceItem):
        return f'{{"answer": "..."}} with exactly one of {json.dumps(item.options)}'
    return ('{"answer": {"mental": N, "physical": N, "temporal": N, "performance": N, '
            '"effort": N, "frustration": N}} where each N is 0 to 100 in steps of 5 (for '
            '"performance", 0 means you did perfectly and 100 that you failed)')


def read_answer(item: Item, reply: str, labels: Sequence[str]) -> list[tuple[str, str]]:
    """The ``(part, value)`` rows an LM's JSON ``reply`` gives for ``item``; ``ValueError``
    saying what is wrong when it does not fit the item's kind."""
    start, end = reply.find("{"), reply.rfind("}")
    if start < 0 or end < start:
        raise ValueError("the reply holds no JSON object")
    try:
        data = json.loads(reply[start:end + 1])
    except ValueError:
        raise ValueError("the reply's JSON does not parse") from None
    if not isinstance(data, dict) or "answer" not in data:
        raise ValueError('the JSON has no "answer"')
    answer = data["answer"]
    if isinstance(item, LikertItem):
        if isinstance(answer, bool) or not isinstance(answer, int | float) \
                or answer != int(answer) or not 1 <= answer <= item.points:
            raise ValueError(f"the answer must be a whole number from 1 to {item.points}")
        return [("", str(int(answer)))]
    if isinstance(item, FreeTextItem):
        if not isinstance(answer, str):
            raise ValueError("the answer must be text")  # noqa: TRY004 - a reply to repair
        text = " ".join(answer.split())
        if item.required and not text:
            raise ValueError("the answer may not be empty")
        return [("", text)]
    if isinstance(item, RankingItem):
        if not isinstance(answer, list) or sorted(map(str, answer)) != sorted(labels):
            raise ValueError(f"the answer must list each of {', '.join(labels)} once")
        return [(str(label), str(rank)) for rank, label in enumerate(answer, 1)]
    if isinstance(item, ChoiceItem):
        if answer not in item.options:
            raise ValueError(f"the answer must be one of {', '.join(item.options)}")
        return [("", str(answer))]
    if not isinstance(answer, dict) or set(answer) != set(TASK_LOAD_SCALES):
        raise ValueError(f"the answer must give {', '.join(TASK_LOAD_SCALES)}")
    rows = []
    for scale in TASK_LOAD_SCALES:
        value = answer[scale]
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or math.isnan(value) or not 0 <= value <= 100:
            raise ValueError(f"{scale} must be a number from 0 to 100")
        rows.append((scale, _fives(float(value))))
    return rows


__all__ = ["ParticipantRecord", "SimulationError", "SimulationSettings", "SimulationSummary",
           "answer_form", "load_study_design", "participant_id", "read_answer",
           "scripted_answer", "session_mode", "simulate_study"]
