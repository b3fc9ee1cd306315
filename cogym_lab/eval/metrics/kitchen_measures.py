"""The measures of real-time cooking sessions (DPT-Agent, Zhang et al. 2025, §5.2 and
Appendix E), from a results directory alone.

A session counts when its log has ``clock`` events whose ``info`` tells what each tick did
(``happened``, ``atomic``): the world of a clocked env moves on at every tick, and each tick's
``info`` says which orders were served, served wrong or missed, who served them with how many
key events each, and which chefs executed an atomic action. The first two members of the team
are the chefs, in team order. Of these, the *agent* is the first agent-kind chef that left an LM
trace (``latency.jsonl``, an LM call log or a model in its usage file), else the first
agent-kind chef; the *partner* is the other chef (none in a one-chef game).

The measures (``docs/evaluation.md`` gives them with an example):

* **score**: the last tick's ``score`` (else ``session.json``'s ``scores["score"]``, else the
  sum of the ticks' rewards);
* **score efficiency**: the score gained (the positive rewards of the ticks' events: served
  orders; penalties left out) per macro action of the agent (its accepted action events whose
  name is one of :data:`MACRO_ACTIONS`);
* **contribution rates**: the key events credited to each chef over the served orders,
  ``KE_agent / (KE_agent + KE_partner)`` and the partner's likewise;
* **latency**: from the agent's ``latency.jsonl`` (one JSON line per measured decision,
  ``{"kind": "macro" | "policy" | ..., "seconds": ..}``), mean and median per session, of a
  macro action (the LM choosing one, as System 1), of a code-as-policy output, and of both
  together (the paper's *latency*: from the request to a macro action or a policy);
* **missed** and **wrong-served** orders;
* **atomic-action occupancy** of each chef: ticks in which its chef executed an atomic action,
  over the ticks the game ran.

Over the repeated runs of one system (task, agent type, model, layout, partner) each measure
is reported as its inter-quartile mean and standard error
(:mod:`cogym_lab.eval.stats.interquartile`).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cogym_lab.core import ActionError
from cogym_lab.core.grammar import parse_canonical
from cogym_lab.core.jsonl import read_jsonl_or_empty
from cogym_lab.core.messages import Event, EventType
from cogym_lab.eval.stats.interquartile import iqm_and_se
from cogym_lab.records.trajectory import SessionRecord

#: The macro actions a chef's member may ask for (expanded by the env into atomic actions).
MACRO_ACTIONS = frozenset({"PREPARE", "ASSEMBLE", "SERVE", "PASS_ON", "PUT_OUT_FIRE",
                           "CLEAN_A_COUNTER"})
#: The file in a member's folder where an LM-driven member times its decisions.
LATENCY_FILE = "latency.jsonl"
#: The kinds of decision the *latency* measures: a macro action and a code-as-policy output.
DECISIONS = ("macro", "policy")
#: How many chefs a game has at most: the first members of the team, in order.
CHEFS = 2
#: The system a row of the summary describes.
SYSTEM = ["task", "agent_type", "model", "layout", "partner"]

#: The per-system measures, in the paper's order, with the label of the paper-style table.
PAPER_COLUMNS = {
    "score": "Score",
    "score_efficiency": "Score eff.",
    "agent_contribution": "Agent CR",
    "latency_macro": "Latency/macro (s)",
    "latency_policy": "Latency/policy (s)",
    "missed": "Missed",
    "wrong_served": "Wrong served",
    "agent_occupancy": "Agent occupancy",
    "partner_occupancy": "Partner occupancy",
}
#: Every per-session measure summarised per system (IQM and SE), the paper's first.
SUMMARISED = [*PAPER_COLUMNS, "gained", "served", "agent_macros", "partner_contribution",
              "latency", "latency_p50", "latency_macro_p50", "latency_policy_p50", "ticks"]


def _number(value: Any) -> float | None:
    """``value`` as a finite float, or ``None`` (text, booleans, NaN and infinities are not
    numbers here: the tick info comes from an env, the latency file from a member)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _share(part: float, whole: float) -> float:
    return part / whole if whole else math.nan


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else math.nan


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else math.nan


@dataclass
class Latencies:
    """One member's measured decisions, in seconds, by kind (``macro``, ``policy``, ...)."""

    seconds: dict[str, list[float]] = field(default_factory=dict)

    def of(self, *kinds: str) -> list[float]:
        return [s for kind in kinds for s in self.seconds.get(kind, [])]


@dataclass
class CookingMeasures:
    """The measures of one real-time cooking session (see the module)."""

    chefs: list[str]
    agent: str | None
    partner: str | None
    ticks: int = 0
    score: float = math.nan
    gained: float = 0.0
    served: int = 0
    missed: int = 0
    wrong_served: int = 0
    macros: Counter[str] = field(default_factory=Counter)
    key_events: Counter[str] = field(default_factory=Counter)
    atomic_ticks: Counter[str] = field(default_factory=Counter)
    latencies: Latencies = field(default_factory=Latencies)
    notes: list[str] = field(default_factory=list)

    def occupancy(self, role: str | None) -> float:
        """Share of the game's ticks in which ``role``'s chef executed an atomic action."""
        if role is None:
            return math.nan
        return _share(self.atomic_ticks[role], self.ticks)

    def contribution(self, role: str | None) -> float:
        """``role``'s key events over both chefs' (NaN when no order was served with
        credits)."""
        if role is None:
            return math.nan
        both = sum(self.key_events[chef] for chef in self.chefs)
        return _share(self.key_events[role], both)

    @property
    def score_efficiency(self) -> float:
        """Score gained per macro action of the agent (NaN when it executed none)."""
        if self.agent is None:
            return math.nan
        return _share(self.gained, self.macros[self.agent])

    def row(self) -> dict[str, Any]:
        """The session's measures as one flat table row."""
        decisions = self.latencies.of(*DECISIONS)
        macro, policy = self.latencies.of("macro"), self.latencies.of("policy")
        return {
            "agent_role": self.agent or "-", "partner_role": self.partner or "-",
            "ticks": self.ticks, "score": self.score, "gained": self.gained,
            "served": self.served, "missed": self.missed, "wrong_served": self.wrong_served,
            "agent_macros": self.macros[self.agent] if self.agent else 0,
            "partner_macros": self.macros[self.partner] if self.partner else 0,
            "score_efficiency": self.score_efficiency,
            "agent_key_events": self.key_events[self.agent] if self.agent else 0,
            "partner_key_events": self.key_events[self.partner] if self.partner else 0,
            "agent_contribution": self.contribution(self.agent),
            "partner_contribution": self.contribution(self.partner),
            "latency": _mean(decisions), "latency_p50": _median(decisions),
            "latency_macro": _mean(macro), "latency_macro_p50": _median(macro),
            "latency_policy": _mean(policy), "latency_policy_p50": _median(policy),
            "decisions": len(decisions),
            "agent_occupancy": self.occupancy(self.agent),
            "partner_occupancy": self.occupancy(self.partner),
        }


# -- one session -------------------------------------------------------------------------------


def tick_infos(record: SessionRecord) -> list[dict[str, Any]]:
    """The ``info`` of each tick of a clocked world, in order."""
    return [event.info for event in record.events
            if event.type is EventType.CLOCK and isinstance(event.info, dict)]


def _tells_what_happened(info: dict[str, Any]) -> bool:
    return "happened" in info or "atomic" in info


def is_cooking(record: SessionRecord) -> bool:
    """Whether ``record`` is a real-time cooking session: some tick tells what it did (a
    quiet tick may leave both lists out)."""
    return any(_tells_what_happened(info) for info in tick_infos(record))


def cooking_measures(record: SessionRecord) -> CookingMeasures | None:
    """The measures of ``record``, or ``None`` when it is not a real-time cooking session."""
    ticks = tick_infos(record)
    if not any(_tells_what_happened(info) for info in ticks):
        return None
    chefs = [role for role in record.roles[:CHEFS] if role not in (".", "..")]
    agent = agent_role(record, chefs)
    partner = next((role for role in chefs if role != agent), None)
    measures = CookingMeasures(chefs=chefs, agent=agent, partner=partner, ticks=len(ticks))
    for info in ticks:
        _count_tick(info, chefs, measures)
    measures.score = _final_score(record, ticks)
    measures.macros = macro_counts(record.events)
    if agent is not None:
        measures.latencies = read_latencies(record, agent, measures.notes)
    return measures


def _count_tick(info: dict[str, Any], chefs: Sequence[str], measures: CookingMeasures) -> None:
    """Add what one tick did to ``measures``; entries that are not what the contract says
    are skipped (an env's bug must not stop a report)."""
    atomic = info.get("atomic")
    if isinstance(atomic, dict):
        for role in chefs:
            if atomic.get(role):
                measures.atomic_ticks[role] += 1
    happened = info.get("happened")
    for entry in happened if isinstance(happened, list) else []:
        if not isinstance(entry, dict):
            continue
        kind, reward = entry.get("kind"), _number(entry.get("reward"))
        if reward is not None and reward > 0:
            measures.gained += reward
        if kind == "served":
            measures.served += 1
            credits = entry.get("credits")
            for role, count in (credits.items() if isinstance(credits, dict) else ()):
                number = _number(count)
                if role in chefs and number is not None and number > 0:
                    measures.key_events[role] += int(number)
        elif kind == "missed":
            measures.missed += 1
        elif kind == "wrong_served":
            measures.wrong_served += 1


def _final_score(record: SessionRecord, ticks: Sequence[dict[str, Any]]) -> float:
    for info in reversed(ticks):
        score = _number(info.get("score"))
        if score is not None:
            return score
    saved = record.scores.get("score")
    if saved is not None and math.isfinite(saved):
        return saved
    rewards = [_number(e.reward) for e in record.events if e.type is EventType.CLOCK]
    return sum(r for r in rewards if r is not None)


def macro_counts(events: Iterable[Event]) -> Counter[str]:
    """Accepted macro actions per role: action events that took effect, by action name."""
    counts: Counter[str] = Counter()
    for event in events:
        if event.type is not EventType.ACTION or event.status != "ok" or not event.action \
                or event.actor is None:
            continue
        try:
            name = parse_canonical(event.action).name
        except ActionError:
            continue
        if name in MACRO_ACTIONS:
            counts[event.actor] += 1
    return counts


# -- who is who ----------------------------------------------------------------------------------


def _has_lm_trace(record: SessionRecord, role: str) -> bool:
    files = record.members.get(role, {})
    usage = files.get("usage") or {}
    return bool((record.path / role / LATENCY_FILE).is_file() or files.get("calls")
                or usage.get("model"))


def agent_role(record: SessionRecord, chefs: Sequence[str]) -> str | None:
    """The chef that plays the agent: the first agent-kind chef with an LM trace, else the
    first agent-kind chef, else ``None`` (two people, or no chef at all)."""
    agents = [role for role in chefs if not record.is_human(role)]
    traced = [role for role in agents if _has_lm_trace(record, role)]
    return next(iter(traced or agents), None)


def _team_types(record: SessionRecord) -> dict[str, str]:
    """Role -> member type, as the session's stored spec or the run's team file gives them."""
    spec = record.session.get("spec")
    team = spec.get("team") if isinstance(spec, dict) else None
    run_team = (record.run or {}).get("team_config")
    for config in (team, run_team):
        members = config.get("members") if isinstance(config, dict) else None
        if isinstance(members, dict):
            return {str(role): str(member["type"]) for role, member in members.items()
                    if isinstance(member, dict) and member.get("type")}
    return {}


def member_name(record: SessionRecord, role: str | None) -> str:
    """What ``role`` is, for a table: its usage file's agent type, its member type, else its
    kind (``person``, ...); ``-`` for no role."""
    if role is None:
        return "-"
    usage = record.members.get(role, {}).get("usage") or {}
    if usage.get("agent_type"):
        return str(usage["agent_type"])
    return _team_types(record).get(role) or record.kinds.get(role, "-")


def system_of(record: SessionRecord, measures: CookingMeasures) -> tuple[str, ...]:
    """(task, agent type, model, layout, partner): the runs that are repeats of each other."""
    usage = record.members.get(measures.agent or "", {}).get("usage") or {}
    agent_type = member_name(record, measures.agent) if measures.agent else record.agent_type
    model = str(usage.get("model") or record.model)
    layout = str(record.env_args.get("layout", "-"))
    return (record.task, agent_type, model, layout, member_name(record, measures.partner))


# -- the latency file -----------------------------------------------------------------------------


def read_latencies(record: SessionRecord, role: str, notes: list[str]) -> Latencies:
    """``role``'s ``latency.jsonl``: a line without a known number of seconds is skipped, a
    file damaged before its last line is left out with a note."""
    latencies = Latencies()
    path = record.path / role / LATENCY_FILE
    try:
        lines = read_jsonl_or_empty(path)
    except (OSError, ValueError) as error:  # LogReadError is a ValueError
        notes.append(f"{record.session_id}: {role}'s {LATENCY_FILE} cannot be read ({error})")
        return latencies
    for line in lines:
        if not isinstance(line, dict) or not isinstance(line.get("kind"), str):
            continue
        seconds = _number(line.get("seconds"))
        if seconds is not None and seconds >= 0:
            latencies.seconds.setdefault(line["kind"], []).append(seconds)
    return latencies


# -- over many runs -----------------------------------------------------------------------------


@dataclass
class MeasuredSession:
    record: SessionRecord
    measures: CookingMeasures

    @property
    def system(self) -> tuple[str, ...]:
        return system_of(self.record, self.measures)

    def row(self) -> dict[str, Any]:
        return (dict(zip(SYSTEM, self.system, strict=True))
                | {"run": self.record.run_name, "session_id": self.record.session_id,
                   "instance": self.record.instance, "status": self.record.status,
                   "end_reason": self.record.end_reason} | self.measures.row())


def measure_all(records: Iterable[SessionRecord]) -> list[MeasuredSession]:
    """The real-time cooking sessions among ``records``, measured."""
    measured = []
    for record in records:
        measures = cooking_measures(record)
        if measures is not None:
            measured.append(MeasuredSession(record, measures))
    return measured


def session_rows(measured: Sequence[MeasuredSession]) -> list[dict[str, Any]]:
    """One row per session: every per-session measure."""
    return [m.row() for m in measured]


def summary_rows(measured: Sequence[MeasuredSession]) -> list[dict[str, Any]]:
    """One row per system: ``runs`` (sessions measured), ``finished`` (of them, those that
    ended normally), then each of :data:`SUMMARISED` as its IQM with ``_se`` its standard
    error."""
    groups: dict[tuple[str, ...], list[MeasuredSession]] = defaultdict(list)
    for session in measured:
        groups[session.system].append(session)
    rows = []
    for system, sessions in sorted(groups.items()):
        measures = [s.row() for s in sessions]
        row: dict[str, Any] = dict(zip(SYSTEM, system, strict=True)) | {
            "runs": len(sessions),
            "finished": sum(1 for s in sessions if s.record.finished)}
        for name in SUMMARISED:
            row[name], row[f"{name}_se"] = iqm_and_se(m[name] for m in measures)
        rows.append(row)
    return rows


def estimate(value: Any, se: Any, digits: int = 2) -> str:
    """``IQM (SE)`` as the paper prints it; ``-`` for no value, no SE shown when it has none."""
    number, error = _number(value), _number(se)
    if number is None:
        return "-"
    shown = f"{number:.{digits}f}"
    return shown if error is None else f"{shown} ({error:.{digits}f})"


def paper_table(summary: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The paper-style rows of :func:`summary_rows`: the system, the runs, then each of
    :data:`PAPER_COLUMNS` as ``IQM (SE)``."""
    rows = []
    for row in summary:
        shown = {name: str(row[name]) for name in SYSTEM} | {"runs": str(row["runs"])}
        for name, label in PAPER_COLUMNS.items():
            shown[label] = estimate(row.get(name), row.get(f"{name}_se"))
        rows.append(shown)
    return rows
