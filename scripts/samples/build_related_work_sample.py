"""Regenerate the Related Work sample that ships inside the package, from a full data directory.

    python scripts/samples/build_related_work_sample.py --data-dir DIR [--out FOLDER]
                                                         [--cache-dir DIR]

``DIR`` holds ``related_work/`` with the four files of the full data (and, next to it,
``LICENSE.collaborative-gym.txt``); ``--out`` defaults to the package's
``cogym_lab/envs/related_work/sample/``. The output is the same bytes for the same input:

* ``test.json``: the first :data:`TASK_COUNT` tasks, written as the release writes the file, so
  sample instance i is full instance i (every protocol takes the tasks in file order);
* ``rubric.txt``: copied whole;
* the two corpus files: the papers the full corpus's own BM25 search ranks highest for each
  task's likely queries (:func:`task_queries`), plus every paper a task asks to cite that the full
  corpus holds by normalised title. Each chosen record is copied byte for byte into the file it
  is read from in the full corpus, in the same order, so the supersede rule gives the same papers
  (superseded records are never chosen);
* ``SAMPLE.md`` (what was taken, from where, how to get the full data) and ``LICENSE.md``.

The first run over a full corpus builds its search index in the cache (minutes, once per corpus
version; ``cogym-lab data prepare related_work`` builds the same one); choosing the papers then
takes about a minute.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import re
import shutil
import sys
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cogym_lab.envs.related_work.corpus import (
    BASE_FILE,
    CORPUS_FILES,
    SUPPLEMENT_FILE,
    read_lines,
    surviving_records,
)
from cogym_lab.envs.related_work.grader import RUBRIC_FILE
from cogym_lab.envs.related_work.instances import TASKS_FILE, RelatedWorkTask, parse_task
from cogym_lab.envs.related_work.search import BM25PaperIndex

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / "cogym_lab" / "envs" / "related_work" / "sample"
COGYM_LICENSE = "LICENSE.collaborative-gym.txt"

#: How many tasks, from the start of ``test.json``.
TASK_COUNT = 8
#: How many of the best hits each kind of query contributes.
TOPIC_HITS = 250
TITLE_HITS = 150
TITLE_PART_HITS = 75
HEADING_HITS = 60
HINT_HITS = 40

_HINT_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_ID_AT_START = re.compile(rb'^\{"id": "((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Query:
    """One search a person or an agent would likely make for a task, and how many hits to keep."""

    text: str
    hits: int


def task_queries(task: RelatedWorkTask) -> list[Query]:
    """The searches the sample must answer for ``task``: its topic and title (what the agent
    sees), the parts of a title with a colon, and what the simulated user may ask for (the
    subsection headings and each sentence of the content hints)."""
    queries = [Query(task.topic, TOPIC_HITS), Query(task.title, TITLE_HITS)]
    if ":" in task.title:
        queries += [Query(part.strip(), TITLE_PART_HITS) for part in task.title.split(":")
                    if part.strip()]
    for code, value in task.raw_requirements:
        if code == "RH":
            queries.append(Query(str(value), HEADING_HITS))
        elif code == "PS":
            queries += [Query(sentence, HINT_HITS)
                        for sentence in _HINT_SENTENCE.split(" ".join(str(value).split()))
                        if sentence.strip()]
    return queries


@dataclass
class Selection:
    """The chosen paper ids in the order they were chosen, and what each task contributed."""

    ids: dict[str, None]
    corpus_size: int  # papers in the corpus they were chosen from
    per_task: list[tuple[int, int]]  # (papers the task's queries brought in, new ones)
    cited: list[tuple[int, int]]  # (papers the task asks to cite, of them in the full corpus)


def select_papers(tasks: Iterable[RelatedWorkTask], index: BM25PaperIndex) -> Selection:
    """The papers the sample holds: for each task, the hits of :func:`task_queries` and the papers
    it asks to cite that the index holds (by normalised title)."""
    chosen: dict[str, None] = {}
    per_task, cited = [], []
    for task in tasks:
        mine: dict[str, None] = {}
        for query in task_queries(task):
            mine.update((hit.paper.id, None) for hit in index.search(query.text, k=query.hits))
        found = [index.find_title(title) for title in task.cited_titles]
        mine.update((paper.id, None) for paper in found if paper is not None)
        before = len(chosen)
        chosen.update(mine)
        per_task.append((len(mine), len(chosen) - before))
        cited.append((len(task.cited_titles), sum(paper is not None for paper in found)))
    return Selection(chosen, len(index), per_task, cited)


def _id_of(line: bytes) -> str:
    match = _ID_AT_START.match(line)
    if match is not None and b"\\" not in match.group(1):
        return match.group(1).decode("utf-8")
    return str(json.loads(line)["id"])


def chosen_lines(files: tuple[Path, ...], wanted: Iterable[str]) -> list[list[bytes]]:
    """For each corpus file, its surviving records whose id is ``wanted``, as the lines they are
    there, in file order."""
    wanted = set(wanted)
    alive = surviving_records(files)
    position = 0
    kept: list[list[bytes]] = []
    for path in files:
        lines = []
        for line in read_lines(path):
            if alive[position] and _id_of(line) in wanted:
                lines.append(line)
            position += 1
        kept.append(lines)
    return kept


def write_gzip(path: Path, lines: list[bytes]) -> None:
    """``lines`` gzip-compressed, with no name or time in the header: the same lines give the
    same bytes."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=buffer,
                       mtime=0) as out:
        out.writelines(lines)
    path.write_bytes(buffer.getvalue())


def write_tasks(source: Path, target: Path) -> list[RelatedWorkTask]:
    """The first :data:`TASK_COUNT` tasks of ``source``, written to ``target`` as the release
    writes the file (4-space indent, ASCII escapes, no final newline)."""
    records = json.loads(source.read_text(encoding="utf-8"))[:TASK_COUNT]
    target.write_text(json.dumps(records, indent=4), encoding="utf-8")
    return [parse_task(i, record) for i, record in enumerate(records)]


def build_sample(data_dir: Path, out: Path, cache_dir: Path | None = None) -> Selection:
    """Write the sample of ``data_dir``'s Related Work data into ``out`` (see the module doc)."""
    source = data_dir / "related_work"
    out.mkdir(parents=True, exist_ok=True)
    tasks = write_tasks(source / TASKS_FILE, out / TASKS_FILE)
    shutil.copyfile(source / RUBRIC_FILE, out / RUBRIC_FILE)
    files = tuple(source / name for name in CORPUS_FILES)
    index = BM25PaperIndex.from_corpus(files, cache_dir, progress=True)
    selection = select_papers(tasks, index)
    counts = []
    for name, lines in zip(CORPUS_FILES, chosen_lines(files, selection.ids), strict=True):
        write_gzip(out / name, lines)
        counts.append(len(lines))
    licence = (data_dir / COGYM_LICENSE).read_text(encoding="utf-8")
    (out / "LICENSE.md").write_text(license_text(licence), encoding="utf-8")
    (out / "SAMPLE.md").write_text(sample_text(tasks, selection, counts), encoding="utf-8")
    return selection


def license_text(cogym_license: str) -> str:
    """The sample's ``LICENSE.md``: the licence and attribution of each of its parts."""
    return f"""# Licences of the Related Work sample

## `test.json` and `rubric.txt`: Collaborative Gym (MIT)

From the Collaborative Gym release (https://github.com/SALT-NLP/collaborative-gym), under its
MIT licence:

```
{cogym_license.strip()}
```

## The paper records (`papers.jsonl.gz`, `papers-2020-2024-supplement.jsonl.gz`)

- Records whose `source` is `arxiv`: metadata from arXiv (https://arxiv.org/), which arXiv
  publishes under CC0 1.0 (https://creativecommons.org/publicdomain/zero/1.0/) for its bulk
  metadata: no rights reserved.
- Records whose `source` is `acl`: from the ACL Anthology (https://aclanthology.org/), licensed
  under the Creative Commons Attribution 4.0 International License (CC BY 4.0,
  https://creativecommons.org/licenses/by/4.0/). The records are copied unchanged (title,
  abstract, authors, year, venue and link of each paper); only which papers are included was
  chosen.
"""


def sample_text(tasks: list[RelatedWorkTask], selection: Selection, counts: list[int]) -> str:
    """The sample's ``SAMPLE.md``: what was taken, from where, and how to get the full data."""
    rows = "\n".join(
        f"| {task.index} | {task.title} | {brought} | {new} | {found} of {named} |"
        for task, (brought, new), (named, found) in zip(tasks, selection.per_task,
                                                         selection.cited, strict=True))
    base, supplement = counts
    papers = textwrap.fill(
        f"- `{BASE_FILE}` ({base:,} records) and `{SUPPLEMENT_FILE}` ({supplement:,} records): "
        f"{len(selection.ids):,} of the full corpus's {selection.corpus_size:,} papers, each "
        "record copied unchanged into the file it is read from there, so the supersede rule "
        "gives the same papers. For each task they are the papers the full corpus's BM25 search "
        "ranks highest for what a person or an agent would search, and the papers the task asks "
        "to cite:", width=96, subsequent_indent="  ", break_on_hyphens=False,
        break_long_words=False)
    return f"""# The Related Work sample

A small part of the Related Work task's data that ships inside cogym_lab, laid out like
`<data dir>/related_work/`, so the task runs with no data directory at all. cogym_lab reads it
when nobody chose a data directory (no `--data-dir`, no session folder, no `COGYM_DATA`) and the
default one lacks the task's files, and says so once per process. Scores computed on it are not
comparable with the papers': the paper search holds only the papers chosen here.

## What it holds

- `test.json`: the first {len(tasks)} of the 100 tasks of the Collaborative Gym release's
  `test.json`, unchanged and in order, so instance i here is instance i of the full data.
- `rubric.txt`: the release's grading rubric, whole.
{papers}
  - its topic: the best {TOPIC_HITS};
  - its title: the best {TITLE_HITS}, and {TITLE_PART_HITS} for each part of a title with a colon;
  - each subsection heading it asks for: the best {HEADING_HITS};
  - each sentence of its content hints: the best {HINT_HITS};
  - every paper it asks to cite that the full corpus holds (by normalised title).

| task | title | papers its searches found | new to the sample | papers to cite held |
|---|---|---|---|---|
{rows}

## Where it comes from

The tasks and the rubric are from the Collaborative Gym release (MIT). The paper records are
arXiv metadata (CC0) and ACL Anthology records (CC BY 4.0), as built by
`cogym-lab data build-corpus`. `LICENSE.md` has the licences and the attribution.

## The full data

`cogym-lab data related_work` lists the four files of the full data, each with where it comes
from and how to get it: `test.json` and `rubric.txt` from the Collaborative Gym release, and
the paper corpus built from the public arXiv and ACL Anthology dumps with
`cogym-lab data build-corpus` (see `docs/related-work-corpus.md`). Put them in
`<data dir>/related_work/` (or point `--data-dir` / `COGYM_DATA` at a folder that has them):
the full data is then read instead of this sample.

Maintainers regenerate this folder from a full data directory with
`python scripts/samples/build_related_work_sample.py --data-dir DIR`.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True,
                        help="A full data directory (the folder that holds related_work/).")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="Where to write the sample (default: the package's sample folder).")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="Where the full corpus's search index is kept (default: the user "
                             "cache).")
    args = parser.parse_args(argv)
    selection = build_sample(args.data_dir, args.out, args.cache_dir)
    print(f"{len(selection.ids):,} papers for {len(selection.per_task)} tasks, in {args.out}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
