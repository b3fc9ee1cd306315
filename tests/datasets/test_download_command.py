"""``cogym-lab data download TASK`` as a person runs it: a real process, with a task installed
the way a plugin task is (a package's ``cogym_lab.envs`` entry point) whose files a loopback
server serves, or that nothing serves (a port nobody listens on, a host name that does not
resolve). And ``%cogym data download TASK`` in a real kernel, whose cell shows the progress
bar and names the notebook's retry command."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.file_server import FileServer, file_server, install_task
from tests.support.jupyter_process import StandaloneKernel

pytestmark = pytest.mark.timeout(300)

TASK = "download_fixture"
ODD_NAME = "odd name #1 – 'ü' 100%.csv"


def _unused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _item(name: str, url: str, body: bytes | None = None) -> dict[str, object]:
    return {"path": f"{TASK}/{name}", "description": "a test file", "source": "a test source",
            "homepage": "https://example.org/", "license": "MIT", "url": url,
            "sha256": hashlib.sha256(body).hexdigest() if body is not None else None}


def _run(environment: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cogym_lab", "data", *args],
                          check=False, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **environment})


@pytest.fixture
def server() -> Iterator[FileServer]:
    with file_server() as running:
        yield running


def test_offline_each_file_gets_one_line_and_the_retry_command(tmp_path: Path) -> None:
    refused = f"http://127.0.0.1:{_unused_port()}"
    nowhere = "http://cogym-lab-download-test.invalid"  # .invalid never resolves (RFC 6761)
    environment = install_task(tmp_path / "site", TASK, [
        _item(ODD_NAME, f"{refused}/a.csv"), _item("b.csv", f"{nowhere}/b.csv")])
    folder = tmp_path / "data dir"
    result = _run(environment, "download", TASK, "--data-dir", str(folder))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[-4:] == [
        f"Downloading the {TASK} data into {folder} failed for 2 of 2 file(s):",
        f"  - {TASK}/{ODD_NAME} from {refused}/a.csv: the connection to "
        f"{refused.removeprefix('http://')} was refused (no network, or the server is down)",
        f"  - {TASK}/b.csv from {nowhere}/b.csv: no network connection (the name "
        "cogym-lab-download-test.invalid could not be looked up)",
        f"Place those files there by hand, or retry: `cogym-lab data download {TASK} "
        f"--data-dir '{folder}'`"]
    assert "2 of 2 item(s) missing." in result.stdout
    assert not list(folder.rglob("*.part"))  # nothing arrived, so nothing is kept


def test_a_download_cut_midway_continues_on_the_next_run(tmp_path: Path,
                                                         server: FileServer) -> None:
    body = random.Random(7).randbytes(400_000)
    small = b"city,state\n"
    environment = install_task(tmp_path / "site", TASK, [
        _item(f"db/{ODD_NAME}", server.serve(ODD_NAME, body, cut_after=150_000), body),
        _item("small.txt", server.serve("small.txt", small), small)])
    folder = tmp_path / "data"
    first = _run(environment, "download", TASK, "--data-dir", str(folder))
    assert first.returncode == 1 and "Traceback" not in first.stderr
    failure = [line for line in first.stderr.splitlines() if line.startswith("  - ")]
    assert failure == [f"  - {TASK}/db/{ODD_NAME} from {server.url(ODD_NAME)}: the connection "
                       "was cut (stopped at 146.5 KB of 390.6 KB); 146.5 KB kept, the next run "
                       "continues from there"]
    assert first.stderr.rstrip().endswith(
        f"or retry (it continues the partial files): `cogym-lab data download {TASK} "
        f"--data-dir {folder}`")
    assert (folder / TASK / "small.txt").read_bytes() == small  # the other file arrived
    assert (folder / TASK / "db" / f"{ODD_NAME}.part").stat().st_size == 150_000

    second = _run(environment, "download", TASK, "--data-dir", str(folder))
    assert second.returncode == 0, second.stdout + second.stderr
    assert server.ranges(ODD_NAME) == [None, "bytes=150000-"]
    assert server.ranges("small.txt") == [None]  # present and whole: not fetched again
    assert (folder / TASK / "db" / ODD_NAME).read_bytes() == body
    assert not list(folder.rglob("*.part"))
    assert f"{TASK}/db/{ODD_NAME} (resuming)" in second.stderr  # the progress bar
    assert "100%" in second.stderr and "391k/391k" in second.stderr
    assert f"{TASK}: downloaded 1 item(s)." in second.stdout
    assert "All 2 item(s) present." in second.stdout

    # The report notes a present file that is not the pinned one.
    edited = b"edited\n"
    (folder / TASK / "small.txt").write_bytes(edited)
    report = _run(environment, TASK, "--data-dir", str(folder))
    assert report.returncode == 0
    assert (f"Note: {TASK}/small.txt is not the file its source pins (SHA-256 "
            f"{hashlib.sha256(edited).hexdigest()[:12]}..., expected "
            f"{hashlib.sha256(small).hexdigest()[:12]}...). To replace it, delete it and run "
            f"`cogym-lab data download {TASK} --data-dir {folder}`.") in report.stdout


def test_ctrl_c_keeps_what_arrived_for_the_next_run(tmp_path: Path, server: FileServer) -> None:
    body = random.Random(9).randbytes(200_000)
    environment = install_task(tmp_path / "site", TASK, [
        _item("big.bin", server.serve("big.bin", body, stall_after=64_000), body)])
    folder = tmp_path / "data"
    part = folder / TASK / "big.bin.part"
    with subprocess.Popen([sys.executable, "-m", "cogym_lab", "data", "download", TASK,
                           "--data-dir", str(folder)], env={**os.environ, **environment},
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
        deadline = time.monotonic() + 60
        while not (part.is_file() and part.stat().st_size == 64_000):
            assert time.monotonic() < deadline and child.poll() is None, "no bytes arrived"
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)  # what Ctrl-C sends
        _out, err = child.communicate(timeout=60)
    assert child.returncode != 0
    assert "Traceback" not in err and "Aborted!" in err
    assert part.stat().st_size == 64_000  # kept

    again = _run(environment, "download", TASK, "--data-dir", str(folder))
    assert again.returncode == 0, again.stdout + again.stderr
    assert server.ranges("big.bin") == [None, "bytes=64000-"]
    assert (folder / TASK / "big.bin").read_bytes() == body


def test_the_magic_shows_the_progress_bar_and_the_notebook_retry_command(
        tmp_path: Path, server: FileServer) -> None:
    body = random.Random(8).randbytes(200_000)
    environment = install_task(tmp_path / "site", TASK, [
        _item("table.csv", server.serve("table.csv", body), body),
        _item("gone.csv", server.url("gone.csv"))])
    folder = tmp_path / "data"
    with StandaloneKernel(tmp_path, environment) as kernel:
        kernel.run("%load_ext cogym_lab")
        cell = kernel.run(f"%cogym data download {TASK} --data-dir '{folder}' --no-coverage")
    output = cell.stdout  # the command's stderr is merged into the cell's output
    assert f"\r{TASK}/table.csv: 100%" in output and "195k/195k" in output
    assert f"  - {TASK}/gone.csv from {server.url('gone.csv')}: HTTP 404 Not Found" in output
    assert output.rstrip().endswith(
        f"Place those files there by hand, or retry: `%cogym data download {TASK} "
        f"--data-dir {folder}`")
    assert "Traceback" not in output
    assert (folder / TASK / "table.csv").read_bytes() == body
