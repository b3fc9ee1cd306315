"""The fine-grained failure taxonomy of Co-Gym's error analysis (Shao et al., Appendix G,
Table 10; its five categories are Table 5).

The paper's authors coded 150 trajectories each from its real and simulated conditions with 26
second-level failure types under five categories (:data:`FAILURE_TYPES
<cogym_lab.records.failure_types.FAILURE_TYPES>`), and traced each type to the underlying LM, to
the agent's scaffolding (memory, tools, the loop around the LM), or to both. Here an LM
annotator (:func:`annotate`) labels a trajectory with those types; each finding carries quotes
from the log and is attributed to ``lm`` or ``scaffolding`` for that trajectory. Quotes are
checked against the log as for every judge (:mod:`cogym_lab.eval.judging.quotes`): a finding none of
whose quotes occurs in the log is kept in the file, marked unsupported, and left out of every
count. The result is stored in ``<session>/failures.json``
(:class:`~cogym_lab.eval.judging.labels.FailureTaxonomy`), so that a later report reads it instead
of paying for the annotation again.

The five top-level categories follow from the codes (:func:`categories`); the report's
``failures`` table is computed from them, and ``failure_types`` gives each type's prevalence by
team with the LM / scaffolding split (:func:`type_rows`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cogym_lab.core.text import clean_text
from cogym_lab.eval.judging.judges import Judge, session_log
from cogym_lab.eval.judging.labels import (
    FAILURE_CATEGORIES,
    FailureAnnotation,
    FailureFinding,
    FailureTaxonomy,
    TaxonomyEvidence,
    TaxonomyFinding,
)
from cogym_lab.eval.judging.quotes import QuoteLocator
from cogym_lab.records.failure_types import FAILURE_TYPES
from cogym_lab.records.label_files import FAILURES_FILE, read_label_file, write_label_file
from cogym_lab.records.trajectory import SessionRecord

ATTRIBUTIONS = ("lm", "scaffolding")
MAX_QUOTES = 3  # per finding, as the prompt asks


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
