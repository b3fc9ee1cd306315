"""The README's Python examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"


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
