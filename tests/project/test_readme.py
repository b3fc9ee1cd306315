"""The README's Python examples run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support.paths import REPO_ROOT

README = REPO_ROOT / "README.md"


def test_readme_python_examples_run(tmp_path, monkeypatch, use_shared_data):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    monkeypatch.chdir(tmp_path)
    ran = []
    for block in blocks:
        namespace: dict = {}
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102 - our own docs
        ran.append(namespace)
    env_example, session_example, travel_example = ran
    assert env_example["result"].info == {"action": 'WRITE(text="hello")'}
    assert env_example["env"].outcome() == ["hello"]
    assert travel_example["env"].view("agent")["search"].content["rows"][0][
        "Flight Number"] == "F3846241"
    assert travel_example["grade"].performance == 0  # nothing written yet
    assert session_example["result"].delivered
    assert session_example["session"].results_dir.exists()
    replayed = session_example["replayed"]
    assert len(replayed.events) == session_example["result"].events
    assert replayed.final_state_checked and replayed.state_at(3)["seq"] == 3
    assert session_example["outcomes"][-1] == replayed.final_state["outcome"]


def test_readme_opens_with_the_two_commands():
    lines = README.read_text().splitlines()
    commands = lines[lines.index("```bash") + 1: lines.index("```bash") + 3]
    assert commands[0].startswith("bash scripts/lab.sh")
    assert commands[1].startswith("bash scripts/test.sh")
    lab = (README.parent / "scripts" / "lab.sh").read_text()
    assert "pip install" in lab and "jupyter\" lab examples/" in lab
    ci = (README.parent / ".ci" / "run").read_text()
    assert "exec bash scripts/test.sh" in ci


def run_sample() -> list[str]:
    """The README's sample output of ``cogym-lab run``."""
    text = README.read_text()
    section = text.split("## What `cogym-lab run` shows", 1)[1]
    block = re.search(r"```\w*\n(.*?)```", section, re.DOTALL)
    assert block is not None, "the section has no sample"
    return block.group(1).splitlines()


#: The kinds of line the command prints; an event line is its number, two spaces, a sentence.
LINE_KINDS = [("event", re.compile(r"^\s{0,3}\d+  \S(?!.*  → )")),
              ("event", re.compile(r"^ \.\.\.$")),  # the sample leaves some events out
              ("session end", re.compile(r"^Session \S+ ended: \w+ after \d+ events in [\d.]+s "
                                         r"\(protocol \w+\)$")),
              ("delivered", re.compile(r"^Delivered: (True|False)   Outcome: .+$")),
              ("scores", re.compile(r"^Scores: (\w+=\d+\.\d\d(, )?)+$")),
              ("results", re.compile(r"^Results: results/\S+$")),
              ("blank", re.compile(r"^$"))]


def shape(lines: list[str]) -> list[str]:
    """Each line's kind (the ``Key:`` of a header line), a run of events counted once."""
    kinds: list[str] = []
    for line in lines:
        kind = next((name for name, pattern in LINE_KINDS if pattern.match(line)), None)
        if kind is None:
            header = re.match(r"^(Task|Team): \S", line)
            kind = header.group(1) if header else f"unknown: {line!r}"
        if not (kind == "event" and kinds and kinds[-1] == "event"):
            kinds.append(kind)
    return kinds


def test_the_run_sample_has_the_shape_of_what_the_command_prints(tmp_path):
    """The sample once showed an older transcript (actions as written, who was told)."""
    completed = subprocess.run(
        [sys.executable, "-m", "cogym_lab", "run", "--idle-seconds", "2"], cwd=tmp_path,
        check=False, capture_output=True, text=True, timeout=60,
        env={**os.environ, "COLUMNS": "400", "NO_COLOR": "1"},
    )
    assert completed.returncode == 0, completed.stderr
    printed, sample = completed.stdout.splitlines(), run_sample()
    assert shape(sample) == shape(printed) == [
        "Task", "Team", "event", "blank", "session end", "delivered", "scores", "results"]
    scores = [re.findall(r"(\w+)=", lines[-2]) for lines in (sample, printed)]
    assert scores[0] == scores[1]
    assert sample[0] == printed[0] and sample[1] == printed[1]  # the task and the team
    shown, seen = ([line for line in lines if re.match(r"^\s*\d+  ", line)]
                   for lines in (sample, printed))
    assert shown[0] == seen[0] and shown[-1] == seen[-1]  # the session started, and ended
