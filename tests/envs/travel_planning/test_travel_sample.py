"""The Travel Planning sample that ships inside the package: it stands in when nobody chose a data
directory and the default one is empty, never for a folder someone chose; its instances are the
full data's first ones, the grader gives the same verdicts on it, a whole session runs from it, it
carries its licences, and its build script reproduces it byte for byte."""

from __future__ import annotations

import csv
import filecmp
import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cogym_lab import datasets
from cogym_lab.cli.main import main
from cogym_lab.datasets import DATA_ENV_VAR, DataMissing, samples
from cogym_lab.envs import make_env
from cogym_lab.envs.task_data import data_sample
from cogym_lab.envs.travel_planning import TravelPlanningEnv
from cogym_lab.envs.travel_planning.data_files import DATA_FILES, SAMPLE
from cogym_lab.envs.travel_planning.database import TravelDatabase, travel_dir
from cogym_lab.envs.travel_planning.grader import Grade, grade_submission
from cogym_lab.envs.travel_planning.instances import load_instances
from cogym_lab.envs.travel_planning.plan import cities_of, split_name_city, transport_route
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.data import SHARED_ORACLES
from tests.support.paths import REPO_ROOT
from tests.support.travel_scripts import TravelRolePlay

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

SAMPLE_SIZE = 12
BUILD_SCRIPT = REPO_ROOT / "scripts" / "samples" / "build_travel_planning_sample.py"

csv.field_size_limit(2**31 - 1)


@pytest.fixture
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A new home and cache folder and no COGYM_DATA: nobody chose a data directory and the
    default one is empty. The sample's notice counts as not yet given in this process."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(DATA_ENV_VAR, raising=False)
    monkeypatch.setattr(samples, "_announced", set())  # once per process: this test's process
    return tmp_path


def _raw_rows(folder: Path) -> list[dict[str, str]]:
    with open(folder / "validation_with_hidden_profile.csv", newline="",
              encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


# -- when the sample stands in -----------------------------------------------------------------

def test_a_newcomer_without_data_gets_the_sample_and_one_notice(fresh_home: Path, capfd) -> None:
    env = make_env("travel_planning", instance=3)
    assert (env.task.index, env.task.origin, env.task.destination) == (3, "Miami", "Texas")
    assert env.db.source == SAMPLE.folder.resolve() and datasets.is_sample(env.db.source)
    flights = env.search.flight_search("Miami", "Dallas", "2022-03-27")
    assert flights.rows, flights
    make_env("travel_planning", instance=0)
    assert len(TravelPlanningEnv.instances()) == SAMPLE_SIZE
    with pytest.raises(IndexError, match="0 to 11"):
        make_env("travel_planning", instance=SAMPLE_SIZE)
    err = capfd.readouterr().err
    assert err.count(SAMPLE.notice()) == 1, err
    assert "cogym-lab data download travel_planning`" in SAMPLE.notice()
    assert data_sample("travel_planning") is SAMPLE


def test_a_chosen_empty_folder_is_missing_data_not_the_sample(
        fresh_home: Path, monkeypatch: pytest.MonkeyPatch, capfd) -> None:
    empty = fresh_home / "empty"
    empty.mkdir()
    with pytest.raises(DataMissing) as explicit:
        make_env("travel_planning", instance=0, data_dir=str(empty))
    assert f"cogym-lab data download travel_planning --data-dir {empty.resolve()}" in str(
        explicit.value)
    monkeypatch.setenv(DATA_ENV_VAR, str(empty))
    with pytest.raises(DataMissing) as from_env:
        load_instances()
    assert "cogym-lab data download travel_planning" in str(from_env.value)
    with datasets.reading_from(empty), pytest.raises(DataMissing):
        TravelDatabase.load()
    assert "sample" not in capfd.readouterr().err


def test_full_data_in_the_default_folder_is_read_instead(fresh_home: Path, datasets_dir: Path,
                                                         capfd) -> None:
    default = datasets.data_dir()
    default.mkdir(parents=True)
    (default / "travel_planning").symlink_to(datasets_dir / "travel_planning")
    assert travel_dir() == default / "travel_planning"
    assert len(load_instances()) == 102
    assert capfd.readouterr().err == ""


def test_a_chosen_folder_numbers_the_instances(fresh_home: Path, datasets_dir: Path,
                                               capfd) -> None:
    """The instance number is checked against the chosen folder's queries, not the sample's."""
    env = make_env("travel_planning", instance=50, data_dir=str(datasets_dir))
    assert env.task.index == 50 and not datasets.is_sample(env.db.source)
    assert capfd.readouterr().err == ""


def test_the_sample_and_the_full_data_are_cached_apart(datasets_dir: Path) -> None:
    sample_db, full_db = TravelDatabase.load(SAMPLE.folder), TravelDatabase.load(datasets_dir)
    assert sample_db is not full_db and sample_db.source != full_db.source
    assert len(load_instances(SAMPLE.folder)) == SAMPLE_SIZE
    assert len(load_instances(datasets_dir)) == 102
    corrected = sample_db.for_table("corrected")
    assert corrected.source == sample_db.source and corrected.accommodation_table == "corrected"


# -- what the sample holds -----------------------------------------------------------------------

def test_sample_instances_are_the_full_data_s_first_ones(datasets_dir: Path) -> None:
    full = datasets_dir / "travel_planning"
    assert load_instances(SAMPLE.folder) == load_instances(datasets_dir)[:SAMPLE_SIZE]
    assert _raw_rows(SAMPLE.folder) == _raw_rows(full)[:SAMPLE_SIZE]  # reference info too
    sample_db, full_db = TravelDatabase.load(SAMPLE.folder), TravelDatabase.load(datasets_dir)
    for number in range(SAMPLE_SIZE):
        assert sample_db.reference_flights(number) == full_db.reference_flights(number)


def test_every_search_a_reference_plan_needs_answers_as_on_the_full_data(
        datasets_dir: Path) -> None:
    sample_db, full_db = TravelDatabase.load(SAMPLE.folder), TravelDatabase.load(datasets_dir)
    cities: set[str] = set()
    for number, task in enumerate(load_instances(SAMPLE.folder)):
        for flight in full_db.reference_flights(number):
            cities |= {flight.origin, flight.destination}
            assert sample_db.flights(flight.origin, flight.destination, flight.date) == \
                full_db.flights(flight.origin, flight.destination, flight.date)
        cities.add(task.origin)
    assert len(cities) > SAMPLE_SIZE
    for city in cities:
        for look_up in ("accommodations", "restaurants", "attractions"):
            found = getattr(sample_db, look_up)(city)
            assert found == getattr(full_db, look_up)(city), (look_up, city)
        for other in cities:
            for mode in ("self-driving", "taxi"):
                assert sample_db.route(city, other, mode) == full_db.route(city, other, mode)
    assert sample_db.all_cities() == full_db.all_cities()
    assert sample_db.all_states() == full_db.all_states()


def _oracle_plans() -> list[dict[str, Any]]:
    path = SHARED_ORACLES / "travelplanner" / "plans.jsonl.gz"
    if not path.is_file():
        pytest.fail(f"The TravelPlanner oracle is missing: expected {path}.", pytrace=False)
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        plans = [json.loads(line) for line in handle]
    return [plan for plan in plans if plan["instance"] < SAMPLE_SIZE]


def _within(plan: list[dict[str, Any]], sample_db: TravelDatabase) -> bool:
    """Whether a plan names only cities the sample has records of and flights it holds."""
    held = {city for city in sample_db.all_places()
            if sample_db.restaurants(city) or sample_db.accommodations(city)}
    for day in plan:
        named = [*cities_of(day["current_city"]), *(transport_route(day["transportation"]) or ())]
        for slot in ("breakfast", "attraction", "lunch", "dinner", "accommodation"):
            named += [split_name_city(entry)[1] for entry in str(day[slot]).split(";")
                      if entry.strip() not in ("", "-")]
        if any(city is None or city.strip() not in held for city in named):
            return False
        if any(not sample_db.flights_numbered(number)
               for number in re.findall(r"\bF\d+\b", day["transportation"])):
            return False
    return True


def _verdicts(grade: Grade) -> dict[str, Any]:
    return {"commonsense": {k: v.passed for k, v in grade.commonsense.items()},
            "hard": {k: v.passed for k, v in grade.hard.items()}, "cost": grade.total_cost}


@pytest.mark.parametrize("mode", ["official", "corrected"])
def test_the_grader_gives_the_same_verdicts_on_the_sample(datasets_dir: Path, mode: str) -> None:
    """The oracle plans of the sample's instances (valid ones built from the reference
    information and the database, and ones that break one rule each), graded on both with the
    flights the tools serve and with the query's reference flights. Plans that name another
    city's records or a flight of another query are out of the sample's reach."""
    plans = _oracle_plans()
    sample_db, full_db = TravelDatabase.load(SAMPLE.folder), TravelDatabase.load(datasets_dir)
    sample_tasks, full_tasks = load_instances(SAMPLE.folder), load_instances(datasets_dir)
    inside = [plan for plan in plans if _within(plan["plan"], sample_db)]
    assert len(plans) > 150 and len(inside) > 130
    assert {plan["category"] for plan in plans if plan not in inside} <= {
        "accommodation_wrong_city", "stay_day_restaurant_wrong_city", "route_not_closed",
        "flight_wrong_date", "hallucinated_flight"}
    different = []
    for plan in inside:
        number = plan["instance"]
        for reference in (False, True):
            grades = [grade_submission(plan["plan"], tasks[number], db, mode=mode,
                                       flights=db.reference_flights(number) if reference
                                       else None)
                      for tasks, db in ((sample_tasks, sample_db), (full_tasks, full_db))]
            if _verdicts(grades[0]) != _verdicts(grades[1]):
                different.append((plan["pid"], plan["category"], reference))
    assert different == []


# -- a whole session, and the files ------------------------------------------------------------

def test_a_whole_session_runs_from_the_sample(fresh_home: Path, tmp_path: Path) -> None:
    env = make_env("travel_planning", instance=0)
    with ScriptedOpenAIServer(responder=TravelRolePlay(env.task, env.db)) as server:
        result = CliRunner().invoke(main, [
            "run", "--task", "travel_planning", "--instance", "0", "--team", "collaborative",
            "--model", "agent=agent-lm", "--model", "user=user-lm",
            "--base-url", server.base_url, "--out", str(tmp_path / "out"),
            "--idle-seconds", "2"])
    assert result.exit_code == 0, result.output
    assert "ended: finished" in result.output and "Delivered: True" in result.output
    (session,) = (tmp_path / "out").iterdir()
    meta = json.loads((session / "session.json").read_text())
    assert meta["env_args"] == {"instance": 0, "protocol": "cogym"}
    # Under cogym (the default) the release's travel evaluator fails Within Sandbox for every
    # plan with a hotel, so 7 of the 8 commonsense checks pass.
    assert meta["scores"]["commonsense_pass_rate"] == 0.875


def test_the_sample_carries_its_licences_and_says_what_it_holds() -> None:
    folder = SAMPLE.folder
    for name in ("LICENSE.TravelPlanner.txt", "LICENSE.collaborative-gym.txt"):
        text = (folder / name).read_text(encoding="utf-8")
        assert text.startswith("MIT License") and "Permission is hereby granted" in text
    assert "OSU Natural Language Processing" in (folder / "LICENSE.TravelPlanner.txt").read_text()
    assert "(SALT) lab" in (folder / "LICENSE.collaborative-gym.txt").read_text()
    about = (folder / "SAMPLE.md").read_text(encoding="utf-8")
    assert "cogym-lab data download travel_planning" in about
    assert "LICENSE.TravelPlanner.txt" in about and "LICENSE.collaborative-gym.txt" in about
    for item in DATA_FILES:  # laid out like <data dir>/travel_planning/
        assert (folder.parent / item.path.replace("travel_planning/", "sample/", 1)).is_file()
    size = sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
    assert size < 1_000_000, size


def test_the_build_script_reproduces_the_sample_byte_for_byte(datasets_dir: Path,
                                                             tmp_path: Path) -> None:
    out = tmp_path / "sample"
    built = subprocess.run(
        [sys.executable, str(BUILD_SCRIPT), "--data-dir", str(datasets_dir), "--out", str(out)],
        check=False, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert built.returncode == 0, built.stderr
    committed = sorted(p.relative_to(SAMPLE.folder) for p in SAMPLE.folder.rglob("*")
                       if p.is_file() and "__pycache__" not in p.parts)
    rebuilt = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert rebuilt == committed
    for relative in committed:
        assert filecmp.cmp(SAMPLE.folder / relative, out / relative, shallow=False), relative
