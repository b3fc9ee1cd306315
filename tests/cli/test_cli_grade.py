"""``cogym-lab grade``, run as a real process on a file of good and hostile lines: one output
line per input line, in order; error lines for what cannot be graded; never a crash."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cogym_lab.envs.travel_planning.plan import parse_plan
from cogym_lab.envs.travel_planning.submission import to_submission
from tests.envs.travel_planning.test_travel_grader import BURBANK, PHOENIX
from tests.support.data import datasets_dir  # noqa: F401 (fixture)

PHOENIX_QUERY = (  # instance 61
    "Could you assist in formulating a 3-day trip for two individuals, initiating from El Paso "
    "and concluding in Phoenix? The travel dates we're considering are March 4th to March 6th, "
    "2022. We have a budget of $1,900. For accommodations, we have one constraint: the "
    "establishments must allow visitors. As far as meals go, we have a diverse taste palette, "
    "encompassing American, French, Mexican, and Indian cuisines. And to clarify, we are "
    "willing to travel, but not via flight.")


def _command() -> list[str]:
    """``cogym-lab grade``, as a person runs it."""
    return [str(Path(sys.executable).parent / "cogym-lab"), "grade"]


def _run(*args: str, data: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120"}
    env.pop("COGYM_DATA", None)
    if data is not None:
        env["COGYM_DATA"] = str(data)
    return subprocess.run([*_command(), *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


def _plan(text: str) -> list[dict[str, Any]]:
    return to_submission(parse_plan(text).days)


HOSTILE: list[tuple[bytes, str | None]] = [
    # (the line, the error it must give; None: graded)
    (json.dumps({"pid": "a", "instance": 0, "plan": _plan(BURBANK)}).encode(), None),
    (json.dumps({"query": "  " + PHOENIX_QUERY.upper() + " ", "plan": _plan(PHOENIX),
                 "team": {"name": "t"}}).encode(), None),
    (b'{"instance": 0, "plan": [', "invalid JSON"),
    (json.dumps({"instance": 102, "plan": []}).encode(), "unknown instance 102"),
    (json.dumps({"instance": 0, "plan": "Day 1: fly"}).encode(),
     "the plan must be a list of day objects, not str"),
    (b'{"instance": 0, "plan": [], "note": "\\ud800"}', "lone surrogate"),
    (b'{"instance": 0, "plan": [], "score": NaN}', "NaN is not a JSON number"),
    (json.dumps({"instance": True, "plan": []}).encode(), "'instance' must be a whole number"),
    (b"", "empty line"),
    (b"[1, 2]", "expected a JSON object, got list"),
    (json.dumps({"instance": 0, "plan": [{"lunch": 5}]}).encode(),
     "day 1: 'lunch' must be a string, not a number"),
    (b'{"instance": 0, "plan": [], "x": "\xff\xfe"}', "not UTF-8"),
    (b"[" * 200_000, "invalid JSON"),
    (json.dumps({"query": "A trip to Atlantis", "plan": []}).encode(), "no instance has the query"),
    (json.dumps({"instance": 0, "query": PHOENIX_QUERY, "plan": []}).encode(), "disagree"),
    (json.dumps({"instance": 0}).encode(), "the line has no 'plan'"),
    (json.dumps({"instance": 0, "plan": []}).encode(), None),  # graded: not delivered
    (json.dumps({"instance": 0, "plan": [{"current_city": "Burbank"}]}).encode(), None),
]


@pytest.fixture(scope="module")
def plans_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("grade") / "plans.jsonl"
    path.write_bytes(b"\n".join(line for line, _ in HOSTILE) + b"\r\n")
    return path


def test_every_line_gets_its_answer_in_order(plans_file: Path, tmp_path: Path,
                                             datasets_dir: Path) -> None:  # noqa: F811
    out = tmp_path / "verdicts.jsonl"
    result = _run("travel_planning", str(plans_file), "--out", str(out), "--data-dir",
                  str(datasets_dir))
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(records) == len(HOSTILE)
    for number, (record, (_, error)) in enumerate(zip(records, HOSTILE, strict=True), start=1):
        if error is None:
            assert "error" not in record, record
            assert set(record["commonsense"]) == {
                "is_reasonable_visiting_city", "is_valid_restaurants", "is_valid_attractions",
                "is_valid_accommodation", "is_valid_transportation",
                "is_valid_information_in_current_city", "is_valid_information_in_sandbox",
                "is_not_absent"}
        else:
            assert record["line"] == number and error in record["error"], (number, record)
    burbank, phoenix = records[0], records[1]
    assert burbank["pid"] == "a" and burbank["instance"] == 0 and burbank["mode"] == "official"
    assert burbank["delivered"] is True and all(burbank["commonsense"].values())
    assert burbank["hard"] == {"valid_cuisine": None, "valid_room_rule": None,
                               "valid_transportation": None, "valid_room_type": True,
                               "valid_cost": True}
    assert burbank["total_cost"] == 5640 and "plan" not in burbank and "query" not in burbank
    assert phoenix["instance"] == 61 and phoenix["team"] == {"name": "t"}
    assert all(phoenix["commonsense"].values()) and phoenix["hard"]["valid_room_type"] is None
    assert set(records[5]) == {"line", "error"}  # a lone surrogate cannot be written back
    assert records[6] == {"line": 7, "error": "NaN is not a JSON number"}
    assert records[16]["delivered"] is False and records[16]["hard"]["valid_cost"] is False
    # a day with only a city: the official code raises where it reads a missing field
    assert "valid_cost" in records[17]["errors"] and records[17]["delivered"] is True
    # the summary: 4 plans graded, two of them perfect (rates in percent)
    assert f"{len(HOSTILE)} lines: 4 graded, 14 not gradable" in result.stdout
    assert "Final pass rate" in result.stdout and "50.0%" in result.stdout
    assert "Co-Gym task performance" in result.stdout and "is_not_absent" in result.stdout


def test_corrected_mode_and_the_data_setting(plans_file: Path, tmp_path: Path,
                                             datasets_dir: Path) -> None:  # noqa: F811
    out = tmp_path / "corrected.jsonl"
    packed = tmp_path / "plans.jsonl.gz"  # a gzip-compressed file reads the same
    packed.write_bytes(gzip.compress(plans_file.read_bytes()))
    result = _run("travel_planning", str(packed), "--out", str(out), "--mode", "corrected",
                  data=datasets_dir)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(records) == len(HOSTILE) and records[2]["line"] == 3
    assert records[0]["mode"] == "corrected" and all(records[0]["commonsense"].values())
    assert records[17]["errors"] == {}  # corrected mode reads a missing field as "-"
    assert "corrected mode" in result.stdout


def test_bad_invocations_fail_clearly(plans_file: Path, tmp_path: Path,
                                      datasets_dir: Path) -> None:  # noqa: F811
    other = _run("related_work", str(plans_file), "--out", str(tmp_path / "x.jsonl"),
                 "--data-dir", str(datasets_dir))
    assert other.returncode == 2 and "'related_work' has no batch grader" in other.stderr
    assert "travel_planning" in other.stderr
    missing = _run("travel_planning", str(plans_file), "--out", str(tmp_path / "y.jsonl"),
                   "--data-dir", str(tmp_path / "nowhere"))
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert "cogym-lab data download travel_planning --data-dir" in missing.stderr
    mode = _run("travel_planning", str(plans_file), "--out", str(tmp_path / "z.jsonl"),
                "--mode", "lenient")
    assert mode.returncode == 2 and "'lenient' is not one of" in mode.stderr
