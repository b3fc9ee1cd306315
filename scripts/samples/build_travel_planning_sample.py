"""Rebuild the Travel Planning sample that ships inside the package from a full data directory.

    python scripts/samples/build_travel_planning_sample.py --data-dir DIR [--out FOLDER]

``DIR`` is a data directory holding ``travel_planning/`` (what ``cogym-lab data download
travel_planning`` fills), plus the two licence files (``travel_planning/LICENSE.TravelPlanner.txt``
and ``LICENSE.collaborative-gym.txt``, in the task folder or the data directory). ``--out``
defaults to ``cogym_lab/envs/travel_planning/sample``, which the script empties and refills.

What the sample holds, file by file under the same relative paths as the full data:

* ``validation_with_hidden_profile.csv``: its header and first :data:`QUERIES` rows, so sample
  instance i is full instance i.
* the accommodation, attraction and restaurant tables: the rows of the cities those queries
  involve (each query's origin and every city its reference information names);
* ``distance.csv``: the rows between two of those cities;
* ``background/*``: whole (they are small, and the city search lists every city of a state);
* ``train_ref_info.jsonl``: of each training query, only its flight tables between two of those
  cities (a line with none is left out), since flights are read from there and nothing else is.

CSV rows are copied byte for byte, in file order; the output depends only on the input, so running
the script again on the same data gives the same files.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import re
import shutil
import sys
import textwrap
from collections.abc import Callable, Generator
from pathlib import Path, PurePosixPath
from typing import IO

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from cogym_lab.envs.travel_planning.data_files import DATA_FILES  # noqa: E402
from cogym_lab.envs.travel_planning.database import normalize  # noqa: E402

TASK = "travel_planning"
QUERIES = 12
DEFAULT_OUT = REPO / "cogym_lab" / "envs" / TASK / "sample"
#: Licence files: (name in the sample, where to look for it relative to the data directory).
LICENCES = (("LICENSE.TravelPlanner.txt", (f"{TASK}/LICENSE.TravelPlanner.txt",
                                           "LICENSE.TravelPlanner.txt")),
            ("LICENSE.collaborative-gym.txt", (f"{TASK}/LICENSE.collaborative-gym.txt",
                                               "LICENSE.collaborative-gym.txt")))

VALIDATION = "validation_with_hidden_profile.csv"
ACCOMMODATIONS = "database/accommodations/clean_accommodations_2022.csv"
ATTRACTIONS = "database/attractions/attractions.csv"
RESTAURANTS = "database/restaurants/clean_restaurant_2022.csv"
DISTANCES = "database/googleDistanceMatrix/distance.csv"
TRAIN = "database/train_ref_info.jsonl"
BACKGROUND = ("database/background/citySet.txt", "database/background/citySet_with_states.txt",
              "database/background/stateSet.txt")

_IN_CITY = re.compile(r"^(?:Attractions|Restaurants|Accommodations) in (.+)$")
_BETWEEN = re.compile(r"^(?:Flight|Self-driving|Taxi) from (.+?) to (.+?)(?: on \S+)?$")
_FLIGHT_KEY = re.compile(r"^Flight from (.+?) to (.+?) on \S+$")

csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


class _Tap:
    """The lines of a file, remembering those read since the last :meth:`take`: what lets a
    CSV record be copied exactly as written, quotes and line breaks inside cells included."""

    def __init__(self, handle: IO[str]) -> None:
        self._handle = handle
        self._taken: list[str] = []

    def __iter__(self) -> _Tap:
        return self

    def __next__(self) -> str:
        line = next(self._handle)
        self._taken.append(line)
        return line

    def take(self) -> str:
        text, self._taken = "".join(self._taken), []
        return text


def _records(path: Path) -> Generator[tuple[list[str], str], None, None]:
    """Each CSV record of ``path`` (the header first) with its text as written."""
    with open(path, newline="", encoding="utf-8") as handle:
        tap = _Tap(handle)
        for fields in csv.reader(tap):
            yield fields, tap.take()


def _ended(text: str) -> str:
    return text if text.endswith(("\n", "\r")) else text + "\n"


def _copy_rows(source: Path, target: Path, keep: Callable[[dict[str, str]], bool],
               limit: int | None = None) -> int:
    """The header and the rows ``keep`` accepts (at most ``limit``), copied as written."""
    records = _records(source)
    header, header_text = next(records)
    rows: list[str] = []
    for fields, text in records:
        if limit is not None and len(rows) == limit:
            break
        if keep(dict(zip(header, fields, strict=False))):
            rows.append(text)
    records.close()  # the file, when the limit stopped the reading early
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w", newline="", encoding="utf-8") as handle:
        handle.write("".join(_ended(text) for text in [header_text, *rows]))
    return len(rows)


def _cities(queries: list[dict[str, str]]) -> set[str]:
    """The cities the queries involve (normalized): origins, and every city their reference
    information names (the destination's cities when the destination is a state)."""
    cities = set()
    for query in queries:
        cities.add(normalize(query["org"]))
        for entry in ast.literal_eval(query["reference_information"]):
            description = " ".join(str(entry.get("Description", "")).split())
            named = _IN_CITY.match(description) or _BETWEEN.match(description)
            if named:
                cities.update(normalize(city) for city in named.groups())
    return cities


def _train_flights(source: Path, target: Path, cities: set[str]) -> int:
    """Of each training query, its flight tables between two of ``cities``."""
    lines, tables = [], 0
    with open(source, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            kept = {}
            for key, value in json.loads(line).items():
                route = _FLIGHT_KEY.match(key)
                if (route and isinstance(value, list)
                        and all(normalize(city) in cities for city in route.groups())):
                    kept[key] = value
            if kept:
                lines.append(json.dumps(kept) + "\n")
                tables += len(kept)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w", encoding="utf-8", newline="") as handle:
        handle.write("".join(lines))
    return tables


def _licence(data_dir: Path, candidates: tuple[str, ...]) -> Path:
    for relative in candidates:
        if (data_dir / relative).is_file():
            return data_dir / relative
    raise SystemExit(f"No licence file at {' or '.join(str(data_dir / c) for c in candidates)}: "
                     "the sample must carry the licence of what it holds.")


def _paragraph(text: str, indent: str = "") -> str:
    return textwrap.fill(" ".join(text.split()), width=99, initial_indent=indent,
                         subsequent_indent=" " * len(indent), break_on_hyphens=False,
                         break_long_words=False)


def _sample_md(counts: dict[str, int], cities: int) -> str:
    """The sample's ``SAMPLE.md``: what was taken, from where, under which licence."""
    blocks = [
        "# Travel Planning sample",
        _paragraph("""A small part of the Travel Planning data, shipped with cogym_lab so the task
            runs before any data is downloaded. It is read only when no data directory was chosen
            (no `--data-dir`, no session folder, no `COGYM_DATA`) and the default one lacks the
            full data. Numbers computed on it are not comparable with the papers'."""),
        _paragraph("""For the full data run `cogym-lab data download travel_planning` (`%cogym
            data download travel_planning` in a notebook); `cogym-lab data travel_planning` says
            what each file is and where it comes from."""),
        "## What was taken",
        _paragraph("""The files have the paths and formats of the full data's `travel_planning/`
            folder, with fewer records. CSV rows are copied unchanged, in their original order."""),
        "\n".join([
            _paragraph(f"""`{VALIDATION}`: the first {counts["queries"]} of the 102 validation
                queries (sample instance i is full instance i), from the Collaborative Gym
                release (https://github.com/SALT-NLP/collaborative-gym), MIT licence, see
                `LICENSE.collaborative-gym.txt`.""", "- "),
            _paragraph(f"""`database/`: from TravelPlanner's sandbox database
                (https://github.com/OSU-NLP-Group/TravelPlanner), MIT licence, see
                `LICENSE.TravelPlanner.txt`. Only the {cities} cities these queries involve (each
                query's origin and every city its reference information names) have records:
                {counts["accommodations"]} accommodations, {counts["attractions"]} attractions,
                {counts["restaurants"]} restaurants and {counts["distances"]} driving distances
                between two of them. The `background/` city and state lists are whole, so a city
                search lists cities that have no records here.""", "- "),
            _paragraph(f"""Flights: those of the sample queries' reference information, and
                from `train_ref_info.jsonl` only its flight tables between two of those cities
                ({counts["train_flight_tables"]} tables). The full data also serves the flights
                of the other validation queries, so a flight search on a date no sample query
                travels may find fewer flights here.""", "- "),
        ]),
        _paragraph("""Regenerate it from a full data directory with `python
            scripts/samples/build_travel_planning_sample.py --data-dir DIR`."""),
    ]
    return "\n\n".join(blocks) + "\n"


def build(data_dir: Path, out: Path) -> dict[str, int]:
    """Write the sample of ``data_dir``'s Travel Planning data into ``out`` (emptied first)."""
    source = data_dir / TASK
    declared = {str(PurePosixPath(item.path).relative_to(TASK)) for item in DATA_FILES}
    written = {VALIDATION, ACCOMMODATIONS, ATTRACTIONS, RESTAURANTS, DISTANCES, TRAIN,
               *BACKGROUND}
    if declared != written:  # data_files.py changed: this script must follow it
        raise SystemExit(f"The task declares {sorted(declared ^ written)} differently from "
                         "what this script writes; update the script.")
    missing = sorted(path for path in declared if not (source / path).is_file())
    if missing:
        raise SystemExit(f"{source} lacks {', '.join(missing)}.")
    licences = [(name, _licence(data_dir, candidates)) for name, candidates in LICENCES]

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    counts = {"queries": _copy_rows(source / VALIDATION, out / VALIDATION,
                                    lambda row: True, limit=QUERIES)}
    with open(out / VALIDATION, newline="", encoding="utf-8") as handle:
        cities = _cities(list(csv.DictReader(handle)))

    def in_cities(column: str) -> Callable[[dict[str, str]], bool]:
        return lambda row: normalize(row.get(column, "")) in cities

    counts["accommodations"] = _copy_rows(source / ACCOMMODATIONS, out / ACCOMMODATIONS,
                                          in_cities("city"))
    counts["attractions"] = _copy_rows(source / ATTRACTIONS, out / ATTRACTIONS,
                                       in_cities("City"))
    counts["restaurants"] = _copy_rows(source / RESTAURANTS, out / RESTAURANTS,
                                       in_cities("City"))
    counts["distances"] = _copy_rows(
        source / DISTANCES, out / DISTANCES,
        lambda row: in_cities("origin")(row) and in_cities("destination")(row))
    for relative in BACKGROUND:
        (out / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / relative, out / relative)
    counts["train_flight_tables"] = _train_flights(source / TRAIN, out / TRAIN, cities)
    for name, licence in licences:
        shutil.copyfile(licence, out / name)
    (out / "SAMPLE.md").write_text(_sample_md(counts, len(cities)), encoding="utf-8")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True,
                        help="a data directory holding travel_planning/ (the full data)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="the sample folder to (re)write (default: the package's)")
    args = parser.parse_args()
    counts = build(args.data_dir.expanduser().resolve(), args.out.expanduser().resolve())
    size = sum(path.stat().st_size for path in args.out.rglob("*") if path.is_file())
    print(", ".join(f"{count} {what}" for what, count in counts.items())
          + f"; {size:,} bytes in {args.out}")


if __name__ == "__main__":
    main()
