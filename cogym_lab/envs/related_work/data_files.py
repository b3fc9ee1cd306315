"""The files the Related Work task reads from the data directory, where each comes from, the
sample of them that ships inside the package, and which folder the task reads them from."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cogym_lab.datasets import DataItem, DataSample, task_folder, uses_sample

__all__ = ["BUILD_COMMAND", "DATA_FILES", "SAMPLE", "data_file", "task_dir"]

_TASK = "related_work"

#: How a person makes the corpus files (there is no single download of them).
BUILD_COMMAND = ("cogym-lab data build-corpus --arxiv <arxiv-metadata-oai-snapshot.json> "
                 "--acl <anthology+abstracts.bib.gz>")

_COGYM = "the Collaborative Gym release"
_COGYM_HOME = "https://github.com/SALT-NLP/collaborative-gym"
# The release's commit that holds the task files (the same blobs as the shared copies).
_COGYM_RAW = ("https://raw.githubusercontent.com/SALT-NLP/collaborative-gym/"
              "1e3b02e9be9593d092833d8dee01b12359200bd9/datasets/RelatedWorkWriting")

DATA_FILES: tuple[DataItem, ...] = (
    DataItem(_TASK, f"{_TASK}/test.json",
             "100 related-work writing tasks with hidden requirements", _COGYM, _COGYM_HOME,
             "MIT", f"{_COGYM_RAW}/test.json",
             sha256="d146b5b80a9183c03af8897d4d37cd89b2fcea5946587304f4cdaf2a80e509a4",
             size=124774),
    DataItem(_TASK, f"{_TASK}/rubric.txt",
             "the 1-5 rubric used to grade a related-work section", _COGYM, _COGYM_HOME, "MIT",
             f"{_COGYM_RAW}/rubric.txt",
             sha256="118712e43234000d7d2a202ec0a60fb8067efacc6b71a8ad4a65b471b1245157",
             size=4698),
    DataItem(_TASK, f"{_TASK}/papers.jsonl.gz",
             "computer-science papers for the offline paper search, from the arXiv metadata "
             "snapshot (CC0) and the ACL Anthology (CC BY 4.0); built from their public dumps "
             "by `cogym-lab data build-corpus`",
             "arXiv metadata / ACL Anthology",
             "https://info.arxiv.org/help/bulk_data.html and https://aclanthology.org/",
             "CC0 / CC BY 4.0", build=BUILD_COMMAND),
    # Read after papers.jsonl.gz: its records replace those with the same id and remove the
    # ids they supersede (corpus.py).
    DataItem(_TASK, f"{_TASK}/papers-2020-2024-supplement.jsonl.gz",
             "2020-2024 computer-science papers of the arXiv metadata snapshot (CC0), read "
             "after papers.jsonl.gz; built with it by `cogym-lab data build-corpus`",
             "arXiv metadata", "https://info.arxiv.org/help/bulk_data.html", "CC0",
             build=BUILD_COMMAND),
)


def data_file(name: str) -> DataItem:
    """The declared item whose file is called ``name`` (``rubric.txt``, say)."""
    return next(item for item in DATA_FILES if item.name.rsplit("/", 1)[-1] == name)


#: The bundled sample: the same four files for the first tasks of ``test.json``, with the papers
#: their searches find (``scripts/samples/build_related_work_sample.py`` makes it).
SAMPLE = DataSample("related_work", Path(__file__).parent / "sample",
                    "8 of the 100 tasks, 3,154 papers chosen for them",
                    full_data=("cogym-lab data download related_work", BUILD_COMMAND))


def task_dir(data_dir: str | Path | None = None,
             needs: Sequence[DataItem] = DATA_FILES) -> Path:
    """The folder the task reads its files from: the bundled :data:`SAMPLE` when nobody chose a
    data directory and the default one lacks any of the task's files, else
    ``<data dir>/related_work/``, which must hold ``needs`` (else
    :class:`~cogym_lab.datasets.DataMissing`, saying how to get them).

    The choice looks at all the task's files whatever one reader ``needs``, so the tasks, the
    rubric and the corpus always come from the same place."""
    if uses_sample(DATA_FILES, SAMPLE, data_dir):
        return task_folder(DATA_FILES, SAMPLE, data_dir)
    return task_folder(needs, None, data_dir)
