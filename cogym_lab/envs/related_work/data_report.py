"""What ``cogym-lab data`` says about the Related Work corpus beyond present or missing.

It reads the corpus (both files, supersede rule applied) and reports how many papers it holds and
how many of the papers the tasks ask to cite (the ``RP`` hidden requirements) it holds by
normalised exact title: about ten seconds. See ``docs/related-work-corpus.md``.
"""

from __future__ import annotations

from pathlib import Path

from cogym_lab.envs.related_work.corpus import CORPUS_FILES
from cogym_lab.envs.related_work.corpus_build import built_from
from cogym_lab.envs.related_work.coverage import title_coverage
from cogym_lab.envs.related_work.data_files import BUILD_COMMAND
from cogym_lab.envs.related_work.instances import TASKS_FILE, load_tasks, related_work_dir

__all__ = ["corpus_report"]


def corpus_report(data_dir: Path, *, progress: bool = False) -> list[str]:
    """The corpus's reading rule, paper count and the tasks' title coverage, or why the count
    and coverage cannot be given (a file is missing); one printable line each."""
    folder = related_work_dir(data_dir)
    order = ", then ".join(CORPUS_FILES)
    lines = [f"Related Work corpus: {order} (a later record replaces the earlier one with its id "
             "and removes the ids in its `supersedes` list)."]
    missing = [name for name in (*CORPUS_FILES, TASKS_FILE) if not (folder / name).is_file()]
    if missing:
        lines.append(f"  Paper count and title coverage need {', '.join(missing)} (missing).")
        if any(name in CORPUS_FILES for name in missing):
            lines.append(f"  Build the corpus from public dumps: {BUILD_COMMAND}")
        return lines
    built = built_from(folder)
    if built is not None:
        lines.append(f"  Built locally from public dumps: {built}.")
    coverage = title_coverage(load_tasks(data_dir), [folder / name for name in CORPUS_FILES],
                              progress=progress)
    return [*lines,
            f"  {coverage.papers:,} papers.",
            f"  Papers the tasks ask to cite (RP): {coverage.found} of {coverage.total} "
            f"({coverage.share:.0%}) are in the corpus by normalised exact title (NFKC, lower "
            "case, punctuation and spacing ignored); the simulated user is told the other "
            f"{coverage.total - coverage.found} are not findable offline."]
