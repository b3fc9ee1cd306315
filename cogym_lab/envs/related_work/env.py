"""Related Work (Co-Gym §4.2): search papers, gather them in a shared library, and write a
related-work section together in a shared editor, drafting from the library with an LM.

Citation numbers [n] belong to library entries and never change: dropping a paper leaves a gap
instead of renumbering, so the text's citations stay right. Citations to numbers outside the
library are flagged in the shared "Draft check" component.

Scoring follows the env's protocol (:mod:`cogym_lab.core.protocol`), with the judge's rubric
score s (1 to 5) kept as ``rubric_score`` under both:

* ``cogym`` (the release): ``performance`` = s / 5, and the section counts as delivered only when
  the library holds at least one paper (an undelivered section's performance is 0);
* ``cogym_lab``: ``performance`` = (s - 1) / 4, and any non-empty text is delivered.

Papers the tasks ask to cite that the offline search cannot find are marked as such in the
simulated user's hidden information (see :mod:`cogym_lab.envs.related_work.instances`).
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from cogym_lab.core import (
    Action,
    ActionError,
    ActionOutcome,
    Component,
    Deferred,
    RenderType,
    action,
)
from cogym_lab.core.actions import ItemPick
from cogym_lab.core.env import ScoreReport
from cogym_lab.core.grammar import format_action
from cogym_lab.core.plans import below
from cogym_lab.core.progress import ProgressListener, ProgressMeter
from cogym_lab.core.protocol import DEFAULT_PROTOCOL
from cogym_lab.datasets import DataItem, DataSample, format_size, is_sample
from cogym_lab.envs.dataset_env import DatasetEnv
from cogym_lab.envs.related_work.asking import answer_about_paper, clean_question
from cogym_lab.envs.related_work.corpus import corpus_files
from cogym_lab.envs.related_work.data_files import DATA_FILES, SAMPLE
from cogym_lab.envs.related_work.data_report import corpus_report
from cogym_lab.envs.related_work.drafting import draft_from_library, unresolved_citations
from cogym_lab.envs.related_work.grader import (
    RelatedWorkGrade,
    explain_section,
    grade_section,
    section_facts,
)
from cogym_lab.envs.related_work.instances import load_tasks
from cogym_lab.envs.related_work.library import Library
from cogym_lab.envs.related_work.search import BM25PaperIndex, PaperSearch, TitleLookup
from cogym_lab.lm import LM, LMError, configured_lm

log = logging.getLogger(__name__)
ANSWERS_KEPT = 20  # answers about papers each member keeps in view, newest first


@dataclass
class RelatedWorkEnv(DatasetEnv):
    """One of the 100 related-work tasks (``instance`` = 0..99; 0..7 when the bundled sample
    stands in for missing data, see :data:`~.data_files.SAMPLE`).

    ``search`` defaults to the BM25 index over the whole corpus (built once, cached on disk).
    ``drafting_lm`` and ``judge_lm`` default to the LM configured in the environment
    (``COGYM_MODEL`` ...) when first needed; without one, drafting is refused with a clear error
    and grading reports the deterministic facts only. ``protocol`` picks how the section is
    scored and when it counts as delivered (see the module doc).
    """

    index_limit: int | None = None  # search only the first N papers (quick demos and tests)
    index_cache: str | None = None  # where the index is kept (default: the user cache dir)
    search: PaperSearch | None = field(default=None, repr=False)
    drafting_lm: LM | None = field(default=None, repr=False)
    judge_lm: LM | None = field(default=None, repr=False)
    _unfindable: list[str] | None = field(default=None, init=False, repr=False)  # computed once
    #: The judge's verdict on the section the last grading saw (``None``: not judged).
    _grade: RelatedWorkGrade | None = field(default=None, init=False, repr=False)

    name = "related_work"
    typical_minutes = 25.0
    plan_step_guidance = (
        "Search papers for the step (SEARCH_PAPER), add the good ones to the library "
        "(LIBRARY_ADD_PAPER), note why they matter, and draft with LIBRARY_TO_DRAFT; complete "
        "the step with the papers as items.")
    data_files: ClassVar[tuple[DataItem, ...]] = DATA_FILES
    data_sample: ClassVar[DataSample | None] = SAMPLE
    judge_prompts: ClassVar[tuple[str, ...]] = ("judge.md", "judge_retry.md", "judge_section.md",
                                                "judge_system.md")
    data_commands = ("cogym_lab.envs.related_work.build_corpus_command:build_corpus_command",)

    @classmethod
    def data_report(cls, data_dir: Path, *, progress: bool = False) -> list[str]:
        return corpus_report(data_dir, progress=progress)

    @classmethod
    def prepared_index_folder(cls, data_dir: Path | None = None) -> Path:
        """Where ``cogym-lab data --prepare`` keeps the index: the whole corpus in the default
        cache, the one every session without ``index_limit``/``index_cache`` opens (the bundled
        sample's corpus when ``data_dir`` is None and the sample stands in)."""
        return BM25PaperIndex.folder_for(data_dir)

    def index_folder(self) -> Path:
        """Where this env's index is kept (its corpus, ``index_cache`` and ``index_limit``)."""
        return BM25PaperIndex.folder_for(self.data_dir, self.index_cache,
                                         limit=self.index_limit)

    @classmethod
    def prepare_data(cls, data_dir: Path | None, *, progress: bool = False) -> list[str]:
        """Build the whole corpus's search index in the default cache (once per corpus
        version, :meth:`prepared_index_folder`), which sessions then open in well under a
        second. ``data_dir`` None: the one sessions would read, perhaps the bundled sample's
        (seconds)."""
        started = time.monotonic()
        files = corpus_files(data_dir)
        index = BM25PaperIndex.from_corpus(files, progress=progress)
        done = "built" if index.built else "already built"
        store = index.store.disk_size()
        which = " (the bundled sample's)" if is_sample(files[0].parent) else ""
        return [f"related_work: paper search index over {len(index):,} papers{which} {done} "
                f"({time.monotonic() - started:.1f} s), in {index.folder}",
                f"  on disk: {format_size(index.disk_size())} (the papers' text "
                f"{format_size(store)}, the BM25 weights and title lookups "
                f"{format_size(index.disk_size() - store)})"]

    @classmethod
    def load_dataset(cls, data_dir: str | None,
                     protocol: str = DEFAULT_PROTOCOL) -> list[Any]:
        return load_tasks(data_dir)

    def env_args(self) -> dict[str, Any]:
        index = {"index_limit": self.index_limit, "index_cache": self.index_cache}
        return {**super().env_args(), **{k: v for k, v in index.items() if v}}

    @property
    def task_description(self) -> str:
        return (f"{self.task.query} Search for papers, collect the relevant ones in the shared "
                "library, and write the section in the shared editor, citing library papers as "
                "[n] with their library numbers.")

    def hidden_information(self) -> str:
        """The task's hidden requirements, with the papers to cite that the search in use cannot
        find marked as such (so the simulated user does not insist on them)."""
        return self.task.hidden_information(unfindable=self.unfindable_titles())

    def unfindable_titles(self) -> list[str]:
        """The titles of the papers to cite that the search cannot find: checked by exact
        normalised title against a search that can tell offline (:class:`TitleLookup`, the
        local index); nothing for any other search, such as the live arXiv one. A task that
        names no paper does not need the index."""
        if self._unfindable is None:
            titles = self.task.cited_titles
            search = self._index() if titles else None
            self._unfindable = ([t for t in titles if search.find_title(t) is None]
                                if isinstance(search, TitleLookup) else [])
        return list(self._unfindable)

    def hidden_strings(self) -> list[str]:
        """The distinctive free-text requirements (content hints), never paper titles; the rule
        is in :mod:`cogym_lab.envs.related_work.instances`."""
        return self.task.hidden_strings()

    def prepare(self, progress: ProgressListener) -> None:
        """Open the process's shared paper index (building it the first time, with its
        progress reported) and find which papers to cite it lacks, so no search waits."""
        self._index(BM25PaperIndex.build_meter(progress))
        self.unfindable_titles()

    def _index(self, progress: bool | ProgressMeter = True) -> PaperSearch:
        if self.search is None:
            self.search = BM25PaperIndex.shared(self.data_dir, self.index_cache,
                                                limit=self.index_limit, progress=progress)
        return self.search

    def _reset(self, seed: int | None) -> None:
        self.text = ""
        self.library = Library()
        self.results: dict[str, list[dict[str, Any]]] = {}
        self.seen: set[str] = set()  # ids shown by any search: only those may be added
        self.answers: dict[str, list[dict[str, Any]]] = {}  # ASK_PAPER's, by asker, newest first

    # -- the view ------------------------------------------------------------------------------

    def public_components(self) -> list[Component]:
        facts = section_facts(self.text)
        dangling = unresolved_citations(self.text, self.library.numbers())
        check = {"unique_citations": facts.unique_citations, "subsections": facts.subsections,
                 "bullet_lists": facts.bullet_lists, "words": facts.words,
                 "citations_outside_library": dangling}
        return [
            Component(name="editor", title="Related Work (shared editor)",
                      render_type=RenderType.EDITOR, content=self.text),
            Component(name="library", title="Paper library", render_type=RenderType.LIBRARY,
                      content=self.library.to_content()),
            Component(name="draft_check", title="Draft check", render_type=RenderType.TEXT,
                      content=check),
        ]

    def private_components(self, role: str) -> list[Component]:
        return [Component(name="search", title="Paper search",
                          render_type=RenderType.SEARCH_RESULTS,
                          content=self.results.get(role, [])),
                Component(name="paper_answers", title="Answers about papers",
                          render_type=RenderType.SEARCH_RESULTS,
                          content=self.answers.get(role, []))]

    def outcome(self) -> str | None:
        return self.text.strip() or None

    def delivered(self) -> bool:
        """Non-empty text; under the ``cogym`` protocol the library must also hold a paper, as
        in the release (a section written without collecting any paper is not delivered)."""
        if not super().delivered():
            return False
        return self.protocol != "cogym" or bool(self.library.entries)

    def evaluate(self) -> dict[str, float]:
        """The deterministic facts; the rubric score needs the judge (``aevaluate``)."""
        facts = section_facts(self.text)
        return {"unique_citations": float(facts.unique_citations),
                "subsections": float(facts.subsections)}

    async def aevaluate(self) -> dict[str, float]:
        """The facts, plus the judge's ``rubric_score`` (1-5) and ``performance`` on [0, 1] as
        the protocol computes it; ``performance`` is 0 when the section is not delivered."""
        scores = self.evaluate()
        self._grade = None
        judge = self.judge_lm or configured_lm("the related-work judge")
        if judge is None or not self.text.strip():
            return scores
        grade = await grade_section(self.text, self.task, judge, data_dir=self.data_dir,
                                    protocol=self.protocol)
        self._grade = grade
        performance = grade.performance if self.delivered() else 0.0
        return {**scores, "performance": performance, "rubric_score": float(grade.score)}

    def explain_scores(self, scores: dict[str, float]) -> list[ScoreReport]:
        """The judge's rubric score with its stated reason (when the last grading had a judge),
        and the citation and subsection facts of the section as it stands."""
        return explain_section(section_facts(self.text), scores, grade=self._grade,
                               delivered=self.delivered())

    # -- actions -------------------------------------------------------------------------------

    def put_plan_output(self, role: str, text: str) -> None:
        """A finished interactive plan's output goes below the text: nothing is erased."""
        self.text = below(self.text, text)

    def plan_items(self, items: Any) -> Any:
        """A step's items that name a corpus paper by id get the paper's title, authors, year
        and url where the member left them out (and kind ``paper``), so a step completed with
        ``[{"id": "1706.03762"}]`` shows a whole paper card."""
        if not isinstance(items, list):
            return items
        filled = []
        for item in items:
            paper = self._index().get(item["id"].strip()) if isinstance(item, dict) \
                and isinstance(item.get("id"), str) else None
            if paper is None or item.get("kind") not in (None, "", "paper"):
                filled.append(item)
                continue
            known = {"kind": "paper", "title": paper.title, "authors": paper.short_authors(),
                     "year": paper.year, "url": paper.url}
            filled.append({**{k: v for k, v in known.items() if v not in (None, "")},
                           **{k: v for k, v in item.items() if v not in (None, "")}})
        return filled

    @action("Search papers by topic, title or keywords (top 10). Only you see the results.",
            private=True, searches="search", query="What to look for")
    def search_paper(self, role: str, query: str) -> None:
        if not query.strip():
            raise ActionError("SEARCH_PAPER needs a query.")
        hits = self._index().search(query, k=10)
        self.results[role] = [hit.to_row() for hit in hits]
        self.seen.update(row["id"] for row in self.results[role])

    @action("Add papers from search results to the shared library.",
            picks=ItemPick(component="search", label="Add to library"),
            ids='Paper ids, e.g. "1706.03762" or "1706.03762, 1810.04805"')
    def library_add_paper(self, role: str, ids: Any) -> None:
        wanted = _ids(ids)
        unknown = [i for i in wanted if i not in self.seen]
        if not wanted or unknown:
            raise ActionError(f"Only papers from a search result can be added; not seen: "
                              f"{', '.join(unknown) or '(no ids)'}.")
        found = {i: self._index().get(i) for i in wanted}
        papers = [paper for paper in found.values() if paper is not None]
        if len(papers) < len(found):
            missing = [i for i, paper in found.items() if paper is None]
            raise ActionError(f"No paper with id {', '.join(missing)}.")
        for paper in papers:
            self.library.add(paper, role)

    @action("Remove a paper from the library. Its number is not reused.", id="The paper id")
    def library_drop_paper(self, role: str, id: str) -> None:
        if self.library.drop(id.strip()) is None:
            raise ActionError(f"{id!r} is not in the library.")

    @action("Write a note on a library paper (replaces its note).", id="The paper id",
            note="The note")
    def library_note(self, role: str, id: str, note: str) -> None:
        entry = self.library.entries.get(id.strip())
        if entry is None:
            raise ActionError(f"{id!r} is not in the library.")
        entry.note = note

    @action("Have the writing assistant write or revise the section from the library papers; "
            "the result replaces the editor text when ready.",
            instructions="What to write or change")
    def library_to_draft(self, role: str, instructions: str) -> ActionOutcome:
        if not self.library.entries:
            raise ActionError("The library is empty: add papers before drafting.")
        lm = self.drafting_lm or configured_lm("the drafting assistant")
        if lm is None:
            raise ActionError("The writing assistant has no language model set up, so it "
                              "cannot draft. Set COGYM_MODEL (and OPENAI_API_KEY or "
                              "OPENAI_BASE_URL) and start a new session, or write the section "
                              "in the shared editor yourself.")
        library = [e.for_drafting() for e in self.library.entries.values()]
        current, query = self.text, self.task.query

        async def write() -> str:
            try:
                text = await draft_from_library(lm, task_query=query, library=library,
                                                current_text=current, instructions=instructions)
            except LMError as error:
                # The actor sees this message (a person, in the panel): plain words only; the
                # model, address and status go to the log.
                log.warning("drafting for %s failed: %s", role, error)
                raise LMError(drafting_failure(error), reason=error.reason) from error
            return format_action(Action(name="EDITOR_UPDATE", args={"text": text}))

        return ActionOutcome(deferred=Deferred(work=write, label="Drafting"))

    # Private, as search results are: reading a paper is the asker's own exploration; what is
    # worth sharing goes into a library note, a plan step's output or the editor.
    @action("Ask a question about one paper of the corpus, by its id; the writing assistant "
            "answers from what the corpus holds about it (title, authors, abstract). Only you "
            "see the answer.", private=True, id='The paper id, e.g. "1706.03762"',
            question="What you want to know about the paper")
    def ask_paper(self, role: str, id: str, question: str) -> ActionOutcome:
        paper = self._index().get(id.strip()) if id.strip() else None
        if paper is None:
            raise ActionError(f"No paper with id {id.strip()[:80]!r} in the corpus: ask about "
                              f"a paper from a search result or the library, by its id. "
                              f"Expected form: ASK_PAPER(id=\"...\", question=\"...\")")
        asked = clean_question(question)
        lm = self.drafting_lm or configured_lm("the paper reader")
        if lm is None:
            raise ActionError("The writing assistant has no language model set up, so it "
                              "cannot read papers. Set COGYM_MODEL (and OPENAI_API_KEY or "
                              "OPENAI_BASE_URL) and start a new session.")

        async def read() -> dict[str, Any]:
            try:
                answer = await answer_about_paper(lm, paper, asked)
            except LMError as error:
                log.warning("asking paper %s for %s failed: %s", paper.id, role, error)
                raise LMError(f"the writing assistant's language model gave no usable answer "
                              f"({error.reason}). Try again in a moment.",
                              reason=error.reason) from error
            return {"name": "PAPER_ANSWER",
                    "args": {"id": paper.id, "question": asked, "answer": answer}}

        return ActionOutcome(deferred=Deferred(work=read, label="Reading the paper"))

    @action("Record the writing assistant's answer to a question about a paper.", internal=True,
            private=True, id="The paper id", question="The question", answer="The answer")
    def paper_answer(self, role: str, id: str, question: str, answer: str) -> None:
        paper = self._index().get(id)
        title = paper.title if paper is not None else id
        kept = self.answers.setdefault(role, [])
        kept.insert(0, {"id": id, "title": title, "question": question, "answer": answer})
        del kept[ANSWERS_KEPT:]

    @action("Replace the whole section text in the shared editor.", replaces="editor",
            text="The full text")
    def editor_update(self, role: str, text: str) -> None:
        self.text = text


def drafting_failure(error: LMError) -> str:
    """What the member who asked for a draft reads when the drafting LM failed (after "Drafting
    failed: "): what happened and what to do, in plain words (``LMError.reason``)."""
    return (f"the writing assistant's language model gave no usable draft ({error.reason}), so "
            f"the editor was left as it was. Try again in a moment; if it keeps failing, check "
            f"the model settings (COGYM_MODEL and OPENAI_BASE_URL).")


def _ids(raw: Any) -> list[str]:
    values = raw if isinstance(raw, list) else re.split(r"[,\s]+", str(raw))
    return [str(v).strip() for v in values if str(v).strip()]
