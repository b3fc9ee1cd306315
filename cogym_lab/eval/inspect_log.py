"""Runs as Inspect AI logs, so that ``inspect view`` opens them beside other evaluations.

    cogym-lab eval export runs/collaborative --format inspect --out logs/
    inspect view --log-dir logs/

The log is built with ``inspect_ai``'s own models (the optional extra ``cogym_lab[inspect]``)
and written by its own writer, so it is whatever Inspect reads. What goes where:

* one ``EvalLog`` per run folder (one task, one team, one protocol); sessions given on their
  own, outside a run folder, are grouped by task, agent type and model, one log per group;
* one ``EvalSample`` per session: ``id`` the instance, ``epoch`` the trial (from 1), ``input``
  the task's description, ``messages`` the team's chat (the human side as ``user``, agents as
  ``assistant``, the member's role in each message's metadata), ``output`` the outcome,
  ``scores`` the session's scores with the grader's reasons as their explanation, ``metadata``
  the session id, protocol, outcome class, failure, data (sample or full) and provenance;
* the sample's events: the session's log events as ``InfoEvent``, each member's LM calls
  (from its ``lm_calls.jsonl``) as ``ModelEvent`` with prompt, reply and token use, and the
  scores as ``ScoreEvent``, in time order;
* token use per model (``model_usage``) and per member (``role_usage``), for each sample and
  the whole log.

``target`` stays empty: no task states a reference answer in the open (the tabular task's gold
hypotheses are sealed). A session that ended for a cause outside the team (an LM that failed
past its retries, a crash) carries that cause as the sample's ``error``, and the log's means
leave it out, as the report does by default. The format is documented in
``docs/evaluation.md`` ("Inspect AI logs").
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from cogym_lab._version import __version__
from cogym_lab.core.outcome_class import OUTCOME_CLASSES
from cogym_lab.core.text import clean, clean_text
from cogym_lab.eval.metrics.outcome import collab_score
from cogym_lab.eval.session_metrics import task_description
from cogym_lab.records.trajectory import SessionRecord, find_sessions, load_session

#: The oldest ``inspect_ai`` the export is tested with (samples gained ``role_usage`` in it);
#: keep it equal to the bound of the ``inspect`` extra in ``pyproject.toml``.
MIN_VERSION = (0, 3, 185)
#: What to install when ``inspect_ai`` is missing or too old.
EXTRA_HINT = (f"The Inspect export needs the inspect_ai package, version "
              f"{'.'.join(map(str, MIN_VERSION))} or later: pip install 'cogym_lab[inspect]' "
              f"(or pip install -U inspect-ai).")

if TYPE_CHECKING:
    from inspect_ai.event import Event as InspectEvent
    from inspect_ai.log import EvalLog, EvalPlan, EvalResults, EvalSample
    from inspect_ai.model import ChatMessage, ModelOutput, ModelUsage
    from inspect_ai.scorer import Score


def _version_tuple(text: str) -> tuple[int, ...]:
    """The release numbers at the start of a version (``0.3.185.dev3`` -> ``(0, 3, 185)``)."""
    release = re.match(r"\d+(\.\d+)*", text)
    return tuple(int(part) for part in release.group().split(".")) if release else (0,)


def require_inspect() -> str:
    """The installed ``inspect_ai``'s version; ``ImportError`` naming the extra when it is
    missing or older than :data:`MIN_VERSION`.

    ``inspect_ai`` is imported only here and in the functions that build a log, so that this
    module imports (and ``cogym-lab`` starts) without the extra.
    """
    try:
        import inspect_ai
    except ImportError as missing:
        raise ImportError(EXTRA_HINT) from missing
    version = str(getattr(inspect_ai, "__version__", "0"))
    if _version_tuple(version) < MIN_VERSION:
        raise ImportError(f"{EXTRA_HINT} Installed: {version}.")
    return version


LogFormat = Literal["eval", "json"]
#: Suffixes of the files Inspect reads, by format.
SUFFIXES: dict[str, LogFormat] = {".eval": "eval", ".json": "json"}
#: The model named for a team whose agents use no LM (Inspect's own name for "no model").
NO_MODEL = "none/none"


@dataclass
class InspectExportSummary:
    """What an Inspect export wrote."""

    paths: list[Path] = field(default_factory=list)  # one log file per run (or group)
    sessions: int = 0
    skipped: dict[str, str] = field(default_factory=dict)  # session folder -> why


# -- small conversions ---------------------------------------------------------------------------

def _iso(seconds: float | None, timespec: str = "auto") -> str | None:
    if seconds is None or not math.isfinite(seconds):
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec=timespec)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _call_end(call: dict[str, Any]) -> float | None:
    """When a logged LM call's reply arrived, as epoch seconds."""
    try:
        return datetime.fromisoformat(str(call.get("time"))).timestamp()
    except ValueError:
        return None


def _text(value: Any) -> str:
    """A text for Inspect: valid Unicode (a lone surrogate cannot be written as UTF-8)."""
    if isinstance(value, str):
        return clean_text(value)
    return json.dumps(clean(value), ensure_ascii=False, indent=1)


def _short_hash(*parts: str) -> str:
    """A stable id, so exporting the same run twice gives the same log ids."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "replace")).hexdigest()[:22]


def _usage(prompt: int, completion: int) -> ModelUsage:
    from inspect_ai.model import ModelUsage

    return ModelUsage(input_tokens=prompt, output_tokens=completion,
                      total_tokens=prompt + completion)


def _add_usage(into: dict[str, ModelUsage], key: str, usage: ModelUsage) -> None:
    into[key] = into[key] + usage if key in into else usage


def _prompt_message(message: Any, identifier: str) -> ChatMessage:
    """One message of a logged prompt as Inspect's chat message."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser

    if not isinstance(message, dict):
        return ChatMessageUser(id=identifier, content=_text(message))
    role = message.get("role")
    content = _text(message.get("content") or "")
    if role == "system":
        return ChatMessageSystem(id=identifier, content=content)
    if role == "assistant":
        return ChatMessageAssistant(id=identifier, content=content)
    if role == "user":
        return ChatMessageUser(id=identifier, content=content)
    # a role Inspect's chat has no plain message for (a tool result): kept as the user's, its
    # role named, rather than dropped
    return ChatMessageUser(id=identifier, content=content, metadata={"role": _text(str(role))})


def _stable_ids(output: ModelOutput, identifier: str) -> ModelOutput:
    """``output`` with its messages' ids derived from ``identifier`` instead of drawn at
    random, so that exporting the same run twice writes the same log."""
    for number, choice in enumerate(output.choices):
        choice.message.id = f"{identifier}:{number}"
    return output


# -- one session ---------------------------------------------------------------------------------

def _sample_id(record: SessionRecord) -> int | str:
    """The session's instance: its number in the run (or the task's instance argument), else
    the env arguments that pick it, as JSON."""
    batch = record.session.get("batch")
    number = batch.get("instance") if isinstance(batch, dict) else None
    if isinstance(number, int) and not isinstance(number, bool):
        return number
    instance = record.instance
    return int(instance) if instance.isdigit() else instance


def _member_model(record: SessionRecord, role: str) -> str | None:
    usage = record.members.get(role, {}).get("usage") or {}
    lm_usage = (record.session.get("lm_usage") or {}).get(role) or {}
    model = usage.get("model") or lm_usage.get("model")
    return str(model) if model else None


def _token_use(record: SessionRecord) -> tuple[dict[str, ModelUsage], dict[str, ModelUsage]]:
    """Tokens by model and by member: from each member's LM call log, else (a log that was not
    kept) from the totals ``session.json`` recorded for that member."""
    by_model: dict[str, ModelUsage] = {}
    by_role: dict[str, ModelUsage] = {}
    recorded = record.session.get("lm_usage") or {}
    for role in record.roles:
        calls = record.members.get(role, {}).get("calls") or []
        if calls:
            for call in calls:
                usage = call.get("usage") or {}
                tokens = _usage(int(usage.get("prompt_tokens") or 0),
                                int(usage.get("completion_tokens") or 0))
                _add_usage(by_model, str(call.get("model") or "unknown"), tokens)
                _add_usage(by_role, role, tokens)
            continue
        totals = recorded.get(role) if isinstance(recorded, dict) else None
        if isinstance(totals, dict) and (totals.get("prompt_tokens")
                                         or totals.get("completion_tokens")):
            tokens = _usage(int(totals.get("prompt_tokens") or 0),
                            int(totals.get("completion_tokens") or 0))
            _add_usage(by_model, str(totals.get("model") or "unknown"), tokens)
            _add_usage(by_role, role, tokens)
    return by_model, by_role


def _chat(record: SessionRecord) -> list[ChatMessage]:
    """The team's chat: the human side speaks as Inspect's ``user``, agents as ``assistant``."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser

    messages: list[ChatMessage] = []
    for message in record.messages:
        metadata: dict[str, Any] = {"member": message.sender,
                                    "kind": record.kinds.get(message.sender, "agent"),
                                    "seq": message.seq, "time": _iso(message.time)}
        if message.to:
            metadata["to"] = message.to
        text = clean_text(message.text)
        identifier = f"{record.session_id}:{message.seq}"  # stable: the same run, the same log
        if record.is_human(message.sender):
            messages.append(ChatMessageUser(id=identifier, content=text, metadata=metadata))
        else:
            messages.append(ChatMessageAssistant(id=identifier, content=text, metadata=metadata,
                                                 model=_member_model(record, message.sender)))
    return messages


def _scores(record: SessionRecord) -> dict[str, Score]:
    """The session's scores, each with the grader's label and reasons when it gave them."""
    from inspect_ai.scorer import Score

    reports = {str(report.get("name")): report for report in
               record.session.get("score_reports") or [] if isinstance(report, dict)}
    scores = {}
    for name, value in record.scores.items():
        report = reports.get(name) or {}
        reasons = [clean_text(str(reason)) for reason in report.get("reasons") or []]
        label = report.get("label")
        scores[name] = Score(value=value, explanation="\n".join(reasons) or None,
                             metadata={"label": clean_text(str(label))} if label else None)
    return scores


def _metadata(record: SessionRecord) -> dict[str, Any]:
    session = record.session
    return clean({
        "session_id": record.session_id,
        "session_folder": record.path.name,
        "task": record.task,
        "instance": record.instance,
        "trial": record.trial,
        "env_args": {k: v for k, v in record.env_args.items() if k != "data_dir"},
        "team": [{"role": member.role, "kind": member.kind,
                  "model": _member_model(record, member.role)} for member in record.team],
        "agent_type": record.agent_type,
        "protocol": record.protocol.name,
        "interaction": record.interaction,
        "status": record.status,
        "end_reason": record.end_reason,
        "delivered": record.delivered,
        "outcome_class": record.outcome_class,
        "cause": record.cause,
        "failure": session.get("failure"),
        "grading_error": session.get("grading_error"),
        "data": record.data,
        "sample_data": record.data == "sample",
        "seeds": record.seeds,
        "provenance": session.get("provenance"),
        "leakage": record.leakage,
    })


def _log_events(record: SessionRecord, start: float) -> list[tuple[float, InspectEvent]]:
    from inspect_ai.event import InfoEvent

    timed: list[tuple[float, InspectEvent]] = []
    for event in record.events:
        data = clean(event.model_dump(mode="json", exclude_defaults=True))
        source = f"{event.actor}: {event.type.value}" if event.actor else event.type.value
        timed.append((event.time, InfoEvent(
            source=source, data=data, timestamp=datetime.fromtimestamp(event.time, UTC),
            working_start=max(0.0, event.time - start))))
    return timed


def _model_events(record: SessionRecord, start: float) -> list[tuple[float, InspectEvent]]:
    """Each member's logged LM calls, as Inspect logs a model call: prompt, reply, usage."""
    from inspect_ai.event import ModelEvent
    from inspect_ai.model import GenerateConfig, ModelOutput

    timed: list[tuple[float, InspectEvent]] = []
    for role in record.roles:
        for number, call in enumerate(record.members.get(role, {}).get("calls") or []):
            identifier = f"{record.session_id}:{role}:call{number}"
            end = _call_end(call)
            if end is None:
                continue
            latency = _number(call.get("latency")) or 0.0
            begun = end - latency
            model = clean_text(str(call.get("model") or "unknown"))
            usage = call.get("usage") or {}
            error = call.get("error")
            output = _stable_ids(ModelOutput.from_content(
                model, _text(call.get("completion") or ""),
                error=_text(error) if error else None), f"{identifier}:reply")
            output.usage = _usage(int(usage.get("prompt_tokens") or 0),
                                  int(usage.get("completion_tokens") or 0))
            output.time = latency
            messages = call.get("messages")
            seed = call.get("seed")
            timed.append((begun, ModelEvent(
                model=model, role=role,
                input=[_prompt_message(m, f"{identifier}:{k}") for k, m in enumerate(messages)]
                if isinstance(messages, list) else [],
                tools=[], tool_choice="none",
                config=GenerateConfig(seed=seed if isinstance(seed, int) else None),
                output=output, error=_text(error) if error else None,
                retries=max(0, int(call.get("attempts") or 1) - 1),
                timestamp=datetime.fromtimestamp(begun, UTC),
                completed=datetime.fromtimestamp(end, UTC), working_time=latency,
                working_start=max(0.0, begun - start),
                metadata={"purpose": clean_text(str(call.get("purpose") or "")),
                          "member": role})))
    return timed


def _span(record: SessionRecord) -> tuple[float, float]:
    """When the session started and ended: as ``session.json`` says, else its first and last
    logged events."""
    first = record.events[0].time if record.events else 0.0
    start = _number(record.session.get("started_at")) or first
    end = _number(record.session.get("ended_at")) or (record.events[-1].time if record.events
                                                      else start)
    return start, end


def session_sample(record: SessionRecord, *, sample_id: int | str | None = None) -> EvalSample:
    """One session as an Inspect sample (see the module's docstring for what goes where)."""
    require_inspect()
    from inspect_ai.dataset import Sample
    from inspect_ai.event import SampleInitEvent, ScoreEvent
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ModelOutput

    start, end = _span(record)
    description = task_description(record.task, json.dumps(record.env_args, sort_keys=True))
    task_input = clean_text(description) or f"{record.task} {record.instance}"
    identifier = _sample_id(record) if sample_id is None else sample_id
    metadata = _metadata(record)
    scores = _scores(record)
    events: list[tuple[float, InspectEvent]] = [(start - 1e-6, SampleInitEvent(
        sample=Sample(input=task_input, id=identifier, metadata=metadata), state={},
        timestamp=datetime.fromtimestamp(start, UTC), working_start=0.0))]
    events += _log_events(record, start) + _model_events(record, start)
    events += [(end, ScoreEvent(score=score, scorer=name, timestamp=datetime.fromtimestamp(
        end, UTC), working_start=max(0.0, end - start))) for name, score in scores.items()]
    events.sort(key=lambda pair: pair[0])  # stable: log order among equal times
    for number, (_, event) in enumerate(events):
        event.uuid = f"{record.session_id}:event{number}"
    by_model, by_role = _token_use(record)
    agent_model = next((m for role in record.agent_roles if (m := _member_model(record, role))),
                       NO_MODEL)
    outcome = record.outcome
    failed = record.outcome_class != "completed"
    return EvalSample(
        id=identifier, epoch=record.trial + 1, input=task_input, target="",
        messages=_chat(record),
        output=_stable_ids(ModelOutput.from_content(
            agent_model, "" if outcome is None else _text(outcome)),
            f"{record.session_id}:outcome"),
        scores=scores, metadata=metadata, events=[event for _, event in events],
        model_usage=by_model, role_usage=by_role, uuid=record.session_id,
        started_at=_iso(start), completed_at=_iso(end),
        total_time=round(end - start, 3) if end >= start else None,
        error=EvalError(message=clean_text(record.cause or f"{record.outcome_class}"),
                        traceback="", traceback_ansi="") if failed else None)


# -- one run -------------------------------------------------------------------------------------

def _plan(records: Sequence[SessionRecord], team: str) -> EvalPlan:
    """The team as Inspect's plan: one step per member, its type and model."""
    from inspect_ai.log import EvalPlan, EvalPlanStep

    first = records[0]
    configured = ((first.run or {}).get("team_config") or {}).get("members") or {}
    steps = []
    for member in first.team:
        planned = configured.get(member.role) if isinstance(configured, dict) else None
        kind_of = (planned or {}).get("type") if isinstance(planned, dict) else None
        usage = first.members.get(member.role, {}).get("usage") or {}
        steps.append(EvalPlanStep(
            solver=str(kind_of or usage.get("agent_type") or member.kind),
            params={"role": member.role, "kind": member.kind,
                    "model": _member_model(first, member.role)}))
    return EvalPlan(name=team, steps=steps)


def _results(samples: Sequence[EvalSample], records: Sequence[SessionRecord],
             task: str) -> EvalResults:
    """Each score's mean (and its standard error) over the sessions that count: those that
    ended as ``completed`` (see :mod:`cogym_lab.core.outcome_class`), as the report counts.
    Only delivered sessions are graded, so ``performance``'s mean is the report's Task Perf.;
    the delivery rate and the Collab Score (an undelivered session scores 0) are in the
    results' metadata."""
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore

    counted = [s for s, r in zip(samples, records, strict=True) if r.outcome_class == "completed"]
    names = list(dict.fromkeys(name for s in samples for name in (s.scores or {})))
    # the task's own summary first: Inspect's log list shows the first score as the headline
    names.sort(key=lambda name: name != "performance")
    scores = []
    for name in names:
        values = [float(score.value) for s in counted if (score := (s.scores or {}).get(name))
                  is not None and isinstance(score.value, int | float)]
        metrics = {}
        if values:
            metrics["mean"] = EvalMetric(name="mean", value=statistics.fmean(values))
            if len(values) > 1:
                metrics["stderr"] = EvalMetric(
                    name="stderr", value=statistics.stdev(values) / math.sqrt(len(values)))
        scores.append(EvalScore(name=name, scorer=f"{task} grader", scored_samples=len(values),
                                unscored_samples=len(samples) - len(values), metrics=metrics))
    classes = {name: sum(r.outcome_class == name for r in records) for name in OUTCOME_CLASSES}
    completed = [r for r in records if r.outcome_class == "completed"]
    collab = [value for r in completed
              if not math.isnan(value := collab_score(r.delivered, r.performance))]
    return EvalResults(
        total_samples=len(samples), completed_samples=len(completed), scores=scores,
        metadata={"outcome_classes": classes,
                  "delivered": sum(r.delivered for r in completed) / len(completed)
                  if completed else None,
                  "collab_score": statistics.fmean(collab) if collab else None,
                  "note": "means over completed sessions; sessions that ended for a cause "
                          "outside the team carry it as the sample's error"})


def _run_started(records: Sequence[SessionRecord]) -> float:
    started = _number((records[0].run or {}).get("started_at"))
    return started if started is not None else min(_span(r)[0] for r in records)


def _numbered(records: Sequence[SessionRecord]) -> list[int | str]:
    """Sample ids: the instance, unless two sessions share an instance and a trial (sessions
    gathered from several folders), where the later ones add their session id."""
    seen: set[tuple[int | str, int]] = set()
    ids: list[int | str] = []
    for record in records:
        identifier: int | str = _sample_id(record)
        if (identifier, record.trial) in seen:
            identifier = f"{identifier}/{record.session_id}"
        seen.add((identifier, record.trial))
        ids.append(identifier)
    return ids


def _order(record: SessionRecord) -> tuple[int, str, int]:
    identifier = _sample_id(record)
    return (identifier if isinstance(identifier, int) else -1, str(identifier), record.trial)


def run_log(records: Sequence[SessionRecord]) -> EvalLog:
    """The sessions of one run (or group) as one Inspect log."""
    inspect_version = require_inspect()
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec, EvalStats
    from inspect_ai.model import ModelConfig

    records = sorted(records, key=_order)
    first = records[0]
    run = first.run or {}
    team = str(run.get("team") or first.agent_type)
    samples = [session_sample(record, sample_id=identifier)
               for record, identifier in zip(records, _numbered(records), strict=True)]
    created = _run_started(records)
    ended = max(_span(r)[1] for r in records)
    model_usage: dict[str, ModelUsage] = {}
    role_usage: dict[str, ModelUsage] = {}
    for sample in samples:
        for model, usage in sample.model_usage.items():
            _add_usage(model_usage, model, usage)
        for role, usage in sample.role_usage.items():
            _add_usage(role_usage, role, usage)
    roles = {member.role: lm for member in first.team
             if (lm := _member_model(first, member.role)) is not None}
    agent_model = next((roles[r] for r in first.agent_roles if r in roles), NO_MODEL)
    identity = _short_hash(str(first.path.parent.resolve()), first.task, team,
                           *(r.session_id for r in records))
    spec = EvalSpec(
        eval_id=identity, run_id=_short_hash("run", identity),
        created=_iso(created, "seconds") or "",
        task=first.task, task_id=_short_hash("task", identity),
        task_args=clean({k: v for k, v in (run.get("env_args") or {}).items()
                         if k != "data_dir"}),
        solver=team,
        dataset=EvalDataset(name=first.task, samples=len(samples),
                            sample_ids=list(dict.fromkeys(s.id for s in samples))),
        model=agent_model,
        model_roles={role: ModelConfig(model=model) for role, model in roles.items()},
        config=EvalConfig(epochs=max(s.epoch for s in samples)),
        packages={"cogym_lab": __version__, "inspect_ai": inspect_version},
        metadata=clean({"cogym_lab": {
            "run": first.run_name, "team": team, "protocol": first.protocol.name,
            "run_status": run.get("status"), "data": first.data,
            "provenance": run.get("provenance") or first.session.get("provenance"),
            "team_config": run.get("team_config"),
        }}))
    return EvalLog(
        status="success" if run.get("status") in (None, "finished") else "cancelled",
        eval=spec, plan=_plan(records, team), results=_results(samples, records, first.task),
        stats=EvalStats(started_at=_iso(created) or "",
                        completed_at=_iso(ended) or "",
                        model_usage=model_usage, role_usage=role_usage),
        samples=samples)


def log_file_name(log: EvalLog, format: LogFormat = "eval") -> str:
    """The file name Inspect gives its own logs, ``<created>_<task>_<task id>.<format>``, with
    the characters it replaces replaced (its log list reads the task from the name)."""
    def part(text: str) -> str:
        return "".join("-" if c in "_/:+\\" else c for c in text)

    return f"{part(log.eval.created)}_{part(log.eval.task)}_{part(log.eval.task_id)}.{format}"


def _groups(records: Iterable[SessionRecord]) -> list[list[SessionRecord]]:
    """One group per run folder; sessions outside a run folder by task, agent type and model."""
    groups: dict[tuple[str, ...], list[SessionRecord]] = defaultdict(list)
    for record in records:
        if record.run is not None:
            key: tuple[str, ...] = ("run", str(record.path.parent.resolve()))
        else:
            key = ("sessions", record.task, record.agent_type, record.model)
        groups[key].append(record)
    return list(groups.values())


def export_inspect(dirs: Iterable[str | Path], out: str | Path) -> InspectExportSummary:
    """Write the sessions under ``dirs`` (session or run folders) as Inspect logs.

    ``out`` ending in ``.eval`` or ``.json`` is the one log file to write (Inspect's binary or
    JSON format); it must then hold a single run. Otherwise ``out`` is a folder (Inspect's log
    directory) that gets one ``.eval`` file per run. Sessions whose files cannot be read are
    skipped and named in the summary.
    """
    require_inspect()  # before any work: a missing extra is said at once
    from inspect_ai.log import write_eval_log

    summary = InspectExportSummary()
    records = []
    for folder in find_sessions(dirs):
        try:
            records.append(load_session(folder))
        except (ValueError, OSError) as error:
            summary.skipped[str(folder)] = f"{type(error).__name__}: {error}"
    groups = _groups(records)
    if not groups:
        raise ValueError("No session to export: the folders hold no readable session.json")
    target = Path(out)
    single = SUFFIXES.get(target.suffix.lower())
    if single is not None and len(groups) > 1:
        raise ValueError(f"{len(groups)} runs to export but one file named ({target.name}): "
                         f"name a folder instead, which gets one log per run")
    for group in groups:
        log = run_log(group)
        if single is not None:
            path = target
        else:
            target.mkdir(parents=True, exist_ok=True)
            path = target / log_file_name(log)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_eval_log(log, path, format=single or "eval")
        summary.paths.append(path)
        summary.sessions += len(group)
    return summary


__all__ = ["EXTRA_HINT", "MIN_VERSION", "InspectExportSummary", "export_inspect", "log_file_name",
           "require_inspect", "run_log", "session_sample"]
