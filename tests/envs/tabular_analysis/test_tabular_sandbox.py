"""No hidden information within the tabular agent's reach: a cell, run through the env in a real
kernel, walks every folder the kernel is told about (its working folder and that folder's
parent, its home, its temp folder, every folder an environment variable names) and finds neither
the answer key nor a metadata file, and no variable names the data directory. The data lives in
the folder ``COGYM_DATA`` names, or in the user cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import TeamMember
from cogym_lab.datasets import DATA_ENV_VAR
from cogym_lab.envs.tabular_analysis import TabularAnalysisEnv
from cogym_lab.kernels.sandbox import KernelSandbox, kernel_environment
from tests.support.notified import notified

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(180)]
TEAM = [TeamMember(role="agent"), TeamMember(role="user", kind="user")]
HIDDEN_NAMES = ("answer_key_real.csv", "metadata_*.json")

#: What a curious cell would try: walk (os.walk and glob) every folder the kernel knows of.
PROBE = r'''
import fnmatch, glob, json, os, tempfile

def hidden_files(top, names):
    found = set()
    for folder, _, files in os.walk(top):
        found.update(os.path.join(folder, f) for f in files
                     if any(fnmatch.fnmatch(f, name) for name in names))
    for name in names:
        found.update(glob.glob(os.path.join(glob.escape(top), "**", name), recursive=True))
    return sorted(found)

cwd = os.getcwd()
places = {"cwd": cwd, "parent of cwd": os.path.dirname(cwd),
          "home": os.path.expanduser("~"), "temp": tempfile.gettempdir()}
for variable, value in os.environ.items():
    for n, entry in enumerate(value.split(os.pathsep)):
        if os.path.isabs(entry) and os.path.isdir(entry):
            places[f"${variable}[{n}]"] = entry
print(json.dumps({"places": places,
                  "found": {k: hidden_files(v, NAMES) for k, v in places.items()},
                  "environ": dict(os.environ), "cwd_files": sorted(os.listdir(cwd)),
                  "parent_files": sorted(os.listdir(os.path.dirname(cwd)))}))
'''


async def run_cell(coordinator: Coordinator, code: str, at: float) -> str:
    """Run ``code`` as the agent's cell; the text of its outputs, as the agent sees them."""
    started = coordinator.handle("agent", {"name": "EXECUTE_JUPYTER_CELL",
                                           "args": {"code": code}}, at)
    (role, deferred), = started.deferred
    landed = coordinator.apply_follow_up(role, await deferred.work(), at + 0.5)
    notification = next(n for n in notified(coordinator, landed) if n.recipient == "agent")
    cell = notification.view["notebook"].content["cells"][-1]
    assert cell["status"] == "ok", cell
    return "".join(output["text"] for output in cell["outputs"])


def data_in_the_cache(datasets_dir: Path, tmp_path: Path,
                      monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Serve the data from the user cache, ``$XDG_CACHE_HOME/cogym_lab/datasets``, with no
    ``COGYM_DATA``; the cache folders, which the kernel must not be told either."""
    cache = tmp_path / "cache"
    (cache / "cogym_lab").mkdir(parents=True)
    (cache / "cogym_lab" / "datasets").symlink_to(datasets_dir, target_is_directory=True)
    monkeypatch.delenv(DATA_ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return [cache, cache / "cogym_lab" / "datasets"]


@pytest.mark.parametrize("where", ["COGYM_DATA", "cache"])
async def test_a_cell_finds_no_answer_key_and_no_metadata(where, datasets_dir, tmp_path,
                                                          monkeypatch):
    monkeypatch.setenv(DATA_ENV_VAR, str(datasets_dir))
    secret_places = [datasets_dir, datasets_dir.resolve()]
    if where == "cache":
        secret_places += data_in_the_cache(datasets_dir, tmp_path, monkeypatch)
    tabular = datasets_dir / "tabular_analysis"
    # Variables that point at the data in other ways must not reach the kernel either.
    monkeypatch.setenv("PATH", os.pathsep.join([str(tabular), os.environ["PATH"]]))
    monkeypatch.setenv("PYTHONPATH", str(datasets_dir))
    monkeypatch.setenv("LC_NOTES", f"see {tabular}")
    monkeypatch.setenv("MY_PROJECT_DATA", str(tabular))

    env = TabularAnalysisEnv(instance=0)
    coordinator = Coordinator(env, TEAM, session_id="sandbox")
    coordinator.start(0.0)
    scratch = Path(env.workdir).parent
    try:
        report = json.loads(await run_cell(
            coordinator, f"NAMES = {HIDDEN_NAMES!r}\n{PROBE}", 1.0))
        # The walks are real (they find the instance's files in the working folder), and a
        # path to the data, known all the same, leads to an empty folder: the confined kernel
        # has the data folders covered (tests/kernels/test_kernel_confinement.py).
        control = await run_cell(
            coordinator, f"NAMES = {HIDDEN_NAMES!r}\n{PROBE.split('cwd = ', 1)[0]}\n"
                         f"print(len(hidden_files({str(tabular)!r}, NAMES)), "
                         "len(hidden_files(os.getcwd(), ['*'])))", 2.0)
    finally:
        await env.aclose()

    assert control.split() == ["0", str(len(env.task.file_names))]
    assert {"cwd", "parent of cwd", "home", "temp"} <= report["places"].keys()
    assert any(key.startswith("$PATH") for key in report["places"])  # PATH's folders walked
    assert report["found"] == {place: [] for place in report["places"]}
    # The working folder holds the instance's data files alone; its parent, the kernel's home
    # and temp folders beside it.
    assert report["cwd_files"] == sorted(env.task.file_names)
    assert report["parent_files"] == ["home", "tmp", "work"]
    assert Path(report["places"]["home"]).parent == Path(report["places"]["temp"]).parent \
        == scratch.resolve()
    environ = report["environ"]
    assert DATA_ENV_VAR not in environ and "XDG_CACHE_HOME" not in environ
    assert "MY_PROJECT_DATA" not in environ and "LC_NOTES" not in environ
    assert "PYTHONPATH" not in environ  # its one entry was the data directory
    for name, value in environ.items():
        for place in secret_places:
            assert str(place) not in value, (name, value)
    # PATH loses the entry into the data, nothing else
    assert environ["PATH"].split(os.pathsep) == os.environ["PATH"].split(os.pathsep)[1:]
    assert not scratch.exists()  # the data copy, the home and the temp folder are gone


def test_the_kernel_environment_keeps_only_what_names_no_hidden_folder(tmp_path):
    data = tmp_path / "shared" / "datasets"
    data.mkdir(parents=True)
    base = {"PATH": os.pathsep.join(["/usr/bin", str(data / "bin"), str(tmp_path / "shared"),
                                     "/bin"]),
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": f"{data}/zone",
            "COGYM_DATA": str(data), "OPENAI_API_KEY": "sk-secret", "HOME": "/home/someone",
            "XDG_CACHE_HOME": "/home/someone/.cache", "VIRTUAL_ENV": "/opt/venv"}
    env = kernel_environment(base, [data])
    # a folder inside the data, and one holding it, are dropped from PATH; the rest stays
    assert env == {"PATH": os.pathsep.join(["/usr/bin", "/bin"]), "LANG": "C.UTF-8",
                   "LC_ALL": "C.UTF-8", "VIRTUAL_ENV": "/opt/venv"}


def test_a_sandbox_in_a_given_folder_removes_only_what_it_made(tmp_path):
    (tmp_path / "work").mkdir()
    sandbox = KernelSandbox.create(tmp_path)
    assert (sandbox.home, sandbox.tmp) == (tmp_path / "home", tmp_path / "tmp")
    assert oct(sandbox.home.stat().st_mode & 0o777) == "0o700"
    env = sandbox.environment({"PATH": "/usr/bin", "COGYM_DATA": "/somewhere"})
    assert env["HOME"] == str(sandbox.home) and env["TMPDIR"] == str(sandbox.tmp)
    assert "COGYM_DATA" not in env
    sandbox.remove()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]
    own = KernelSandbox.create()
    own.remove()
    assert not own.root.exists()
