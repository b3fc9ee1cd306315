"""The child process that builds the paper index for
:func:`~cogym_lab.envs.related_work.index_process.build_in_child`: one JSON progress record per
line on stdout."""

from __future__ import annotations

import argparse
from pathlib import Path

from cogym_lab.core.progress import Progress
from cogym_lab.envs.related_work.search import BM25PaperIndex


def _main() -> None:
    parser = argparse.ArgumentParser(description="Build the paper search index (the server "
                                                 "runs this in a child process).")
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--echo", action="store_true")
    options = parser.parse_args()

    def report(progress: Progress) -> None:
        print(progress.model_dump_json(), flush=True)

    meter = BM25PaperIndex.build_meter(report, echo=options.echo)
    BM25PaperIndex.from_corpus(tuple(options.files), options.cache_dir, limit=options.limit,
                               progress=meter)


if __name__ == "__main__":
    _main()
