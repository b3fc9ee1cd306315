"""The fine-grained failure types of Co-Gym's error analysis (Shao et al., Appendix G, Table 10),
the codes a session's ``failures.json`` names its findings by.

They are here, with the results folder's other formats, so that whatever shows a session's labels
(the trajectory viewer) can name them without the annotator
(:mod:`cogym_lab.eval.judging.failure_taxonomy`), which writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class FailureType:
    """One second-level failure type: its code, category, a short name and what it means.

    ``paper_real`` and ``paper_simulated`` are the shares of trajectories the paper found it in
    (Table 10), for comparison."""

    code: str
    category: str
    name: str
    description: str
    paper_real: float
    paper_simulated: float


def _types(category: str, prefix: str,
           rows: Sequence[tuple[str, str, float, float]]) -> list[FailureType]:
    return [FailureType(f"{prefix}.{n}", category, name, description, real, simulated)
            for n, (name, description, real, simulated) in enumerate(rows, start=1)]


#: The 26 types, by code, in the paper's order.
FAILURE_TYPES: dict[str, FailureType] = {t.code: t for t in [
    *_types("communication", "C", [
        ("Works silently", "the agent gets on with the work without telling the person, who "
         "cannot tell how far it has got", 0.23, 0.24),
        ("Acts unannounced", "the agent carries out actions without saying beforehand what it "
         "is about to do", 0.29, 0.46),
        ("No progress or completion report", "the agent neither reports progress nor says when "
         "it has finished", 0.33, 0.27),
        ("No time estimate", "the agent never says how long its work will take, so the person "
         "cannot plan around it", 0.15, 0.13),
        ("Poor summary of its actions", "after acting, the agent's account of what it did is "
         "missing, wrong or too thin to follow", 0.14, 0.14),
        ("Does not ask when unclear", "the agent goes ahead on an ambiguous or incomplete "
         "request instead of asking for what it lacks", 0.11, 0.05),
        ("Misses implicit cues", "the agent fails to pick up hints that the person expects it "
         "to start something", 0.12, 0.05),
    ]),
    *_types("situational_awareness", "SA", [
        ("Ignores the session so far", "the agent handles each request as if it came alone, "
         "without the context built up in the session", 0.11, 0.12),
        ("Asks again", "the agent repeats questions or requests because it lost track of what "
         "was said or answered before", 0.13, 0.26),
        ("Handles messages one by one", "several messages from the person are treated "
         "separately rather than taken together", 0.11, 0.09),
        ("Drifts from instructions", "in a long session the agent moves away from what it was "
         "told earlier", 0.03, 0.07),
        ("Critical step without confirmation", "the agent takes a consequential or "
         "irreversible step without getting the person's approval first", 0.18, 0.08),
        ("Stops following instructions over time", "the longer the session runs, the less the "
         "agent keeps to its instructions", 0.10, 0.15),
    ]),
    *_types("planning", "PL", [
        ("Agrees but does not do", "the agent accepts a task and then never carries it out",
         0.10, 0.08),
        ("Repeats or skips steps", "without a plan the agent does some steps twice and leaves "
         "others out", 0.27, 0.33),
        ("Does not undo its mistakes", "once an error is known, the agent does not go back and "
         "correct what it did", 0.03, 0.03),
        ("Inefficient changes", "the agent changes the workspace in a roundabout or wasteful "
         "way when a direct one was available", 0.01, 0.03),
        ("Needs to be told each next step", "the agent does not work out what comes next "
         "without explicit guidance", 0.03, 0.00),
        ("Partial answer to a many-part request", "a request with several parts gets only "
         "some of them done", 0.07, 0.03),
    ]),
    *_types("environment_awareness", "EA", [
        ("Does not check feasibility", "the agent takes on a request without judging whether "
         "its tools and resources can do it", 0.13, 0.03),
        ("Proposes what it cannot do", "the agent offers actions that the environment does not "
         "let it perform", 0.02, 0.00),
        ("Misses the need for a tool or data", "the agent does not notice that the request "
         "needs outside data or a tool it has", 0.15, 0.10),
        ("Makes up instead of looking up", "the agent states wrong information that its tools "
         "or data would have given it correctly", 0.08, 0.03),
    ]),
    *_types("personalisation", "P", [
        ("One-size-fits-all output", "the agent sticks to a fixed template instead of shaping "
         "the work to this person", 0.07, 0.05),
        ("Vague questions", "the agent's questions are broad and unspecific, hard for the "
         "person to answer usefully", 0.05, 0.03),
        ("Forgets stated preferences", "preferences the person gave are not carried into the "
         "agent's later work and replies", 0.06, 0.05),
    ]),
]}
