"""``%cogym new`` in a real kernel (no Jupyter server: the session runs in the kernel) on a task
whose data is missing but which carries a sample: the cell's output says once, in the
notebook's words (``%cogym data download TASK``), that the session reads the sample, the panel
gets the same notice, ``session.json`` says ``"data": "sample"``, and the command-line wording
never reaches the cell.

The task is ``sampled_todo`` (tests/support/sampled_task.py), registered in the kernel by the
test; the kernel has a fresh home and cache folder and no ``COGYM_DATA``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogym_lab.datasets import DATA_ENV_VAR
from cogym_lab.lm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from tests.support.jupyter_process import Kernel, StandaloneKernel
from tests.support.paths import REPO_ROOT
from tests.support.sampled_task import TASK, team_file

pytestmark = pytest.mark.timeout(300)

NOTICE = f"Using the {TASK} sample that comes with cogym_lab (1 of the 3 trips, the beach)"


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Kernel]:
    for name in (DATA_ENV_VAR, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL):
        monkeypatch.delenv(name, raising=False)  # the kernel starts from this environment
    env = {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "PYTHONPATH": str(REPO_ROOT)}
    with StandaloneKernel(tmp_path, env) as started:
        started.run("%load_ext cogym_lab\n"
                    "from tests.support.sampled_task import install\n"
                    f"install({str(tmp_path / 'sample')!r})")
        yield started


def test_cogym_new_says_it_once_in_the_notebooks_words(kernel, tmp_path) -> None:
    team = team_file(tmp_path)
    started = kernel.run(f"%cogym new {TASK} --instance 0 --team {team}")
    assert "started in this kernel" in started.stdout, started.stdout + started.stderr
    assert started.stdout.count(NOTICE) == 1, started.stdout
    assert f"`%cogym data download {TASK}`" in started.stdout
    assert f"`%cogym data {TASK}`" in started.stdout
    assert "cogym-lab data" not in started.stdout + started.stderr  # no command-line words
    assert NOTICE not in started.stderr

    notice = kernel.value("cogym_session.data_notice")
    assert notice.startswith(NOTICE) and notice in started.stdout
    assert kernel.value("cogym_session.panel.data_notice") == notice
    kernel.run("cogym_session.end()\nawait cogym_session.wait(timeout=60)")
    folder = Path(kernel.value("str(cogym_session.results_dir)"))
    assert json.loads((folder / "session.json").read_text())["data"] == "sample"

    # A second session of the task in the same kernel says it again, once: it is news there.
    again = kernel.run(f"%cogym new {TASK} --instance 0 --team {team} --again")
    assert again.stdout.count(NOTICE) == 1, again.stdout
