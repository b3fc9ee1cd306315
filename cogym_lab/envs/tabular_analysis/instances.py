"""The Tabular Analysis task instances: a subset of DiscoveryBench-Real (test split).

Data layout (``<data dir>/tabular_analysis/discoverybench/real/test/``): one folder per dataset
("domain" below, e.g. ``archaeology``, ``meta_regression_raw``) holding the data files and
``metadata_<N>.json`` files. Each metadata file has ``id``, ``domain`` (a broad field such as
"sociology"), ``workflow_tags``, ``domain_knowledge`` (missing in one file), ``datasets`` (a list
of ``{name, description, columns: {raw: [{name, description}]}}``, the files the queries use) and
``queries``: a list holding one list of ``{qid, question_type, question}``. ``answer_key_real.csv``
(columns ``dataset, metadataid, query_id, gold_hypo``) holds one gold hypothesis per query; a
query is identified by *folder name + metadata id + query id*. All 239 queries of the split have
exactly one gold hypothesis.

The bundled sample (``data_files.SAMPLE``, read when nobody chose a data directory and the
default one lacks the data; :func:`data_folder`) has the same layout for two small domains, but
its answer key is sealed (``sealed.py``): no file in the package holds a gold hypothesis plain.

Selection rule (Co-Gym, Appendix C.2: "instances ... that include unprocessed table or more than
one table"). A query is selected when its metadata file

* lives in a folder whose name ends in ``_raw`` (the unprocessed versions of a dataset:
  ``meta_regression_raw``, ``nls_raw``), or
* lists more than one entry under ``datasets``.

On the pinned DiscoveryBench data this selects **117** queries from 76 metadata files:
archaeology 38, introduction_pathways_non-native_plants 16, meta_regression_raw 50, nls_raw 7,
worldbank_education_gdp_indicators 6.

Co-Gym's 110: the multi-table queries alone are exactly 110 (every ``meta_regression_raw``
metadata file also lists two tables), and the 7 ``nls_raw`` queries are the only unprocessed
single-table ones. The Co-Gym release lists its instances by metadata file, and its list is
exactly the multi-table queries, although the paper's wording includes unprocessed tables.
``load_instances(..., multi_table_only=True)`` gives those 110; the scoring protocol picks the
set (``TabularAnalysisEnv.load_dataset``: 110 under ``"cogym"``, 117 under ``"cogym_lab"``).
Indices agree between the two sets up to the ``nls_raw`` queries (positions 104-110 of the 117).

One listed file is not a table (``phylogenetic_tree.txt``, Newick text, in the invasive-plants
folder); it is kept in ``files`` because the metadata lists it.

Order: by folder name, then metadata id (numeric), then query id; ``index`` is the position in
that order (of the selection it was loaded with).

Hidden strings (:meth:`TabularInstance.hidden_strings`): the exact texts that must reach an agent
only through the simulated user. The gold hypothesis, whole; and every *distinctive fragment* of
the domain knowledge, the dataset descriptions and the column descriptions. A fragment is a
sentence of one of those texts (split at line breaks, and after ``.``, ``!``, ``?`` or ``;``
followed by a space); it is distinctive when it has at least :data:`HIDDEN_MIN_WORDS` words and
:data:`HIDDEN_MIN_CHARS` characters and does not occur in the query (which the agent is given).
Shorter fragments ("Common Era", "Year of Publication of the study") would be found in honest
analyses and column headers.

The Co-Gym release numbers the same 110 queries in another order (the non-native plants folder
first); cogym_lab keeps its alphabetical order under both protocols.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from cogym_lab.datasets import DatasetError, task_folder
from cogym_lab.envs.tabular_analysis.data_files import DATA_FILES, SAMPLE
from cogym_lab.envs.tabular_analysis.sealed import SEALED_NAME, unseal

__all__ = ["EXPECTED_COUNT", "EXPECTED_MULTI_TABLE_COUNT", "HIDDEN_MIN_CHARS", "HIDDEN_MIN_WORDS",
           "TEST_SUBDIR", "ColumnInfo", "DatasetInfo", "TabularInstance", "copy_files",
           "data_folder", "distinctive_fragments", "is_selected", "load_instances", "split_dir"]

TEST_SUBDIR = Path("discoverybench") / "real" / "test"
ANSWER_KEY = "answer_key_real.csv"
EXPECTED_COUNT = 117  # unprocessed (``*_raw`` folder) or more than one table
EXPECTED_MULTI_TABLE_COUNT = 110  # more than one table only (the count Co-Gym reports)
HIDDEN_MIN_WORDS = 8  # a hidden fragment's minimum length in words ...
HIDDEN_MIN_CHARS = 40  # ... and in characters
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    description: str


@dataclass(frozen=True)
class DatasetInfo:
    """One data file as its metadata describes it."""

    name: str
    description: str
    columns: tuple[ColumnInfo, ...] = ()
    domain_knowledge: str = ""  # a few files carry knowledge of their own

    def for_judge(self) -> dict[str, Any]:
        """What DiscoveryBench's judge is shown of the file: its description and columns."""
        return {"dataset_description": self.description,
                "columns": [{"name": c.name, "description": c.description}
                            for c in self.columns]}


@dataclass(frozen=True)
class TabularInstance:
    """One DiscoveryBench-Real query with what the task needs around it."""

    index: int
    domain: str  # the dataset folder, e.g. "meta_regression_raw"
    metadata_id: int
    query_id: int
    query: str
    files: tuple[str, ...]  # data files, relative to the test folder ("<domain>/<name>")
    gold_hypothesis: str
    domain_knowledge: str
    dataset_descriptions: str  # each file's description and its columns' descriptions
    question_type: str = ""  # "context", "variables" or "relationship" (as in the metadata)
    workflow_tags: str = ""
    field: str = ""  # the metadata's own "domain", a broad field such as "sociology"
    datasets: tuple[DatasetInfo, ...] = ()  # the files' descriptions, structured

    @property
    def key(self) -> str:
        """``<domain>/<metadata id>/<query id>``: unique within the split."""
        return f"{self.domain}/{self.metadata_id}/{self.query_id}"

    @property
    def file_names(self) -> tuple[str, ...]:
        return tuple(Path(f).name for f in self.files)

    def hidden_information(self) -> str:
        """What the simulated user knows and the agent does not: the domain knowledge and the
        dataset and column descriptions, as plain text."""
        parts: list[str] = []
        if self.domain_knowledge.strip():
            parts.append("Domain knowledge:\n" + self.domain_knowledge.strip())
        if self.dataset_descriptions.strip():
            parts.append("Datasets:\n" + self.dataset_descriptions.strip())
        return "\n\n".join(parts)

    def datasets_for_judge(self) -> str:
        """The datasets as DiscoveryBench's judge sees them (a JSON list of each file's
        description and columns); the plain-text descriptions for an instance built without
        structured ones."""
        if not self.datasets:
            return self.dataset_descriptions.strip()
        return json.dumps([d.for_judge() for d in self.datasets], ensure_ascii=False)

    def hidden_strings(self) -> list[str]:
        """The gold hypothesis and the distinctive fragments of the hidden information (rule in
        the module docstring), each once, in order."""
        sources = [self.domain_knowledge]
        for dataset in self.datasets:
            sources += [dataset.description, dataset.domain_knowledge]
            sources += [column.description for column in dataset.columns]
        if not self.datasets:  # built by hand: only the plain-text descriptions exist
            sources.append(self.dataset_descriptions)
        visible = _squash(self.query)
        found = [self.gold_hypothesis.strip()] if _squash(self.gold_hypothesis) else []
        for text in sources:
            found += distinctive_fragments(text)
        unique = dict.fromkeys(f for f in found if _squash(f) not in visible)
        return list(unique)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["files"] = list(self.files)
        return data


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


def distinctive_fragments(text: str) -> list[str]:
    """The sentences of ``text`` long enough to be told from honest text (see the module
    docstring), stripped."""
    pieces = (piece.strip() for piece in _SENTENCE_END.split(text or ""))
    return [piece for piece in pieces
            if len(piece.split()) >= HIDDEN_MIN_WORDS and len(piece) >= HIDDEN_MIN_CHARS]


def data_folder(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The task's folder: ``<data dir>/tabular_analysis/``, or the bundled sample when nobody
    chose a data directory and the default one lacks the files (announced once; see
    :func:`cogym_lab.datasets.task_folder`). Raises :class:`DataMissing` when a chosen data
    directory lacks them. Every loader of this module finds its files through here."""
    return task_folder(DATA_FILES, SAMPLE, _as_str(data_dir))


def split_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The DiscoveryBench-Real test folder (of the full data or of the sample, see
    :func:`data_folder`); raises :class:`DataMissing` when a chosen data directory lacks it."""
    return data_folder(data_dir) / TEST_SUBDIR


def _as_str(path: str | os.PathLike[str] | None) -> str | None:
    """``path`` as the ``cogym_lab.datasets`` functions take it (an empty string stays empty)."""
    return None if path is None else os.fspath(path)


def is_selected(domain: str, metadata: dict[str, Any], *, multi_table_only: bool = False) -> bool:
    """The selection rule (see the module docstring) for one metadata file of folder ``domain``."""
    multi_table = len(metadata.get("datasets") or []) > 1
    return multi_table if multi_table_only else (domain.endswith("_raw") or multi_table)


def _dataset_info(dataset: dict[str, Any]) -> DatasetInfo:
    columns = tuple(  # all of them, nameless ones too: the judge sees what DiscoveryBench shows
        ColumnInfo(str(c.get("name") or "").strip(), str(c.get("description") or "").strip())
        for c in (dataset.get("columns") or {}).get("raw", []))
    return DatasetInfo(name=str(dataset.get("name") or "?"),
                       description=str(dataset.get("description") or "").strip(),
                       columns=columns,
                       domain_knowledge=str(dataset.get("domain_knowledge") or "").strip())


def _describe_datasets(datasets: tuple[DatasetInfo, ...]) -> str:
    blocks: list[str] = []
    for dataset in datasets:
        lines = [f"File {dataset.name}:"]
        if dataset.description:
            lines.append(f"  Description: {dataset.description}")
        if dataset.domain_knowledge:
            lines.append(f"  Domain knowledge: {dataset.domain_knowledge}")
        named = [column for column in dataset.columns if column.name]
        if named:
            lines.append("  Columns:")
            for column in named:
                lines.append(f"  - {column.name}"
                             + (f": {column.description}" if column.description else ""))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _metadata_files(folder: Path) -> list[tuple[int, Path]]:
    found = []
    for path in folder.glob("metadata_*.json"):
        suffix = path.stem.removeprefix("metadata_")
        if suffix.isdigit():
            found.append((int(suffix), path))
    return sorted(found)


def _answer_key(root: Path) -> tuple[Path, str]:
    """Where the gold hypotheses of the test folder ``root`` are, and their CSV text: the
    answer key of the full data, or the bundled sample's sealed one (see ``sealed.py``)."""
    key_path = root / ANSWER_KEY
    if key_path.is_file():
        return key_path, key_path.read_bytes().decode("utf-8")  # newlines kept for csv
    sealed = root / SEALED_NAME
    if sealed.is_file():
        return sealed, unseal(sealed.read_bytes())
    raise DatasetError(f"The DiscoveryBench answer key is missing: expected {key_path}. "
                       "`cogym-lab data` says how to get it.")


@cache  # keyed by folder: the sample and the full data never share an entry
def _load(root: Path, multi_table_only: bool) -> tuple[TabularInstance, ...]:
    key_path, key_text = _answer_key(root)
    gold = {(row["dataset"].strip(), int(row["metadataid"]), int(row["query_id"])):
            row["gold_hypo"].strip()
            for row in csv.DictReader(io.StringIO(key_text, newline=""))}
    instances: list[TabularInstance] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        domain = folder.name
        for metadata_id, path in _metadata_files(folder):
            metadata = json.loads(path.read_text(encoding="utf-8"))
            if not is_selected(domain, metadata, multi_table_only=multi_table_only):
                continue
            datasets = list(metadata.get("datasets") or [])
            described = tuple(_dataset_info(d) for d in datasets)
            files = tuple(f"{domain}/{d['name']}" for d in datasets)
            queries = [q for group in metadata.get("queries") or []
                       for q in (group if isinstance(group, list) else [group])]
            for query in sorted(queries, key=lambda q: int(q["qid"])):
                qid = int(query["qid"])
                hypothesis = gold.get((domain, metadata_id, qid))
                if hypothesis is None:
                    raise DatasetError(f"No gold hypothesis for {domain}/{metadata_id}/{qid} "
                                       f"in {key_path}")
                instances.append(TabularInstance(
                    index=len(instances), domain=domain, metadata_id=metadata_id,
                    query_id=qid, query=str(query["question"]).strip(), files=files,
                    gold_hypothesis=hypothesis,
                    domain_knowledge=str(metadata.get("domain_knowledge") or "").strip(),
                    dataset_descriptions=_describe_datasets(described),
                    question_type=str(query.get("question_type") or ""),
                    workflow_tags=str(metadata.get("workflow_tags") or ""),
                    field=str(metadata.get("domain") or ""), datasets=described))
    return tuple(instances)


def load_instances(data_dir: str | os.PathLike[str] | None = None, *,
                   multi_table_only: bool = False) -> list[TabularInstance]:
    """The selected queries, in a fixed order (cached per data folder).

    ``data_dir`` defaults to :func:`cogym_lab.datasets.data_dir`, or to the bundled sample when
    nobody chose one and the default lacks the data (:func:`data_folder`). ``multi_table_only``
    keeps only the queries over more than one table (110, Co-Gym's set) instead of cogym_lab's
    rule (117).
    """
    root = split_dir(data_dir).resolve()
    return list(_load(root, multi_table_only))


def copy_files(instance: TabularInstance, workdir: str | os.PathLike[str],
               data_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Copy ``instance``'s data files into ``workdir`` (created if needed), flat, and return the
    copies in the order of ``instance.files``. A name already taken (by another file of this
    instance, or by a different file already in ``workdir``) gets a ``_2``, ``_3``, ... suffix
    before its extension; an identical file already there is overwritten in place."""
    root = split_dir(data_dir)
    target_dir = Path(workdir)
    target_dir.mkdir(parents=True, exist_ok=True)
    copied: list[Path] = []
    taken: set[str] = set()
    for relative in instance.files:
        source = root / relative
        if not source.is_file():
            raise DatasetError(f"Data file {relative} of instance {instance.key} is missing: "
                               f"expected {source}")
        name = source.name
        stem, suffix = Path(name).stem, Path(name).suffix
        counter = 1
        while name in taken or ((target_dir / name).exists()
                                and not _same_file(source, target_dir / name)):
            counter += 1
            name = f"{stem}_{counter}{suffix}"
        taken.add(name)
        target = target_dir / name
        shutil.copyfile(source, target)
        copied.append(target)
    return copied


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.stat().st_size != b.stat().st_size:
            return False
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False
