"""``scripts/lab.sh``, run with an environment of stand-ins: it announces each phase with its time,
installs without hiding pip's output, prepares the data with the command the docs name, and
starts JupyterLab with the environment's commands first on its PATH (so ``!cogym-lab`` works in
a cell). Installing for real takes minutes; what the stand-ins record is what the script asked."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

LAB_SCRIPT = REPO_ROOT / "scripts" / "lab.sh"

#: Each stand-in prints what it was asked; ``cogym-lab`` exits with $FAKE_PREPARE_EXIT.
STAND_INS = {
    "python": 'echo "python $*"\n',
    "cogym-lab": 'echo "cogym-lab $*"\nexit "${FAKE_PREPARE_EXIT:-0}"\n',
    "jupyter": 'echo "jupyter $*"\necho "PATH=$PATH"\n',
}


@pytest.fixture
def fake_venv(tmp_path: Path) -> Path:
    """A folder shaped like a virtual environment whose commands are the stand-ins."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for name, body in STAND_INS.items():
        command = venv / "bin" / name
        command.write_text("#!/usr/bin/env bash\n" + body)
        command.chmod(0o755)
    return venv


def run_lab(venv: Path, *arguments: str, **environment: str) -> list[str]:
    env = {**os.environ, "COGYM_LAB_VENV": str(venv), "COGYM_MODEL": "", **environment}
    done = subprocess.run(["bash", str(LAB_SCRIPT), *arguments], env=env, capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout.splitlines()


def test_each_phase_is_announced_and_timed(fake_venv: Path) -> None:
    lines = run_lab(fake_venv)
    phases = [line for line in lines if line.startswith("[")]
    assert [line[:5] for line in phases] == ["[1/4]", "[2/4]", "[3/4]", "[4/4]"], lines
    assert "already there" in phases[0]
    assert phases[1].startswith("[2/4] Installing cogym_lab and JupyterLab")
    timed = [line.strip() for line in lines if line.strip().startswith("done in ")]
    assert len(timed) == 3, lines  # phases 1 to 3; the fourth becomes JupyterLab
    assert all(line.split()[2].isdigit() for line in timed), timed


def test_the_big_install_shows_pips_output_and_prepare_builds_the_index(fake_venv: Path) -> None:
    lines = run_lab(fake_venv)
    installs = [line for line in lines if line.startswith("python -m pip install")]
    assert len(installs) == 2, lines
    assert "--quiet" in installs[0] and "--upgrade pip" in installs[0]  # pip's own update
    assert "--quiet" not in installs[1] and installs[1].endswith(".[lab]")
    assert "cogym-lab data prepare related_work --no-coverage" in lines
    assert lines.index("cogym-lab data prepare related_work --no-coverage") < next(
        i for i, line in enumerate(lines) if line.startswith("jupyter "))


def test_the_server_finds_the_environments_commands_first(fake_venv: Path) -> None:
    lines = run_lab(fake_venv, "--port", "8899")
    started = next(line for line in lines if line.startswith("jupyter "))
    assert started.startswith("jupyter lab examples/") and started.endswith("--port 8899")
    path = next(line for line in lines if line.startswith("PATH="))
    assert path.removeprefix("PATH=").split(os.pathsep)[0] == str(fake_venv / "bin")


def test_a_failed_prepare_says_so_and_jupyterlab_still_starts(fake_venv: Path) -> None:
    lines = run_lab(fake_venv, FAKE_PREPARE_EXIT="1")
    assert any("the index was not built" in line for line in lines), lines
    assert any(line.startswith("jupyter lab examples/") for line in lines)


def test_without_a_model_the_script_says_what_to_set(fake_venv: Path) -> None:
    assert any("No LM is set" in line for line in run_lab(fake_venv))
    assert not any("No LM is set" in line for line in run_lab(fake_venv, COGYM_MODEL="m"))
