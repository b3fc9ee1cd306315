"""The kernel that runs agent cells cannot find the data directory from other processes, nor read
the answer key: a session process started with ``COGYM_DATA`` in its environment and the data
folder on its command line (as ``cogym-lab run --data-dir`` would be) runs a tabular cell that reads
every ``/proc/*/environ`` and ``/proc/*/cmdline`` it can, opens the answer key by its real path,
and searches every file it can reach near it for the gold hypothesis. Confined, it finds nothing;
the same cell in an unconfined kernel (the control) finds all of it, so the search is real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cogym_lab.kernels.confine import confinement_available
from tests.support.paths import REPO_ROOT

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(300)]

#: The curious cell. NEEDLES (base64, so the cell's own text, kept in the kernel's history
#: file, holds none of them) are the data folder's path and a piece of the gold hypothesis.
PROBE = r'''
import base64, json, os, tempfile
data, gold, key = (base64.b64decode(n).decode() for n in NEEDLES)
found = {"proc": [], "files": [], "pids": []}
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    found["pids"].append(int(pid))
    for name in ("environ", "cmdline"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as handle:
                text = handle.read().decode("utf-8", "replace")
        except OSError:
            continue
        if data in text or "COGYM_DATA" in text:
            found["proc"].append(f"{pid}/{name}")
try:
    with open(key, encoding="utf-8") as handle:
        found["key"] = gold in handle.read()
except OSError as error:
    found["key"] = type(error).__name__
cwd = os.getcwd()
for top in {cwd, os.path.dirname(cwd), os.path.expanduser("~"), tempfile.gettempdir(),
            os.path.dirname(key)}:
    for folder, _, files in os.walk(top):
        for name in files:
            path = os.path.join(folder, name)
            try:
                if os.path.getsize(path) < 50_000_000:
                    with open(path, "rb") as handle:
                        if gold.encode() in handle.read():
                            found["files"].append(path)
            except OSError:
                pass
found["data_listing"] = sorted(os.listdir(data)) if os.path.isdir(data) else None
print(json.dumps(found))
'''

#: The session process: a tabular env, its cell run through the coordinator as an agent's.
SESSION = r'''
import asyncio, base64, json, sys
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import TeamMember
from cogym_lab.envs.tabular_analysis import TabularAnalysisEnv
import cogym_lab.kernels.executor as executor

data, probe, confine = sys.argv[2], sys.argv[3], sys.argv[4] == "confined"
if not confine:  # the control: a kernel as it was started before confinement
    executor.confinement_available = lambda: False

async def main():
    env = TabularAnalysisEnv(instance=0)
    team = [TeamMember(role="agent"), TeamMember(role="user", kind="user")]
    coordinator = Coordinator(env, team, session_id="confined")
    coordinator.start(0.0)
    key = f"{data}/tabular_analysis/discoverybench/real/test/answer_key_real.csv"
    needles = [base64.b64encode(t.encode()).decode()
               for t in (data, env.task.gold_hypothesis[:40], key)]
    code = f"NEEDLES = {needles!r}\n{probe}"
    try:
        started = coordinator.handle("agent", {"name": "EXECUTE_JUPYTER_CELL",
                                               "args": {"code": code}}, 1.0)
        (role, deferred), = started.deferred
        coordinator.apply_follow_up(role, await deferred.work(), 2.0)
        cell = coordinator.env.view("agent")["notebook"].content["cells"][-1]
        text = "".join(output.get("text") or "" for output in cell["outputs"])
        print("RESULT " + json.dumps({"status": cell["status"], "text": text,
                                      "confined": env.executor.confined}))
    finally:
        await env.aclose()

asyncio.run(main())
'''


def _probe(datasets_dir: Path, confined: bool) -> dict:
    """Run the probe from a session process whose environment and command line name the data."""
    path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    environment = {**os.environ, "COGYM_DATA": str(datasets_dir), "PYTHONPATH": path}
    done = subprocess.run(
        [sys.executable, "-c", SESSION, f"--data-dir={datasets_dir}", str(datasets_dir), PROBE,
         "confined" if confined else "plain"],
        env=environment, capture_output=True, text=True, timeout=240, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    result = json.loads(lines[-1].removeprefix("RESULT "))
    assert result["status"] == "ok", result
    assert result["confined"] is confined
    return json.loads(result["text"])


def test_this_machine_can_confine_kernels():
    """The suite runs where kernels can be confined; elsewhere the tests below would prove
    nothing, so this says so plainly rather than skipping."""
    assert confinement_available(), "Linux user namespaces are needed to confine kernels"


def test_a_confined_cell_finds_no_data_directory_and_no_answer_key(datasets_dir):
    found = _probe(datasets_dir, confined=True)
    assert found["pids"] == [1]  # itself, process 1 of its own namespace: no other process
    assert found["proc"] == []
    assert found["key"] == "FileNotFoundError"
    assert found["data_listing"] == []  # the data folder is there, and empty
    assert found["files"] == []


def test_the_same_cell_unconfined_finds_them_all(datasets_dir):
    """The control: the probe is real. An unconfined kernel (its own environment cleaned all
    the same) reads the data folder from its parent's environment and command line, and the
    answer key by that path."""
    found = _probe(datasets_dir, confined=False)
    assert len(found["pids"]) > 1 and found["proc"]
    assert found["key"] is True
    assert "tabular_analysis" in found["data_listing"]
    assert any(path.endswith("answer_key_real.csv") for path in found["files"])
