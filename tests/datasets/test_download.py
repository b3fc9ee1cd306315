"""Downloads against a loopback file server that cuts connections, ignores ``Range`` and sends
damaged bytes: an interrupted file continues where it stopped, a checksum mismatch is reported
for that file and its part removed, and a failure is one plain line a file."""

from __future__ import annotations

import hashlib
import io
import random
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cogym_lab import datasets
from cogym_lab.datasets import DataItem, DownloadError
from cogym_lab.datasets.checksums import folder_sha256
from cogym_lab.envs.tabular_analysis.data_files import DATA_FILES as TABULAR_FILES
from cogym_lab.envs.travel_planning.data_files import DATA_FILES as TRAVEL_FILES
from tests.support.file_server import FileServer, file_server

TASK = "download_fixture"
#: A name a shell, a URL and a file system each treat specially: spaces, '#', '%', quotes, and
#: characters beyond ASCII.
ODD_NAME = "odd name #1 – 'ü' 100%.csv"


def _body(size: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(size)


def _item(path: str, url: str, body: bytes | None = None, **extra: Any) -> DataItem:
    checksum = hashlib.sha256(body).hexdigest() if body is not None else None
    return DataItem(TASK, f"{TASK}/{path}", "a test file", "a test source",
                    "https://example.org/", "MIT", url, sha256=checksum, **extra)


@pytest.fixture
def server() -> Iterator[FileServer]:
    with file_server() as running:
        yield running


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A data directory whose path has a space and a quote in it."""
    return tmp_path / "data dir 'x'"


def test_an_interrupted_download_continues_where_it_stopped(
        server: FileServer, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = _body(300_000)
    item = _item(f"sub/{ODD_NAME}", server.serve(ODD_NAME, body, cut_after=100_000), body)
    part = datasets.part_file(item, root)
    destination = root / TASK / "sub" / ODD_NAME

    with pytest.raises(DownloadError) as caught:
        datasets.download([item], root, progress=True)
    lines = str(caught.value).splitlines()
    assert lines[0] == f"Downloading the {TASK} data into {root} failed for 1 of 1 file(s):"
    assert lines[1] == (f"  - {item.path} from {item.url}: the connection was cut (stopped at "
                        "97.7 KB of 293.0 KB); 97.7 KB kept, the next run continues from "
                        "there")
    assert lines[-1].startswith("Place those files there by hand, or retry (it continues the "
                                f"partial files): `cogym-lab data download {TASK} --data-dir ")
    assert part.name == ODD_NAME + ".part" and part.stat().st_size == 100_000
    assert not destination.exists()

    assert datasets.download([item], root, progress=True) == [destination]
    assert server.ranges(ODD_NAME) == [None, "bytes=100000-"]
    assert destination.read_bytes() == body
    assert not part.exists()
    progress = capsys.readouterr().err
    assert f"{item.name} (resuming)" in progress and "100%" in progress
    assert "293k/293k" in progress  # bytes done of the total, in KiB


def test_a_silent_server_times_out_and_the_next_run_continues(server: FileServer,
                                                               root: Path) -> None:
    body = _body(100_000, seed=9)
    item = _item("slow.bin", server.serve("slow.bin", body, stall_after=30_000), body)
    with pytest.raises(DownloadError) as caught:
        datasets.download([item], root, progress=False, timeout=1)
    assert caught.value.args[0].splitlines()[1] == (
        f"  - {item.path} from {item.url}: the server did not answer in 1 s (stopped at 29.3 KB "
        "of 97.7 KB); 29.3 KB kept, the next run continues from there")
    assert datasets.download([item], root, progress=False, timeout=1) == [root / item.path]
    assert server.ranges("slow.bin") == [None, "bytes=30000-"]
    assert (root / item.path).read_bytes() == body


def test_the_retry_command_is_quoted_for_a_shell(server: FileServer, root: Path) -> None:
    item = _item("a.csv", server.url("missing.csv"))
    with pytest.raises(DownloadError) as caught:
        datasets.download([item], root, progress=False)
    message = str(caught.value)
    assert message.splitlines()[1] == f"  - {item.path} from {item.url}: HTTP 404 Not Found"
    quoted = "'" + str(root).replace("'", "'\"'\"'") + "'"
    assert message.endswith(f": `cogym-lab data download {TASK} --data-dir {quoted}`")
    with pytest.raises(DownloadError) as caught:
        datasets.download([item], root, progress=False, where="notebook")
    assert str(caught.value).endswith(f": `%cogym data download {TASK} --data-dir {quoted}`")


def test_a_server_that_ignores_range_starts_the_file_over(server: FileServer,
                                                          root: Path) -> None:
    body = _body(50_000, seed=1)
    item = _item("whole.bin", server.serve("whole.bin", body, ignore_range=True), body)
    part = datasets.part_file(item, root)
    part.parent.mkdir(parents=True)
    part.write_bytes(b"stale bytes of an older try")
    assert datasets.download([item], root, progress=False) == [root / TASK / "whole.bin"]
    assert server.ranges("whole.bin") == [f"bytes={len(b'stale bytes of an older try')}-"]
    assert (root / TASK / "whole.bin").read_bytes() == body  # not appended to the stale bytes


def test_a_whole_part_file_is_finished_on_416(server: FileServer, root: Path) -> None:
    body = _body(20_000, seed=2)
    item = _item("done.bin", server.serve("done.bin", body), body)
    part = datasets.part_file(item, root)
    part.parent.mkdir(parents=True)
    part.write_bytes(body)  # the last run stopped after the last byte, before the move
    assert datasets.download([item], root, progress=False) == [root / TASK / "done.bin"]
    assert server.ranges("done.bin") == ["bytes=20000-"]
    assert (root / TASK / "done.bin").read_bytes() == body

    # A part longer than the file (the file changed): 416, then the whole file afresh.
    longer = _item("longer.bin", server.serve("longer.bin", body), body)
    datasets.part_file(longer, root).write_bytes(body + b"extra")
    assert datasets.download([longer], root, progress=False) == [root / TASK / "longer.bin"]
    assert server.ranges("longer.bin") == ["bytes=20005-", None]
    assert (root / TASK / "longer.bin").read_bytes() == body


def test_a_checksum_mismatch_is_reported_for_that_file_and_its_part_removed(
        server: FileServer, root: Path) -> None:
    good, bad = _body(10_000, seed=3), _body(10_000, seed=4)
    items = [_item("bad.bin", server.serve("bad.bin", bad, corrupt=True), bad),
             _item("good.bin", server.serve("good.bin", good), good)]
    with pytest.raises(DownloadError) as caught:
        datasets.download(items, root, progress=False)
    message = str(caught.value)
    assert "failed for 1 of 2 file(s)" in message
    damaged = hashlib.sha256(bytes([bad[0] ^ 0xFF]) + bad[1:]).hexdigest()
    assert f"  - {TASK}/bad.bin from {items[0].url}: its SHA-256 is {damaged[:12]}..., not the " \
           f"expected {items[0].sha256[:12]}... (the source changed or the download was " \
           "damaged); the partial file was removed" in message.splitlines()
    assert "good.bin" not in message
    assert (root / TASK / "good.bin").read_bytes() == good
    assert not (root / TASK / "bad.bin").exists()
    assert not datasets.part_file(items[0], root).exists()

    # A resumed file is checked whole: bytes kept from a damaged try are caught too.
    server.files["bad.bin"].corrupt = False
    datasets.part_file(items[0], root).write_bytes(b"\0" * 4000)
    with pytest.raises(DownloadError, match="its SHA-256 is"):
        datasets.download(items, root, progress=False)
    assert server.ranges("bad.bin")[-1] == "bytes=4000-"
    assert not datasets.part_file(items[0], root).exists()
    assert datasets.download(items, root, progress=False) == [root / TASK / "bad.bin"]
    assert (root / TASK / "bad.bin").read_bytes() == bad


def _zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(f"repo-0123/{name}", text)
    return buffer.getvalue()


def test_an_unpacked_folder_is_checked_against_its_manifest(server: FileServer, root: Path,
                                                           tmp_path: Path) -> None:
    inside = {"data/test/one/table.csv": "a\n1\n", f"data/test/{ODD_NAME}": "x\n"}
    expected_folder = tmp_path / "expected"
    for name, text in inside.items():
        (expected_folder / name).parent.mkdir(parents=True, exist_ok=True)
        (expected_folder / name).write_text(text)
    digest = folder_sha256(expected_folder / "data" / "test")
    archive = _zip({**inside, "data/train/skip.csv": "no", "README.md": "top"})
    url = server.serve("repo.zip", archive)

    wrong = DataItem(TASK, f"{TASK}/test/", "a folder", "a source", "https://example.org/", "MIT",
                     url, archive_member="data/test/", sha256="0" * 64)
    with pytest.raises(DownloadError, match="the unpacked folder's SHA-256 is"):
        datasets.download([wrong], root, progress=False)
    assert not (root / TASK / "test").exists()
    assert not datasets.part_file(wrong, root).exists()
    assert [p.name for p in (root / TASK).iterdir()] == []  # no unpacking folder left

    right = DataItem(TASK, f"{TASK}/test/", "a folder", "a source", "https://example.org/",
                     "MIT", url, archive_member="data/test/", sha256=digest)
    assert datasets.download([right], root, progress=False) == [root / TASK / "test"]
    assert (root / TASK / "test" / ODD_NAME).read_text() == "x\n"
    assert not (root / TASK / "test" / "skip.csv").exists()
    assert [p.name for p in (root / TASK).iterdir()] == ["test"]

    not_a_zip = DataItem(TASK, f"{TASK}/other/", "a folder", "a source",
                         "https://example.org/", "MIT",
                         server.serve("fake.zip", b"<html>a login page</html>"),
                         archive_member="data/test/")
    with pytest.raises(DownloadError, match="not the expected zip archive"):
        datasets.download([not_a_zip], root, progress=False)
    assert not datasets.part_file(not_a_zip, root).exists()


def test_present_files_are_checked_against_their_checksum(server: FileServer,
                                                          root: Path) -> None:
    body = _body(1000, seed=5)
    item = _item("kept.bin", server.serve("kept.bin", body), body)
    datasets.download([item], root, progress=False)
    assert datasets.verify_present([item], root) == []
    assert datasets.download([item], root, progress=False) == []  # present: not fetched again
    assert server.ranges("kept.bin") == [None]
    (root / TASK / "kept.bin").write_bytes(b"edited")
    assert datasets.verify_present([item], root) == [
        (item, hashlib.sha256(b"edited").hexdigest())]


def test_the_tasks_pin_their_sources_and_checksums() -> None:
    for item in (*TRAVEL_FILES, *TABULAR_FILES):
        assert item.url is not None and "/main/" not in item.url, item.url
        assert item.sha256 is not None and len(item.sha256) == 64, item.path
        int(item.sha256, 16)


def test_the_shared_travel_files_match_their_checksums(datasets_dir: Path) -> None:
    """The shared copy of the Travel Planning files is the pinned sources' (checked against
    their git blobs when the checksums were taken); the DiscoveryBench copy is not: its
    metadata files differ from the pinned commit's."""
    assert datasets.verify_present(TRAVEL_FILES, datasets_dir) == []
    assert all(s.present for s in datasets.status(TRAVEL_FILES, datasets_dir))
