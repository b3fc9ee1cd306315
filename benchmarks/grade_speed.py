"""Travel plan grading speed: parse + grade one plan, and loading the database.

Run from the repository root (the data directory is ``--data-dir``, else ``$COGYM_DATA``, else
the user cache; the shared datasets folder next to the repository works)::

    python benchmarks/grade_speed.py [--data-dir DIR] [--repeats N]

It prints timings and checks nothing. What it measures:

1. **Database load.** ``TravelDatabase.load`` from the CSV files, cold (its cache cleared
   first), and ``load_instances`` for the 102 validation queries.
2. **Parse + grade.** For each of the 102 instances a plausible plan is generated from the
   instance's database records: the destination city (or the first cities of the destination
   state that have places to stay and eat), a flight on every leg when every leg has one on its
   date, else self-driving (a taxi when self-driving is ruled out), distinct restaurants and
   attractions of the day's city, and the cheapest stay that fits the room type, the house rule
   and the nights. The plan's text is then parsed and graded (``grade_plan`` on the text) ``N``
   times; every call is one sample. Mean, p50, p99 and max are over all samples. The generated
   plans are not meant to pass every check (the budget often fails); their mean score is shown
   only to say the grader looked at real plans.
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import sys
import time
from collections.abc import Sequence

from cogym_lab.envs.travel_planning.database import TravelDatabase
from cogym_lab.envs.travel_planning.grader import grade_plan
from cogym_lab.envs.travel_planning.instances import load_instances
from cogym_lab.envs.travel_planning.plan import DayPlan, format_plan
from cogym_lab.envs.travel_planning.records import Accommodation, TravelInstance

ROOM_TYPES = {"entire room": "Entire home/apt", "private room": "Private room",
              "shared room": "Shared room"}


def _room_ok(stay: Accommodation, asked: str | None) -> bool:
    if not asked:
        return True
    asked = asked.lower()
    if asked.startswith("not "):
        return stay.room_type != ROOM_TYPES.get(asked[4:])
    return stay.room_type == ROOM_TYPES.get(asked)


def _stay(db: TravelDatabase, task: TravelInstance, city: str, nights: int) -> str:
    rule = task.local_constraint.get("house rule")
    fits = [a for a in db.accommodations(city)
            if a.minimum_nights <= nights and _room_ok(a, task.local_constraint.get("room type"))
            and not (rule and f"no {rule}" in a.house_rules.lower())]
    pool = fits or db.accommodations(city)
    if not pool:
        return "-"
    best = min(pool, key=lambda a: a.price * math.ceil(task.people / max(a.maximum_occupancy, 1)))
    return f"{best.name}, {city}"


def _cities(db: TravelDatabase, task: TravelInstance) -> list[str]:
    if task.visiting_city_number <= 1:
        return [task.destination]
    usable = [c for c in db.cities(task.destination)
              if db.accommodations(c) and db.restaurants(c) and c != task.origin]
    return usable[:task.visiting_city_number] or [task.destination]


def make_plan(db: TravelDatabase, task: TravelInstance) -> str:
    """A plausible plan for ``task`` built from database records."""
    cities = _cities(db, task)
    k = len(cities)
    # travel days: day 1 into the first city, then every (days - 1) // k days, and the last day
    per_city = max((task.days - 1) // k, 1)
    arrival = {1 + i * per_city: city for i, city in enumerate(cities)}
    legs: dict[int, tuple[str, str]] = {}
    here = task.origin
    where: list[str] = []
    for day in range(1, task.days + 1):
        if day in arrival:
            legs[day] = (here, arrival[day])
            here = arrival[day]
        elif day == task.days:
            legs[day] = (here, task.origin)
        where.append(here)
    dates = {day: task.dates[day - 1] for day in legs if day - 1 < len(task.dates)}
    flights = {day: db.flights(a, b, dates.get(day, "")) for day, (a, b) in legs.items()}
    banned = (task.local_constraint.get("transportation") or "").lower()
    if all(flights.values()) and "flight" not in banned:
        mode = "flight"
    elif "self-driving" not in banned:
        mode = "self-driving"
    else:
        mode = "taxi"

    restaurants = {c: [r.name for r in db.restaurants(c)] for c in cities}
    attractions = {c: [a.name for a in db.attractions(c)] for c in cities}
    days: list[DayPlan] = []
    for day in range(1, task.days + 1):
        city = where[day - 1]  # where the day is spent (a day home is spent leaving)
        if day in legs:
            a, b = legs[day]
            current = f"from {a} to {b}"
            if mode == "flight":
                f = flights[day][0]
                transport = (f"Flight Number: {f.number}, from {a} to {b}, "
                             f"Departure Time: {f.departure}, Arrival Time: {f.arrival}")
            else:
                route = db.route(a, b, mode)
                label = "Self-driving" if mode == "self-driving" else "Taxi"
                transport = f"{label}, from {a} to {b}" + (
                    f", Duration: {route.duration}, Distance: {route.distance_km:g} km, "
                    f"Cost: {route.cost}" if route else "")
        else:
            current, transport = city, "-"
        meals = [f"{restaurants[city].pop(0)}, {city}" if restaurants[city] else "-"
                 for _ in range(3)]
        sights = [f"{attractions[city].pop(0)}, {city}"] if attractions[city] else []
        last = day == task.days
        nights = sum(1 for d in range(day, task.days) if where[d - 1] == where[day - 1])
        stay = "-" if last else _stay(db, task, where[day - 1], max(nights, 1))
        if days and not last and days[-1].accommodation != "-" \
                and where[day - 2] == where[day - 1]:
            stay = days[-1].accommodation  # stay on in the same place
        days.append(DayPlan(day=day, current_city=current, transportation=transport,
                            breakfast=meals[0], attractions=sights, lunch=meals[1],
                            dinner=meals[2], accommodation=stay))
    return format_plan(days)


def percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.3f} ms"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None, help="the data directory (default: "
                        "$COGYM_DATA, else the user cache)")
    parser.add_argument("--repeats", type=int, default=20, help="grades per plan (default 20)")
    args = parser.parse_args(argv)

    print(f"Python {platform.python_version()} on {platform.machine()}, "
          f"{platform.system()}")
    TravelDatabase.clear_cache()
    started = time.perf_counter()
    db = TravelDatabase.load(args.data_dir)
    load_db = time.perf_counter() - started
    started = time.perf_counter()
    tasks = load_instances(args.data_dir)
    load_tasks = time.perf_counter() - started
    print(f"database load (cold):  {ms(load_db)}   ({db.flight_count} flights)")
    print(f"instances load:        {ms(load_tasks)}   ({len(tasks)} instances)")

    plans = [(task, make_plan(db, task)) for task in tasks]
    samples: list[float] = []
    scores: list[float] = []
    for task, text in plans:
        grade_plan(text, task, db)  # warm-up
        for _ in range(args.repeats):
            started = time.perf_counter()
            grade = grade_plan(text, task, db)
            samples.append(time.perf_counter() - started)
        scores.append(grade.performance)
    days = sum(t.days for t, _ in plans)
    print(f"parse + grade, {len(plans)} plans ({days} days) x {args.repeats} repeats "
          f"= {len(samples)} samples:")
    print(f"  mean {ms(statistics.fmean(samples))}")
    print(f"  p50  {ms(percentile(samples, 0.50))}")
    print(f"  p99  {ms(percentile(samples, 0.99))}")
    print(f"  max  {ms(max(samples))}")
    print(f"mean performance of the generated plans: {statistics.fmean(scores):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
