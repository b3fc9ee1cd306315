"""The fine-grained failure taxonomy of Co-Gym's error analysis (Shao et al., Appendix G,
Table 10; its five categories are Table 5).

The paper's authors coded 150 trajectories each from its real and simulated conditions with 26
second-level failure types under five categories, and traced each type to the underlying LM, to
the agent's scaffolding (memory, tools, the loop around the LM), or to both. Here an LM
annotator (:func:`annotate`) labels a trajectory with those types; each finding carries quotes
from the log and is attributed to ``lm`` or ``scaffolding`` for that trajectory. Quotes are
checked against the log as for every judge (:mod:`cogym_lab.eval.quotes`): a finding none of
whose quotes occurs in the log is kept in the file, marked unsupported, and left out of every
count. The result is stored in ``<session>/failures.json``
(:class:`~cogym_lab.eval.labels.FailureTaxonomy`), so that a later report reads it instead of
paying for the annotation again.

The five top-level categories follow from the codes (:func:`categories`); the report's
``failures`` table is computed from them, and ``failure_types`` gives each type's prevalence by
team with the LM / scaffolding split (:func:`type_rows`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cogym_lab.core.text import clean_text
from cogym_lab.eval.judges import Judge, session_log
from cogym_lab.eval.labels import (
    FAILURE_CATEGORIES,
    FailureAnnotation,
    FailureFinding,
    FailureTaxonomy,
    TaxonomyEvidence,
    TaxonomyFinding,
    read_label_file,
    write_label_file,
)
from cogym_lab.eval.quotes import QuoteLocator
from cogym_lab.eval.trajectory import SessionRecord

FAILURES_FILE = "failures.json"
ATTRIBUTIONS = ("lm", "scaffolding")
MAX_QUOTES = 3  # per finding, as the prompt asks


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


def normalise_code(value: object) -> str | None:
    """The code ``value`` names ("C.2", "c2", "(SA.5)", "PL-1"), or ``None``."""
    if not isinstance(value, str):
        return None
    found = re.fullmatch(r"\W*(c|sa|pl|ea|p)\W*(\d+)\W*", value.strip().lower())
    if not found:
        return None
    code = f"{found.group(1).upper()}.{int(found.group(2))}"
    return code if code in FAILURE_TYPES else None


# -- the annotator ----------------------------------------------------------------------------


class _TaxonomyReply(BaseModel):
    """The annotator's reply before each finding is checked (read one by one, so a bad entry
    costs only itself)."""

    findings: list[Any]


def _quotes(value: object) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return [clean_text(q) for q in value if isinstance(q, str) and q.strip()][:MAX_QUOTES]


def read_findings(reply: _TaxonomyReply) -> tuple[list[TaxonomyFinding], int]:
    """The usable findings of a reply and how many entries were dropped: an entry that is not
    an object, names no known code, or attributes it to neither ``lm`` nor ``scaffolding``."""
    findings: list[TaxonomyFinding] = []
    dropped = 0
    for entry in reply.findings:
        code = normalise_code(entry.get("code")) if isinstance(entry, dict) else None
        attribution = str(entry.get("attribution", "")).strip().lower() \
            if isinstance(entry, dict) else ""
        if code is None or attribution not in ATTRIBUTIONS:
            dropped += 1
            continue
        findings.append(TaxonomyFinding(
            code=code, category=FAILURE_TYPES[code].category,
            attribution=attribution,  # type: ignore[arg-type]
            evidence=[TaxonomyEvidence(quote=q) for q in _quotes(entry.get("evidence"))]))
    return findings, dropped


def _types_text() -> str:
    lines = []
    for category, title in FAILURE_CATEGORIES.items():
        lines.append(f"{title}:")
        lines += [f"- {t.code} {t.name}: {t.description}." for t in FAILURE_TYPES.values()
                  if t.category == category]
    return "\n".join(lines)


def verify(record: SessionRecord, findings: Iterable[TaxonomyFinding]
           ) -> list[TaxonomyFinding]:
    """``findings`` with every quote checked against the log and placed at its event."""
    locator = QuoteLocator(record)
    checked = []
    for finding in findings:
        evidence = []
        for item in finding.evidence:
            where = locator.locate(item.quote)
            evidence.append(TaxonomyEvidence(quote=item.quote, seq=where.seq,
                                             verified=where.verified))
        checked.append(finding.model_copy(update={"evidence": evidence}))
    return checked


async def annotate(judge: Judge, record: SessionRecord, task: str = ""
                   ) -> FailureTaxonomy | None:
    """The failure types in ``record``, each with checked quotes (``None`` when the annotator
    gave no usable reply after one retry, or its LM failed)."""

    def usable(answer: _TaxonomyReply) -> None:
        findings, dropped = read_findings(answer)
        if dropped and not findings:
            raise ValueError("no finding had a known code and an attribution of 'lm' or "
                             "'scaffolding'")

    outcome = record.outcome
    shown = outcome if isinstance(outcome, str) else json.dumps(outcome, ensure_ascii=False,
                                                                indent=1)
    transcript = session_log(record)[:judge.transcript_chars] + "\n\nFinal outcome:\n" + (
        shown[:3000] if outcome not in (None, "", [], {}) else "(nothing delivered)")
    answer = await judge.ask("failure_taxonomy", _TaxonomyReply, "judge:failure_taxonomy",
                             check=usable, task=task or "(not given)", transcript=transcript,
                             types=_types_text())
    if answer is None:
        return None
    findings, dropped = read_findings(answer)
    return FailureTaxonomy(annotator=judge.name, findings=verify(record, findings),
                           dropped=dropped)


# -- the file -----------------------------------------------------------------------------------


def read_taxonomy(session_dir: str | Path) -> FailureTaxonomy | None:
    """The session's ``failures.json``, or ``None`` when it has none or it is unreadable."""
    return read_label_file(Path(session_dir) / FAILURES_FILE, FailureTaxonomy)


def write_taxonomy(session_dir: str | Path, taxonomy: FailureTaxonomy) -> Path:
    return write_label_file(Path(session_dir) / FAILURES_FILE, taxonomy)


async def taxonomy_for(record: SessionRecord, judge: Judge | None, task: str = "", *,
                       force: bool = False) -> FailureTaxonomy | None:
    """The session's taxonomy: read from ``failures.json`` when there (unless ``force``), else
    annotated now by ``judge`` and written there. ``None`` without either."""
    if not force:
        saved = read_taxonomy(record.path)
        if saved is not None:
            return saved
    if judge is None:
        return None
    taxonomy = await annotate(judge, record, task)
    if taxonomy is not None:
        write_taxonomy(record.path, taxonomy)
    return taxonomy


# -- what the report makes of it ----------------------------------------------------------------


def categories(taxonomy: FailureTaxonomy) -> FailureAnnotation:
    """The five top-level categories, from the supported findings' codes (each category's
    evidence: its findings' quotes)."""
    found: dict[str, FailureFinding] = {name: FailureFinding() for name in FAILURE_CATEGORIES}
    for finding in taxonomy.findings:
        if not finding.supported:
            continue
        category = found[finding.category]
        category.present = True
        category.evidence += [item.quote for item in finding.evidence]
    return FailureAnnotation(**found)


def type_rows(taxonomies: Sequence[FailureTaxonomy]) -> list[dict[str, Any]]:
    """For one team's annotated sessions, a row per failure type found in any: the share of
    sessions with it (``prevalence``), attributed to the LM (``lm``) and to the scaffolding
    (``scaffolding``), then a row ``all`` for any type. A session with one type attributed both
    ways counts in both columns, once in ``prevalence``. Unsupported findings do not count."""
    n = len(taxonomies)
    if not n:
        return []
    with_code: dict[str, set[int]] = {}
    by_source: dict[tuple[str, str], set[int]] = {}
    for index, taxonomy in enumerate(taxonomies):
        for finding in taxonomy.findings:
            if not finding.supported:
                continue
            for key in (finding.code, "all"):
                with_code.setdefault(key, set()).add(index)
                by_source.setdefault((key, finding.attribution), set()).add(index)
    rows = []
    for code in [*FAILURE_TYPES, "all"]:
        if code not in with_code:
            continue
        known = FAILURE_TYPES.get(code)
        rows.append({"code": code, "category": known.category if known else "all",
                     "name": known.name if known else "any failure type",
                     "annotated": n, "prevalence": len(with_code[code]) / n,
                     "lm": len(by_source.get((code, "lm"), ())) / n,
                     "scaffolding": len(by_source.get((code, "scaffolding"), ())) / n,
                     "paper_real": known.paper_real if known else float("nan"),
                     "paper_simulated": known.paper_simulated if known else float("nan")})
    return rows
