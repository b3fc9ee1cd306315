"""A small study export written by hand, for the analysis and comparison tests.

Six participants meet three conditions (within subjects): ``c1`` "Agent A", ``c2`` "Agent B",
``c3`` "Agent C". Every number below is the one the tests compute their expectations from.
"""

from __future__ import annotations

from pathlib import Path

from cogym_lab.studies.tables import (
    AnswerRow,
    EventRow,
    ParticipantRow,
    SessionRow,
    write_export,
)

PEOPLE = ["p1", "p2", "p3", "p4", "p5", "p6"]
LABELS = {"c1": "Agent A", "c2": "Agent B", "c3": "Agent C"}
ORDERS = [["c1", "c2", "c3"], ["c2", "c3", "c1"], ["c3", "c1", "c2"]]
#: Likert "steerability" per participant: (c1, c2, c3).
STEER = {"p1": (5, 3, 2), "p2": (4, 3, 3), "p3": (5, 2, 4), "p4": (3, 3, 1), "p5": (4, 2, 2),
         "p6": (5, 4, 3)}
#: Cocoa's three utility items per participant and condition (c1, c2, c3): (u1, u2, u3).
UTILITY = dict.fromkeys(PEOPLE, ((4, 5, 3), (3, 3, 3), (2, 3, 4)))
UTILITY_ITEMS = ("outputs_useful", "new_insights", "understand_solutions")
#: The last ranking of "preference", best first, per participant.
PREFERENCE = {"p1": "ABC", "p2": "ACB", "p3": "BAC", "p4": "ABC", "p5": "CAB", "p6": "BCA"}
#: Pairwise preference about c1 (the collaborative agent's outcome against the autonomous one).
PAIRWISE = {"p1": "own", "p2": "own", "p3": "tie", "p4": "autonomous", "p5": "own", "p6": "own"}
TLX = {p: (50 + 5 * k, 20, 40, 30, 60, 10 + 5 * k) for k, p in enumerate(PEOPLE)}
TLX_SCALES = ("mental", "physical", "temporal", "performance", "effort", "frustration")
#: Per participant's c1 session: (confirmations asked, given, interruptions).
CONFIRMATIONS = {"p1": (4, 2, 2), "p2": (3, 2, 1), "p3": (2, 1, 0), "p4": (4, 3, 3),
                 "p5": (2, 2, 1), "p6": (3, 1, 2)}
DELIVERED_C1 = {"p1": True, "p2": True, "p3": False, "p4": True, "p5": True, "p6": True}
PERFORMANCE = {"c1": 0.8, "c2": 0.6, "c3": 0.5}
#: Cocoa's plans-vs-chat measures (``plans_vs_chat=True``): shares of session time per
#: participant (in PEOPLE's order) and condition; waiting is 0.05, other the rest.
INSPECTING = {"c1": [0.30, 0.35, 0.25, 0.40, 0.33, 0.28],
              "c2": [0.55, 0.50, 0.60, 0.52, 0.58, 0.49],
              "c3": [0.45, 0.42, 0.47, 0.44, 0.40, 0.43]}
PLANNING = {"c1": [0.20 + 0.01 * n for n in range(6)],
            "c2": [0.17 + 0.015 * n for n in range(6)],
            "c3": [0.18 + 0.012 * n for n in range(6)]}
EXECUTING = {"c1": [0.15 + 0.01 * (3 * n % 6) for n in range(6)],
             "c2": [0.03 + 0.005 * n for n in range(6)],
             "c3": [0.08 + 0.007 * n for n in range(6)]}
WAITING = 0.05
#: Each session's output-to-input ratios, per round, per condition and participant.
RATIOS = {"c1": dict(zip(PEOPLE, [[1.0, 0.75], [1.0], [0.5, 1.0, 1.0], [1.0, 0.8], [0.9],
                                  [1.0, 1.0]], strict=True)),
          "c2": dict(zip(PEOPLE, [[0.0], [0.25, 0.0], [0.0, 0.5], [0.0], [1.0, 0.0], [0.2]],
                         strict=True)),
          "c3": dict(zip(PEOPLE, [[0.5], [0.5, 0.0], [1.0], [0.5], [0.0], [0.5, 1.0]],
                         strict=True))}


def plans_vs_chat_fields(condition: str, n: int) -> dict[str, object]:
    """The plans-vs-chat columns of participant ``n``'s session in ``condition``."""
    shares = {"share_planning": PLANNING[condition][n],
              "share_executing": EXECUTING[condition][n],
              "share_inspecting": INSPECTING[condition][n], "share_waiting": WAITING}
    ratios = RATIOS[condition][PEOPLE[n]]
    return shares | {"share_other": 1 - sum(shares.values()),
                     "item_ratio": sum(ratios) / len(ratios),
                     "item_ratios": "|".join(str(r) for r in ratios),
                     "item_rounds": len(ratios)}


def _answer(participant: str, questionnaire: str, condition: str, position: int, item: str,
            kind: str, value: object, part: str = "") -> AnswerRow:
    return AnswerRow(participant=participant, questionnaire=questionnaire,
                     moment="end" if position < 0 else "session", condition=condition,
                     position=position, item=item, kind=kind, part=part, value=str(value))


def build(arm: str = "human", *, steer: dict[str, tuple[int, int, int]] | None = None,
          confirmations: dict[str, tuple[int, int, int]] | None = None,
          pairwise: dict[str, str] | None = None, plans_vs_chat: bool = False
          ) -> dict[str, list]:
    steer = steer or STEER
    confirmations = confirmations or CONFIRMATIONS
    pairwise = pairwise or PAIRWISE
    participants, sessions, answers, events = [], [], [], []
    for n, person in enumerate(PEOPLE):
        order = ORDERS[n % 3]
        participants.append(ParticipantRow(participant=person, arm=arm, sequence="|".join(order),
                                           status="finished"))
        # a practice round with numbers that would change every measure if it counted
        sessions.append(SessionRow(participant=person, position=-1, condition="", label="",
                                   practice=True, task="todo", instance=9, session_id=f"{person}-t",
                                   delivered=False, performance=0.0, duration_seconds=9999,
                                   interruptions=50))
        for position, condition in enumerate(order):
            index = int(condition[1]) - 1
            asked, given, interrupted = confirmations[person] if condition == "c1" else (1, 1, 0)
            sessions.append(SessionRow(
                participant=person, position=position, condition=condition,
                label=LABELS[condition], practice=False, task="todo", instance=position,
                session_id=f"{person}-{position}", end_reason="finished",
                delivered=DELIVERED_C1[person] if condition == "c1" else True,
                performance=PERFORMANCE[condition] + 0.01 * n, duration_seconds=100.0 + 10 * n,
                person_messages=4, person_actions=2, confirmations_asked=asked,
                confirmations_given=given, interruptions=interrupted, person_initiative=0.4,
                **(plans_vs_chat_fields(condition, n) if plans_vs_chat else {})))
            answers.append(_answer(person, "after", condition, position, "steerability",
                                   "likert", steer[person][index]))
            for item, value in zip(UTILITY_ITEMS, UTILITY[person][index], strict=True):
                answers.append(_answer(person, "after", condition, position, item, "likert",
                                       value))
            if condition == "c1":
                answers.append(_answer(person, "after", condition, position, "pairwise",
                                       "choice", pairwise[person]))
        # an earlier, partial ranking (after the first two sessions) that the last one replaces
        answers += [_answer(person, "pair", order[1], 1, "preference", "ranking", rank,
                            LABELS[c]) for rank, c in enumerate(reversed(order[:2]), start=1)]
        answers += [_answer(person, "final", "", -1, "preference", "ranking", rank,
                            f"Agent {letter}")
                    for rank, letter in enumerate(PREFERENCE[person], start=1)]
        answers += [_answer(person, "final", "", -1, "task_load", "task_load", value, scale)
                    for scale, value in zip(TLX_SCALES, TLX[person], strict=True)]
        events.append(EventRow(participant=person, ts=1.0 + n, event="consented"))
    return {"participants": participants, "sessions": sessions, "answers": answers,
            "events": events}


def write(folder: Path, arm: str = "human", design: str = "toy", **changes: object) -> Path:
    tables = build(arm, **changes)  # type: ignore[arg-type]
    write_export(folder, design=design, arm=arm, **tables)  # type: ignore[arg-type]
    return folder


def write_between(folder: Path) -> Path:
    """Eight participants, four per condition: "satisfaction" c1 [5, 4, 4, 3], c2 [2, 3, 1, 2]."""
    ratings = {"c1": [5, 4, 4, 3], "c2": [2, 3, 1, 2]}
    participants, sessions, answers = [], [], []
    for condition, values in ratings.items():
        for k, value in enumerate(values):
            person = f"{condition}-p{k}"
            participants.append(ParticipantRow(participant=person, arm="human",
                                               sequence=condition, status="finished"))
            sessions.append(SessionRow(participant=person, position=0, condition=condition,
                                       label=LABELS[condition], practice=False, task="todo",
                                       instance=0, session_id=person, delivered=True,
                                       performance=0.5))
            answers.append(_answer(person, "after", condition, 0, "satisfaction", "likert",
                                   value))
    write_export(folder, design="between", arm="human", participants=participants,
                 sessions=sessions, answers=answers, events=[])
    return folder
