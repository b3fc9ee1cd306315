"""The data directory setting, the ``cogym-lab data`` command, and the travel-planning data:
instances, the sandbox database and the search tools, checked against rows read straight from
the shared CSV files."""

from __future__ import annotations

import ast
import csv
import datetime
import functools
import http.server
import itertools
import json
import re
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogym_lab import datasets
from cogym_lab.cli.data_command import data
from cogym_lab.datasets import DataItem, DataMissing, DownloadError
from cogym_lab.envs.related_work.data_files import DATA_FILES as RELATED_WORK_FILES
from cogym_lab.envs.task_data import all_data_files, data_files, tasks_with_data
from cogym_lab.envs.travel_planning import TravelPlanningEnv
from cogym_lab.envs.travel_planning.data_files import DATA_FILES as TRAVEL_FILES
from cogym_lab.envs.travel_planning.database import (
    FLIGHT_COLUMNS,
    TravelDatabase,
    parse_fixed_width,
    parse_km,
)
from cogym_lab.envs.travel_planning.instances import CONSTRAINT_KEYS, load_instances
from cogym_lab.envs.travel_planning.records import Accommodation, Flight, Restaurant
from cogym_lab.envs.travel_planning.tools import (
    DatabaseProvider,
    LiveProviderUnavailable,
    LiveSearchProvider,
    SearchProvider,
    SearchResult,
)

csv.field_size_limit(2**31 - 1)

UNREACHABLE = "http://127.0.0.1:9"  # the discard port: nothing listens there


# -- helpers: read the source files directly ---------------------------------------------------

def _tp(datasets_dir: Path) -> Path:
    return datasets_dir / "travel_planning"


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _row(path: Path, **match: str) -> dict[str, str]:
    found = [r for r in _csv_rows(path) if all(r[k] == v for k, v in match.items())]
    assert found, f"no row {match} in {path.name}"
    return found[0]


@pytest.fixture(scope="module")
def db(datasets_dir: Path) -> TravelDatabase:
    return TravelDatabase.load(datasets_dir)


@pytest.fixture(scope="module")
def provider(db: TravelDatabase) -> DatabaseProvider:
    return DatabaseProvider(db)


@pytest.fixture(scope="module")
def validation_rows(datasets_dir: Path) -> list[dict[str, str]]:
    return _csv_rows(_tp(datasets_dir) / "validation_with_hidden_profile.csv")


# -- the data directory ------------------------------------------------------------------------

def test_data_dir_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit, env, cache, home = (tmp_path / n for n in ("explicit", "env", "cache", "home"))
    monkeypatch.setenv("COGYM_DATA", str(env))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv("HOME", str(home))
    assert datasets.data_dir(explicit) == explicit.resolve()
    assert datasets.data_dir(str(explicit)) == explicit.resolve()
    assert datasets.data_dir_origin(explicit) == "argument"
    assert datasets.data_dir() == env.resolve()
    assert datasets.data_dir_origin() == "COGYM_DATA"
    monkeypatch.setenv("COGYM_DATA", "")  # set but empty counts as unset
    assert datasets.data_dir() == (cache / "cogym_lab" / "datasets").resolve()
    monkeypatch.delenv("COGYM_DATA")
    assert datasets.data_dir() == (cache / "cogym_lab" / "datasets").resolve()
    assert datasets.data_dir_origin() == "cache"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert datasets.data_dir() == (home / ".cache" / "cogym_lab" / "datasets").resolve()


def test_the_tasks_declare_their_data_with_sources() -> None:
    assert set(tasks_with_data()) == {"travel_planning", "related_work", "tabular_analysis"}
    paths = {item.path for item in all_data_files()}
    assert "travel_planning/validation_with_hidden_profile.csv" in paths
    assert "travel_planning/database/train_ref_info.jsonl" in paths
    assert {"related_work/test.json", "related_work/rubric.txt",
            "related_work/papers.jsonl.gz"} <= paths
    assert "tabular_analysis/discoverybench/real/test/" in paths
    assert "tabular_analysis/discoverybench/real/test/answer_key_real.csv" in paths
    for item in all_data_files():
        assert item.source and item.homepage.startswith("https://") and item.license
        assert item.manual or item.url.startswith("https://")
        assert not item.path.startswith("/") and ".." not in item.path
    with pytest.raises(KeyError, match="Unknown task"):
        data_files("nope")
    assert data_files("todo") == ()


def test_status_on_shared_data(datasets_dir: Path) -> None:
    states = datasets.status(all_data_files(), datasets_dir)
    assert len(states) == len(all_data_files())
    assert all(s.present and s.size > 0 for s in states), [s.item.path for s in states
                                                          if not s.present]
    key = {s.item.path: s for s in states}["travel_planning/validation_with_hidden_profile.csv"]
    assert key.size == key.path.stat().st_size
    expected = (datasets_dir / "travel_planning").resolve()
    assert datasets.require(TRAVEL_FILES, datasets_dir) == expected


def test_status_and_require_on_an_empty_dir(tmp_path: Path) -> None:
    states = datasets.status(TRAVEL_FILES, tmp_path)
    assert states and not any(s.present for s in states) and all(s.size == 0 for s in states)
    with pytest.raises(DataMissing) as caught:
        datasets.require(TRAVEL_FILES, tmp_path)
    message = str(caught.value)
    assert str(tmp_path.resolve()) in message
    assert f"the {len(TRAVEL_FILES)} missing files" in message  # `cogym-lab data` lists them
    assert "cogym-lab data download travel_planning --data-dir" in message
    with pytest.raises(DataMissing, match="build-corpus") as caught:  # the corpus is built
        datasets.require(RELATED_WORK_FILES, tmp_path)
    assert "arXiv metadata" in str(caught.value)


def test_the_items_of_several_tasks_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="one task"):
        datasets.require((*TRAVEL_FILES, *RELATED_WORK_FILES), tmp_path)
    with pytest.raises(ValueError, match="one task"):
        datasets.download((), tmp_path, progress=False)


def test_require_names_only_the_missing_file(datasets_dir: Path, tmp_path: Path) -> None:
    for item in TRAVEL_FILES:
        if item.path.endswith("train_ref_info.jsonl"):
            continue
        target = tmp_path / item.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((datasets_dir / item.path).read_bytes())
    with pytest.raises(DataMissing) as caught:
        datasets.require(TRAVEL_FILES, tmp_path)
    message = str(caught.value)
    assert "travel_planning/database/train_ref_info.jsonl" in message
    assert "citySet.txt" not in message
    with pytest.raises(DataMissing, match="train_ref_info.jsonl"):
        TravelDatabase.load(tmp_path)
    with pytest.raises(DataMissing, match="train_ref_info.jsonl"):
        load_instances(tmp_path)


# -- downloads (never the real internet) --------------------------------------------------------

def _item(path: str, url: str | None, **extra: str) -> DataItem:
    return DataItem("travel_planning", path, "a test file", "a test source",
                    "https://example.org/", "MIT", url, **extra)


def test_download_fails_cleanly_when_unreachable(tmp_path: Path) -> None:
    items = [_item("travel_planning/a.csv", f"{UNREACHABLE}/a.csv"),
             _item("travel_planning/b/", f"{UNREACHABLE}/b.zip", archive_member="b/")]
    started = time.monotonic()
    with pytest.raises(DownloadError) as caught:
        datasets.download(items, tmp_path, progress=False, timeout=5)
    assert time.monotonic() - started < 10
    message = str(caught.value)
    assert isinstance(caught.value, DataMissing)
    assert str(tmp_path.resolve()) in message
    assert f"{UNREACHABLE}/a.csv" in message and "travel_planning/a.csv" in message
    assert "travel_planning/b/" in message
    assert "network" in message and "by hand" in message
    assert list(tmp_path.rglob("*")) in ([], [tmp_path / "travel_planning"])  # nothing left


def test_download_of_items_it_cannot_fetch_says_how_to_get_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The corpus has no download (it is built); the task files are taken as present, so no
    # network is asked for.
    for item in RELATED_WORK_FILES:
        if not item.manual:
            (tmp_path / item.path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / item.path).write_text("{}")
    with pytest.raises(DataMissing) as caught:
        datasets.download(RELATED_WORK_FILES, tmp_path, progress=False)
    assert not isinstance(caught.value, DownloadError)
    message = str(caught.value)
    assert "cannot be downloaded automatically" in message
    assert "with `cogym-lab data build-corpus" in message
    assert f"`cogym-lab data related_work --data-dir {tmp_path.resolve()}` lists" in message


@pytest.fixture
def loopback_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A static file server on 127.0.0.1 serving a fresh folder."""
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()


def test_download_from_a_loopback_server(loopback_server: tuple[str, Path], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    base, served = loopback_server
    (served / "a.csv").write_text("x,y\n1,2\n")
    with zipfile.ZipFile(served / "repo.zip", "w") as archive:
        archive.writestr("repo-main/README.md", "top")
        archive.writestr("repo-main/data/real/test/one/table.csv", "a\n1\n")
        archive.writestr("repo-main/data/real/test/two.json", "{}")
        archive.writestr("repo-main/data/real/train/skip.csv", "no")
    target = tmp_path / "data"
    items = [_item("travel_planning/sub/a.csv", f"{base}/a.csv"),
             _item("travel_planning/test/", f"{base}/repo.zip", archive_member="data/real/test/")]
    fetched = datasets.download(items, target, progress=True)
    assert fetched == [target / "travel_planning/sub/a.csv", target / "travel_planning/test"]
    assert (target / "travel_planning/sub/a.csv").read_text() == "x,y\n1,2\n"
    assert (target / "travel_planning/test/one/table.csv").read_text() == "a\n1\n"
    assert (target / "travel_planning/test/two.json").exists()
    assert not (target / "travel_planning/test/skip.csv").exists()
    assert not list(target.rglob("*.part"))
    assert "a.csv" in capsys.readouterr().err  # the progress line
    # present items are not fetched again
    assert datasets.download(items, target, progress=False) == []


def test_download_reports_http_errors(loopback_server: tuple[str, Path], tmp_path: Path) -> None:
    base, _served = loopback_server
    with pytest.raises(DownloadError, match="404"):
        datasets.download([_item("travel_planning/gone.csv", f"{base}/gone.csv")], tmp_path,
                          progress=False)
    assert not (tmp_path / "travel_planning" / "gone.csv").exists()


# -- the `cogym-lab data` command --------------------------------------------------------------

def test_data_command_on_shared_data(datasets_dir: Path) -> None:
    result = CliRunner().invoke(data, ["--data-dir", str(datasets_dir),
                                       "--task", "travel_planning"])
    assert result.exit_code == 0, result.output
    assert "present" in result.output and "missing" not in result.output
    assert "validation_with_hidden_profile.csv" in result.output
    assert "2.8 MB" in result.output  # sizes are shown
    assert "related_work" not in result.output


def test_data_command_uses_cogym_data(use_shared_data: Path) -> None:
    result = CliRunner().invoke(data, [])
    assert result.exit_code == 0, result.output
    assert "COGYM_DATA" in result.output


def test_data_command_on_an_empty_dir(tmp_path: Path) -> None:
    result = CliRunner().invoke(data, ["--data-dir", str(tmp_path)])
    assert result.exit_code == 1, result.output
    output = result.output
    assert "missing" in output and "How to obtain" in output
    assert f"cogym-lab data download travel_planning --data-dir {tmp_path.resolve()}" in output
    assert "--download" not in output  # the flag still works, but the advice is the subcommand
    assert "Build it: run `cogym-lab data build-corpus" in output  # the one item with no download
    count = len(all_data_files())
    assert f"{count} of {count} item(s) missing" in output


def test_data_command_download_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(TravelPlanningEnv, "data_files",
                        (_item("travel_planning/a.csv", f"{UNREACHABLE}/a.csv"),))
    result = CliRunner().invoke(data, ["--data-dir", str(tmp_path), "--task",
                                       "travel_planning", "--download"])
    assert result.exit_code == 1
    assert "failed" in result.output and f"{UNREACHABLE}/a.csv" in result.output


# -- instances ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def instances(datasets_dir: Path) -> list:
    return load_instances(datasets_dir)


def test_all_instances_load_in_file_order(instances: list, validation_rows: list) -> None:
    assert len(instances) == 102
    assert [i.index for i in instances] == list(range(102))
    assert [i.query for i in instances] == [r["query"].strip() for r in validation_rows]
    first = instances[0]
    assert (first.origin, first.destination, first.days, first.people, first.budget) == (
        "Salt Lake City", "Burbank", 3, 7, 7600)
    assert first.dates == ("2022-03-12", "2022-03-13", "2022-03-14")
    assert first.local_constraint == {"house rule": None, "cuisine": None,
                                      "room type": "entire room", "transportation": None}


@pytest.mark.parametrize("index", range(102))
def test_instance_fields_are_sane(instances: list, db: TravelDatabase, index: int) -> None:
    instance = instances[index]
    assert instance.days in (3, 5, 7)
    assert len(instance.dates) == instance.days
    days = [datetime.date.fromisoformat(d) for d in instance.dates]
    assert all((b - a).days == 1 for a, b in itertools.pairwise(days))
    assert instance.people >= 1 and instance.budget > 0
    assert instance.level in ("medium", "hard")
    assert instance.visiting_city_number in (1, 2, 3)
    assert instance.preferences and all(isinstance(p, str) and p for p in instance.preferences)
    assert set(instance.local_constraint) == set(CONSTRAINT_KEYS)
    assert instance.query
    assert db.is_city(instance.origin)
    if instance.visiting_city_number == 1:
        assert db.is_city(instance.destination)
    else:
        assert db.is_state(instance.destination) and db.cities(instance.destination)


def test_instances_follow_cogym_data(use_shared_data: Path) -> None:
    assert len(load_instances()) == 102
    assert load_instances()[5] == load_instances(use_shared_data)[5]


def test_cuisine_lists_become_text(instances: list, validation_rows: list) -> None:
    for instance, row in zip(instances, validation_rows, strict=True):
        asked = ast.literal_eval(row["local_constraint"])["cuisine"]
        if asked:
            assert instance.local_constraint["cuisine"] == ", ".join(asked)


# -- the database ------------------------------------------------------------------------------

def test_database_load_time_and_cache(datasets_dir: Path) -> None:
    TravelDatabase.clear_cache()
    started = time.perf_counter()
    first = TravelDatabase.load(datasets_dir)
    elapsed = time.perf_counter() - started
    print(f"\nTravelDatabase.load (cold): {elapsed:.3f} s; {first.flight_count} flights; "
          f"stats {first.stats}", file=sys.stderr)
    assert TravelDatabase.load(datasets_dir) is first
    assert TravelDatabase.load(datasets_dir / "travel_planning") is first  # the task folder too
    assert TravelDatabase.load(str(datasets_dir / ".." / "datasets")) is first


def test_flight_from_the_validation_csv(db: TravelDatabase) -> None:
    flight = db.flight("F3846241")
    assert flight == Flight(number="F3846241", price=157, departure="08:08", arrival="09:03",
                            elapsed="1 hours 55 minutes", date="2022-03-12",
                            origin="Salt Lake City", destination="Burbank", distance=574.0)
    assert db.flight("f3846241", "2022-03-12") == flight
    assert db.flight("F3846241", "2022-03-13") is None
    assert db.flight("F0000000") is None
    found = db.flights("  salt   lake city ", "BURBANK", "2022-03-12")
    assert flight in found and len(found) == 5
    assert [f.departure for f in found] == sorted(f.departure for f in found)


def test_flight_from_train_ref_info(db: TravelDatabase, datasets_dir: Path) -> None:
    path = _tp(datasets_dir) / "database" / "train_ref_info.jsonl"
    with open(path, encoding="utf-8") as handle:
        record = json.loads(handle.readline())
    key, listed = next((k, v) for k, v in record.items()
                       if k.startswith("Flight from") and isinstance(v, list))
    source = listed[0]
    flight = db.flight(source["Flight Number"])
    assert flight is not None
    assert (flight.price, flight.departure, flight.arrival, flight.date, flight.origin,
            flight.destination, flight.distance) == (
        source["Price"], source["DepTime"], source["ArrTime"], source["FlightDate"],
        source["OriginCityName"], source["DestCityName"], source["Distance"])
    assert key == f"Flight from {flight.origin} to {flight.destination} on {flight.date}"
    assert flight in db.flights(flight.origin.upper(), flight.destination.lower(), flight.date)


def test_every_reference_flight_is_in_the_table(db: TravelDatabase,
                                                validation_rows: list) -> None:
    pattern = re.compile(r"F\d+")
    count = 0
    for row in validation_rows:
        for entry in ast.literal_eval(row["reference_information"]):
            if entry["Description"].startswith("Flight from"):
                origin, rest = entry["Description"][len("Flight from "):].split(" to ", 1)
                destination, date = rest.rsplit(" on ", 1)
                numbers = pattern.findall(entry["Content"])
                assert {f.number for f in db.flights(origin, destination, date)} == set(numbers)
                count += len(numbers)
    assert count > 1000


def test_fixed_width_parser_uses_header_positions() -> None:
    cells = [("F1", "9", "07:17", "10:05", "1 hours 48 minutes", "2022-03-14", "Burbank",
              "Salt Lake City", "574.0"),
             ("F22", "1234", "23:57", "02:43", "1 hours 46 minutes", "2022-03-14",
              "St. Petersburg", "Burbank", "1049.0")]
    widths = [max(len(name), *(len(row[i]) for row in cells))
              for i, name in enumerate(FLIGHT_COLUMNS)]
    lines = [" ".join(c.rjust(w) for c, w in zip(row, widths, strict=True))
             for row in [FLIGHT_COLUMNS, *cells]]  # right-aligned, like a DataFrame dump
    first, second = parse_fixed_width("\n".join(lines), FLIGHT_COLUMNS)
    assert first["OriginCityName"] == "Burbank" and first["DestCityName"] == "Salt Lake City"
    assert first["ActualElapsedTime"] == "1 hours 48 minutes" and first["Price"] == "9"
    assert second["OriginCityName"] == "St. Petersburg" and second["Distance"] == "1049.0"
    assert second["Flight Number"] == "F22" and second["Price"] == "1234"
    with pytest.raises(ValueError, match="'DepTime' not found"):
        parse_fixed_width("Flight Number Price", FLIGHT_COLUMNS)


def test_restaurant_matches_its_csv_row(db: TravelDatabase, datasets_dir: Path) -> None:
    source = _row(_tp(datasets_dir) / "database/restaurants/clean_restaurant_2022.csv",
                  Name="Le Petit Souffle")
    restaurant = db.restaurant("le petit  souffle", "binghamton")
    assert restaurant == Restaurant(
        name="Le Petit Souffle", city=source["City"],
        cuisines=tuple(c.strip() for c in source["Cuisines"].split(",")),
        average_cost=float(source["Average Cost"]), rating=float(source["Aggregate Rating"]))
    assert restaurant.cuisines == ("Tea", "Pizza", "Indian", "Seafood")
    assert db.restaurant("Le Petit Souffle") == restaurant
    assert db.restaurant("Le Petit Souffle", "Burbank") is None
    assert restaurant in db.restaurants("BINGHAMTON")


def test_accommodation_matches_its_csv_row(db: TravelDatabase, datasets_dir: Path) -> None:
    source = _row(_tp(datasets_dir) / "database/accommodations/clean_accommodations_2022.csv",
                  NAME="Roomy and Comftable Room")
    assert source["minimum nights"] == "10.0"
    stay = db.accommodation("ROOMY AND COMFTABLE ROOM", "laredo")
    assert stay == Accommodation(
        name="Roomy and Comftable Room", room_type="Private room", price=548.0,
        minimum_nights=10, review=5.0, house_rules="No children under 10 & No parties",
        maximum_occupancy=2, city="Laredo")
    assert isinstance(stay.minimum_nights, int) and isinstance(stay.maximum_occupancy, int)
    assert stay in db.accommodations("Laredo")


def test_attraction_matches_its_csv_row(db: TravelDatabase, datasets_dir: Path) -> None:
    source = _row(_tp(datasets_dir) / "database/attractions/attractions.csv",
                  Name="Cabrillo National Monument")
    attraction = db.attraction("cabrillo national monument")
    assert attraction is not None and attraction.city == "San Diego"
    assert attraction.address == source["Address"]
    assert attraction.latitude == float(source["Latitude"])
    assert db.attraction("Cabrillo National Monument", "Burbank") is None


def test_reference_records_are_all_in_the_database(db: TravelDatabase,
                                                   validation_rows: list) -> None:
    columns = {
        "Accommodations": ["NAME", "price", "room type", "house_rules", "minimum nights",
                           "maximum occupancy", "review rate number", "city"],
        "Restaurants": ["Name", "Average Cost", "Cuisines", "Aggregate Rating", "City"],
        "Attractions": ["Name", "Latitude", "Longitude", "Address", "Phone", "Website", "City"],
    }
    lookups = {"Accommodations": db.accommodation, "Restaurants": db.restaurant,
               "Attractions": db.attraction}
    checked = 0
    for row in validation_rows:
        for entry in ast.literal_eval(row["reference_information"]):
            kind = entry["Description"].split(" ")[0]
            if kind not in columns:
                continue
            for record in parse_fixed_width(entry["Content"], columns[kind]):
                name, city = record[columns[kind][0]], record[columns[kind][-1]]
                assert lookups[kind](name, city) is not None, (kind, name, city)
                checked += 1
    assert checked > 10000


def test_routes_agree_with_the_reference_information(db: TravelDatabase,
                                                     validation_rows: list) -> None:
    line = re.compile(r"^(self-driving|taxi), from (.+) to (.+), duration: (.+), "
                      r"distance: ([\d,.]+) km, cost: (\d+)$")
    checked = empty = 0
    for row in validation_rows:
        for entry in ast.literal_eval(row["reference_information"]):
            description = entry["Description"]
            if not description.startswith(("Self-driving from", "Taxi from")):
                continue
            mode = "taxi" if description.startswith("Taxi") else "self-driving"
            origin, destination = description.split(" from ", 1)[1].split(" to ", 1)
            route = db.route(origin, destination, mode)
            match = line.match(entry["Content"].strip())
            if match is None:
                assert "no valid information" in entry["Content"].lower()
                assert route is None
                empty += 1
                continue
            assert route is not None
            assert (route.duration, route.distance_km, route.cost) == (
                match.group(4), parse_km(match.group(5)), int(match.group(6)))
            checked += 1
    assert checked > 500 and empty > 0


def test_route_costs_from_distance_csv(db: TravelDatabase, datasets_dir: Path) -> None:
    source = _row(_tp(datasets_dir) / "database/googleDistanceMatrix/distance.csv",
                  origin="Detroit", destination="Norfolk")
    assert source["distance"] == "1,144 km" and source["duration"] == "10 hours 55 mins"
    driving = db.route("detroit", "NORFOLK", "self-driving")
    assert (driving.distance_km, driving.duration, driving.cost) == (1144.0, "10 hours 55 mins",
                                                                     int(1144 * 0.05))
    assert db.route("Detroit", "Norfolk", "taxi").cost == 1144
    assert db.route("Killeen", "Waco", "Self-Driving").cost == 4  # 98.6 km
    assert db.route("Killeen", "Waco", "taxi").cost == 98
    assert db.route("Killeen", "Mission", "taxi") is None  # a row without a distance
    long = _row(_tp(datasets_dir) / "database/googleDistanceMatrix/distance.csv",
                origin="New York", destination="Denver")
    assert long["duration"].startswith("1 day")
    assert db.route("New York", "Denver", "self-driving") is None  # a day or more: not offered
    kept = db.route("New York", "Denver", "self-driving", long_drives=True)
    assert kept.duration == long["duration"] and kept.distance_km == parse_km(long["distance"])
    assert db.route("Detroit", "Atlantis", "taxi") is None
    with pytest.raises(ValueError, match="self-driving"):
        db.route("Detroit", "Norfolk", "bus")


def test_cities_and_states(db: TravelDatabase, datasets_dir: Path) -> None:
    lines = (_tp(datasets_dir) / "database/background/citySet_with_states.txt").read_text(
        encoding="utf-8").splitlines()
    texas = [line.split("\t")[0] for line in lines if line.endswith("\tTexas")]
    assert db.cities("texas") == texas and "Dallas" in texas
    assert db.state_of("DALLAS") == "Texas"
    assert db.is_city("dallas") and not db.is_city("Texas")
    assert db.is_state("TEXAS") and not db.is_state("Dallas")
    assert not db.is_state("None")  # stateSet.txt lists the word "None"
    assert db.is_city("Jackson")  # only in citySet_with_states.txt
    assert db.cities("Atlantis") == [] and db.state_of("Atlantis") is None


# -- the search tools --------------------------------------------------------------------------

def test_database_provider_is_a_search_provider(provider: DatabaseProvider) -> None:
    assert isinstance(provider, SearchProvider)


def test_flight_search(provider: DatabaseProvider) -> None:
    result = provider.flight_search("salt lake city", "burbank", "2022-03-12")
    assert result.columns == ["Flight Number", "Price", "DepTime", "ArrTime", "Duration"]
    assert result.rows[0] == {"Flight Number": "F3846241", "Price": 157, "DepTime": "08:08",
                              "ArrTime": "09:03", "Duration": "1 hours 55 minutes"}
    assert len(result.rows) == 5 and result.note == ""
    assert "Salt Lake City" in result.title and "Burbank" in result.title


def test_flight_search_explains_empty_results(provider: DatabaseProvider) -> None:
    other_day = provider.flight_search("Salt Lake City", "Burbank", "2022-03-13")
    assert other_day.rows == []
    assert "no flight from Salt Lake City to Burbank on 2022-03-13" in other_day.note
    assert "2022-03-12" in other_day.note  # the day that has flights
    never = provider.flight_search("Kansas City", "Pensacola", "2022-03-27")
    assert never.rows == [] and "no flight on this route on any date" in never.note
    unknown = provider.flight_search("Salt Lake Cty", "Burbank", "2022-03-12")
    assert "Unknown city 'Salt Lake Cty'" in unknown.note and "'Salt Lake City'" in unknown.note
    assert "not a date" in provider.flight_search("Salt Lake City", "Burbank", "March 12").note


def test_accommodation_search(provider: DatabaseProvider, datasets_dir: Path) -> None:
    source = _row(_tp(datasets_dir) / "database/accommodations/clean_accommodations_2022.csv",
                  NAME="Roomy and Comftable Room")
    result = provider.accommodation_search("LAREDO")
    assert result.columns == ["Name", "Room Type", "Price", "Min Nights", "Max Occupancy",
                              "House Rules", "Rating"]
    row = next(r for r in result.rows if r["Name"] == "Roomy and Comftable Room")
    assert row == {"Name": source["NAME"], "Room Type": source["room type"], "Price": 548,
                   "Min Nights": 10, "Max Occupancy": 2, "House Rules": source["house_rules"],
                   "Rating": 5.0}
    # the official table: rows with no empty field (what TravelPlanner's loader keeps)
    in_csv = [r for r in _csv_rows(_tp(datasets_dir) / "database/accommodations/"
                                   "clean_accommodations_2022.csv")
              if r["city"] == "Laredo" and all(value != "" for value in r.values())]
    assert [row["Name"] for row in result.rows] == [r["NAME"] for r in in_csv]


def test_restaurant_search(provider: DatabaseProvider, datasets_dir: Path) -> None:
    source = _row(_tp(datasets_dir) / "database/restaurants/clean_restaurant_2022.csv",
                  Name="Le Petit Souffle")
    result = provider.restaurant_search("binghamton")
    assert result.columns == ["Name", "Cuisines", "Average Cost", "Rating"]
    assert {"Name": "Le Petit Souffle", "Cuisines": source["Cuisines"],
            "Average Cost": int(source["Average Cost"]),
            "Rating": float(source["Aggregate Rating"])} in result.rows
    count = sum(1 for r in _csv_rows(_tp(datasets_dir) /
                                     "database/restaurants/clean_restaurant_2022.csv")
                if r["City"] == "Binghamton")
    assert len(result.rows) == count


def test_attraction_search(provider: DatabaseProvider) -> None:
    result = provider.attraction_search("san diego")
    assert result.columns == ["Name", "Address"]
    assert {"Name": "Cabrillo National Monument",
            "Address": "1800 Cabrillo Memorial Dr, San Diego, CA 92106, USA"} in result.rows


def test_city_search(provider: DatabaseProvider, db: TravelDatabase) -> None:
    result = provider.city_search("texas")
    assert result.columns == ["City"] and result.rows == [{"City": c} for c in db.cities("Texas")]
    assert "Did you mean 'Texas'" in provider.city_search("Texs").note
    assert "is a city, not a state" in provider.city_search("Dallas").note
    assert provider.city_search("Atlantis").note.startswith("Unknown state")


def test_distance_matrix(provider: DatabaseProvider) -> None:
    result = provider.distance_matrix("Detroit", "Norfolk", "taxi")
    assert result.columns == ["Mode", "Duration", "Distance", "Cost"]
    assert result.rows == [{"Mode": "taxi", "Duration": "10 hours 55 mins",
                            "Distance": "1,144 km", "Cost": 1144}]
    assert provider.distance_matrix("detroit", "norfolk", "self-driving").rows[0]["Cost"] == 57
    bad_mode = provider.distance_matrix("Detroit", "Norfolk", "bus")
    assert bad_mode.rows == [] and "self-driving" in bad_mode.note and "'bus'" in bad_mode.note
    no_distance = provider.distance_matrix("Killeen", "Mission", "taxi")
    assert no_distance.rows == [] and "no distance" in no_distance.note
    too_long = provider.distance_matrix("New York", "Denver", "taxi")
    assert too_long.rows == [] and "a day or more" in too_long.note and "1 day" in too_long.note
    unknown = provider.distance_matrix("Detroit", "Atlantis", "taxi")
    assert "Unknown city 'Atlantis'" in unknown.note


def test_city_tools_explain_empty_results(provider: DatabaseProvider) -> None:
    for search in (provider.accommodation_search, provider.restaurant_search,
                   provider.attraction_search):
        unknown = search("Atlantis")
        assert unknown.rows == [] and "Unknown city 'Atlantis'" in unknown.note
        typo = search("San Diego ca")
        assert "Did you mean 'San Diego'" in typo.note or typo.rows
        state = search("Texas")
        assert state.rows == [] and "is a state" in state.note and "city_search" in state.note


def test_search_result_component_content_is_json(provider: DatabaseProvider) -> None:
    for result in (provider.flight_search("Salt Lake City", "Burbank", "2022-03-12"),
                   provider.accommodation_search("Laredo"), provider.city_search("Atlantis"),
                   provider.distance_matrix("Detroit", "Norfolk", "taxi")):
        content = result.to_component_content()
        assert set(content) == {"title", "columns", "rows", "note"}
        assert json.loads(json.dumps(content, allow_nan=False)) == content
    text = SearchResult("T", ["A"], [{"A": 1}], "n").to_text()
    assert text == "T\nA\n1\nn"


class _Live(LiveSearchProvider):
    """The smallest live provider: every search finds nothing and says so."""

    def _nothing(self, *args: str) -> SearchResult:
        return SearchResult("Live", [], [], f"nothing found for {args}")

    flight_search = accommodation_search = restaurant_search = _nothing
    attraction_search = city_search = distance_matrix = _nothing


def test_live_provider_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COGYM_PLACES_API_KEY", raising=False)
    with pytest.raises(LiveProviderUnavailable, match="COGYM_PLACES_API_KEY"):
        _Live()


def test_live_provider_needs_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    class Probe(_Live):
        probe_url = f"{UNREACHABLE}/status"
        probe_timeout = 2.0

    monkeypatch.setenv("COGYM_PLACES_API_KEY", "k")
    with pytest.raises(LiveProviderUnavailable, match="cannot reach"):
        Probe()
    live = _Live()  # no probe address: only the key is checked
    assert live.api_key == "k" and isinstance(live, SearchProvider)
    assert "nothing found" in live.flight_search("A", "B", "2022-03-12").note
    with pytest.raises(TypeError, match="abstract"):
        LiveSearchProvider()  # a live provider must implement all six searches
