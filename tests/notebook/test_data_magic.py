"""``%cogym data`` in a real kernel whose PATH has no ``cogym-lab`` (as in a server started
without the environment's ``bin``): it runs the same data command with the kernel's own Python,
reports on the data directory, takes ``download TASK`` and follows ``%cogym config data_dir``.
No test here downloads anything: the task asked to download has only hand-placed files."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogym_lab.datasets import DATA_ENV_VAR
from cogym_lab.envs.task_data import data_files, tasks_with_data
from tests.support.jupyter_process import Kernel, StandaloneKernel

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def bare_kernel(tmp_path: Path) -> Iterator[Kernel]:
    """A kernel with a new home folder, no COGYM_DATA and only the system's commands on PATH."""
    env = {key: value for key, value in os.environ.items()
           if key not in (DATA_ENV_VAR, "XDG_CACHE_HOME")}
    env |= {"HOME": str(tmp_path / "home"), "PATH": os.pathsep.join(["/usr/bin", "/bin"])}
    (tmp_path / "home").mkdir()
    with StandaloneKernel(tmp_path, env) as kernel:
        kernel.run("%load_ext cogym_lab")
        yield kernel


def test_the_data_magic_needs_no_command_on_path(bare_kernel: Kernel, tmp_path: Path,
                                                 datasets_dir: Path) -> None:
    kernel = bare_kernel
    assert kernel.value("__import__('shutil').which('cogym-lab')") is None
    assert kernel.value("__import__('sys').executable") == sys.executable

    report = kernel.run("%cogym data --no-coverage").stdout
    default = tmp_path / "home" / ".cache" / "cogym_lab" / "datasets"
    assert f"Data directory: {default} (the default cache directory)" in report, report
    for task in tasks_with_data():
        assert task in report
    total = sum(len(data_files(task)) for task in tasks_with_data())
    assert f"{total} of {total} item(s) missing." in report

    # download TASK: the related_work files are placed by hand, so nothing is fetched.
    elsewhere = tmp_path / "elsewhere"
    fetched = kernel.run(f"%cogym data download related_work --data-dir {elsewhere} "
                         "--no-coverage").stdout
    assert f"Data directory: {elsewhere} (from --data-dir)" in fetched, fetched
    assert "How to obtain the missing items:" in fetched and "travel_planning" not in fetched
    assert "4 of 4 item(s) missing." in fetched

    # The folder %cogym config sets for sessions is the one the magic reports on.
    kernel.run(f"%cogym config data_dir={datasets_dir}")
    travel = kernel.run("%cogym data travel_planning --no-coverage").stdout
    assert f"Data directory: {datasets_dir.resolve()} (from --data-dir)" in travel, travel
    count = len(data_files("travel_planning"))
    assert f"All {count} item(s) present." in travel

    usage = kernel.run("%cogym data --help").stdout
    assert all(word in usage for word in ("download", "prepare", "build-corpus", "--data-dir"))
    listed = kernel.run("%cogym --help").stdout
    assert re.search(r"^\s+data\s+Which task data is present", listed, re.MULTILINE), listed
