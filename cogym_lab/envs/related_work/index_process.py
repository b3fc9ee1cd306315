"""Build the paper index in a child process, its progress read back line by line.

A build in a thread of the Jupyter server still stalls the server's event loop: large numpy and
bm25s calls hold the interpreter lock for up to most of a second at a time (p99 lag 78 ms, max
0.76 s, by ``benchmarks/index_build_lag.py``). A child process has an interpreter of its own, so
the server only reads its progress. The child is ``python -m`` :mod:`.index_child`: it writes one
JSON :class:`~cogym_lab.core.progress.Progress` per line on stdout, and its errors on stderr.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from cogym_lab.core.progress import Progress, ProgressListener

__all__ = ["build_in_child"]

CHILD = "cogym_lab.envs.related_work.index_child"  # by name: importing it loads the index code


def build_in_child(files: tuple[Path, ...], cache_dir: str | Path | None, limit: int | None,
                   listener: ProgressListener | None = None, *, echo: bool = False) -> None:
    """Build the index of ``files`` (in reading order) into its cache folder in a child
    process, passing its progress to ``listener``; returns when the index is on disk.
    ``echo`` lets the child draw its progress bars on this process's stderr too. Raises
    ``RuntimeError`` with the child's last words when the build fails."""
    command = [sys.executable, "-m", CHILD, *[str(f) for f in files]]
    if cache_dir is not None:
        command += ["--cache-dir", str(cache_dir)]
    if limit is not None:
        command += ["--limit", str(limit)]
    if echo:
        command.append("--echo")
    # Live on this stderr when echoing; else kept aside for the error message. Never a pipe:
    # a child writing more than a pipe holds would wait for a reader that waits on stdout.
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errors, subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=None if echo else errors, text=True,
            encoding="utf-8") as child:
        assert child.stdout is not None
        for line in child.stdout:
            if listener is not None:
                listener(Progress.model_validate_json(line))
        code = child.wait()
        errors.seek(0)
        last_words = errors.read()[-4000:]
    if code != 0:
        raise RuntimeError(f"Building the paper index failed (exit code {code}):\n"
                           + (last_words or "(its messages are above)"))
