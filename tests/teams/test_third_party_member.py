"""A member type from a package cogym_lab knows nothing about, installed the ordinary way.

``tests/fixtures/thirdparty_member`` is a tiny package with a rule-based agent for the todo task
(``packer``) that it makes known through the ``cogym_lab.members`` entry point. It is installed
with pip into a folder of its own, and every run below happens in a subprocess with that folder
on ``PYTHONPATH``, so this test process never sees it. A team file names the new type (and the
built-in ``example-user``), and then each way of running a session plays it: ``cogym-lab run``,
the batch runner, and ``%cogym`` in a real IPython kernel.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cogym_lab.members import member_type_names
from tests.support.jupyter_process import StandaloneKernel
from tests.support.paths import FIXTURES

pytestmark = pytest.mark.timeout(300)

FIXTURE = FIXTURES / "thirdparty_member"
TYPE_NAME = "packer"  # the entry point's name in the fixture's pyproject.toml
TEAM = """\
name = "packer-team"
description = "The third-party packer agent with the todo task's rule-based user."
tasks = ["todo"]

[session]
idle_seconds = 2
timeout = 60

[members.agent]
type = "packer"

[members.user]
type = "example-user"
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The fixture package, installed with pip into a folder of its own."""
    assert importlib.util.find_spec("pip") is not None, "pip is missing from the test venv"
    target = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "--no-input", "--target", str(target), str(FIXTURE)],
        check=False, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})  # nothing written in the fixture
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (target / "cogym_packer" / "__init__.py").is_file()
    return target


@pytest.fixture
def team_file(tmp_path) -> Path:
    path = tmp_path / "packer-team.toml"
    path.write_text(TEAM)
    return path


def with_package(installed: Path) -> dict[str, str]:
    """This environment, with the installed package importable and no LM settings."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("COGYM_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY")}
    return env | {"PYTHONPATH": str(installed), "COLUMNS": "200"}


def python(code: str, installed: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=False,
                          capture_output=True, text=True, timeout=180, cwd=cwd,
                          env=with_package(installed))


def read_events(directory: Path) -> list[dict[str, Any]]:
    lines = (directory / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def assert_the_packer_played(directory: Path) -> None:
    """The session in ``directory`` ended by the packer's FINISH, after it added what the
    example user asked for (todo's instance 0: a rain jacket and a headlamp)."""
    session = json.loads((directory / "session.json").read_text())
    assert session["task"] == "todo"
    assert session["status"] == "finished" and session["end_reason"] == "finished", session
    assert session["delivered"] is True
    events = read_events(directory)
    added = [e["action"] for e in events if e["type"] == "action" and e["actor"] == "agent"]
    assert added == ['ADD_ITEM(text="rain jacket")', 'ADD_ITEM(text="headlamp")'], added
    said = [e["action"] for e in events if e["type"] == "message" and e["actor"] == "agent"]
    assert said and "Packed: rain jacket, headlamp." in said[-1]
    finish = [e for e in events if e["type"] == "finish"]
    assert [e["actor"] for e in finish] == ["agent"]
    assert events[-1]["type"] == "end" and events[-1]["info"]["by"] == "agent"


def test_the_new_type_is_found_only_where_the_package_is_installed(installed, tmp_path):
    assert TYPE_NAME not in member_type_names()  # this process's registry is untouched
    found = python("""
        from cogym_lab.members import member_type, member_type_names
        packer = member_type("packer")
        print("packer" in member_type_names(), packer.kind, packer.uses_lm,
              type(packer).__module__, packer.build.__module__)
    """, installed, tmp_path)
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == ["True", "agent", "False", "cogym_lab.core.member",
                                    "cogym_packer"]


def test_the_command_line_runs_a_team_with_the_new_type(installed, team_file, tmp_path):
    out = tmp_path / "out"
    script = Path(sys.executable).with_name("cogym-lab")
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "cogym_lab"]
    done = subprocess.run(
        [*command, "run", "--task", "todo", "--team", str(team_file), "--out", str(out),
         "--quiet"],
        check=False, capture_output=True, text=True, timeout=180, cwd=tmp_path,
        env=with_package(installed))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "ended: finished" in done.stdout, done.stdout
    (directory,) = [path.parent for path in out.glob("*/session.json")]
    assert_the_packer_played(directory)


def test_the_batch_runner_runs_a_team_with_the_new_type(installed, team_file, tmp_path):
    out = tmp_path / "batch"
    done = python(f"""
        import json
        import cogym_lab.eval
        summary = cogym_lab.eval.run("todo", {str(team_file)!r}, "0", out={str(out)!r},
                                     progress=False)
        print(json.dumps([[s.instance, s.status, s.end_reason, s.delivered, s.directory,
                           s.error] for s in summary.sessions]))
    """, installed, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ((instance, status, reason, delivered, directory, error),) = json.loads(
        done.stdout.strip().splitlines()[-1])
    assert (instance, status, reason, delivered, error) == (0, "finished", "finished", True,
                                                             None)
    assert_the_packer_played(out / directory)


@pytest.fixture
def kernel(installed, tmp_path) -> Iterator[Any]:
    """A real IPython kernel, with no Jupyter server around it, that can import the package."""
    with StandaloneKernel(tmp_path, with_package(installed)) as running:
        running.run("%load_ext cogym_lab")
        yield running


def test_cogym_in_a_kernel_runs_a_team_with_the_new_type(kernel, team_file, tmp_path):
    started = kernel.run(f"%cogym new todo --team {team_file} --watch")
    assert "started in this kernel" in started.stdout, started.stdout + started.stderr
    assert "none (watching)" in started.stdout
    result = kernel.value("await cogym_session.wait(120)", timeout=180)
    assert result["end_reason"] == "finished" and result["delivered"], result
    directory = Path(kernel.value("str(cogym_session.results_dir)"))
    assert directory.parent == tmp_path / "cogym-results"
    assert_the_packer_played(directory)
