"""The travel plan form, its parser, the LM fallback and the grader, on real instances.

Every plan here is written by hand from real database records. Each check gets a variant of a
valid plan that breaks exactly that check, and the grade must fail exactly that check, in both
grading modes. (Agreement with TravelPlanner's official verdicts and each correction of the
corrected mode: tests/envs/travel_planning/test_travel_official.py.)
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cogym_lab.envs.travel_planning.database import TravelDatabase
from cogym_lab.envs.travel_planning.grader import (
    COMMONSENSE,
    HARD,
    Grade,
    grade_plan,
    grade_submission,
    grade_text,
)
from cogym_lab.envs.travel_planning.instances import load_instances
from cogym_lab.envs.travel_planning.lm_parser import parse_with_lm
from cogym_lab.envs.travel_planning.plan import (
    DayPlan,
    cities_of,
    flight_number,
    format_plan,
    is_structured,
    parse_plan,
    split_name_city,
    transport_mode,
    transport_route,
)
from cogym_lab.envs.travel_planning.records import TravelInstance
from cogym_lab.envs.travel_planning.submission import SubmissionError, to_submission
from cogym_lab.lm import LMConfig, LMError, make_lm
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.support.data import datasets_dir, use_shared_data  # noqa: F401 (fixtures)

# -- instance 0: Salt Lake City -> Burbank, 3 days, 7 people, $7,600, entire rooms -------------

BURBANK = """\
Day 1:
Current City: from Salt Lake City to Burbank
Transportation: Flight Number: F3846241, from Salt Lake City to Burbank, Departure Time: 08:08, Arrival Time: 09:03
Breakfast: -
Attraction: Gordon R Howard Museum, Burbank
Lunch: KB's Kulfi & Icecream, Burbank
Dinner: Hard Rock Cafe, Burbank
Accommodation: Pleasant 1 bedroom apartment in Harlem Brownstone, Burbank

Day 2:
Current City: Burbank
Transportation: -
Breakfast: Caffe Tonino, Burbank
Attraction: Warner Bros. Studio Tour Hollywood, Burbank; Burbank Aviation Museum, Burbank
Lunch: Tpot, Burbank
Dinner: Smaaash, Burbank
Accommodation: Pleasant 1 bedroom apartment in Harlem Brownstone, Burbank

Day 3:
Current City: from Burbank to Salt Lake City
Transportation: Flight Number: F3977100, from Burbank to Salt Lake City, Departure Time: 09:29, Arrival Time: 12:16
Breakfast: Dee The Baker, Burbank
Attraction: Johnny Carson Park, Burbank
Lunch: Chawnsan Chef, Burbank
Dinner: -
Accommodation: -
"""
# flights (157 + 181) x 7 = 2,366; meals (10+33+28+34+39+18+20) x 7 = 1,274;
# two nights x ceil(7/5) = 2 units x $500 = 2,000; total 5,640 <= 7,600.
BURBANK_TOTAL = 5640

PLEASANT = "Accommodation: Pleasant 1 bedroom apartment in Harlem Brownstone, Burbank"
DAY1_FLIGHT = ("Transportation: Flight Number: F3846241, from Salt Lake City to Burbank, "
               "Departure Time: 08:08, Arrival Time: 09:03")
DAY3_FLIGHT = ("Transportation: Flight Number: F3977100, from Burbank to Salt Lake City, "
               "Departure Time: 09:29, Arrival Time: 12:16")
DAY3_DRIVE = ("Transportation: Self-driving, from Burbank to Salt Lake City, Duration: 9 hours "
              "55 mins, Distance: 1,112 km, Cost: 55")
DAY2_SIGHTS = ("Attraction: Warner Bros. Studio Tour Hollywood, Burbank; Burbank Aviation Museum, "
               "Burbank")

# -- instance 61: El Paso -> Phoenix, 3 days, 2 people, $1,900; must allow visitors; American,
#    French, Mexican and Indian food; no flight ---------------------------------------------

PHOENIX = """\
Day 1:
Current City: from El Paso to Phoenix
Transportation: Self-driving, from El Paso to Phoenix, Duration: 6 hours 15 mins, Distance: 692 km, Cost: 34
Breakfast: -
Attraction: Phoenix Zoo, Phoenix; Heard Museum, Phoenix
Lunch: Vero Gusto, Phoenix
Dinner: Doughlicious, Phoenix
Accommodation: Twin Cabin with a Window One, Phoenix

Day 2:
Current City: Phoenix
Transportation: -
Breakfast: Spooky Sky, Phoenix
Attraction: Desert Botanical Garden, Phoenix
Lunch: Enigma Lounge, Phoenix
Dinner: De Bone Chicken, Phoenix
Accommodation: Twin Cabin with a Window One, Phoenix

Day 3:
Current City: from Phoenix to El Paso
Transportation: Self-driving, from Phoenix to El Paso, Duration: 6 hours 17 mins, Distance: 694 km, Cost: 34
Breakfast: Cafe Amigo, Phoenix
Attraction: Papago Park, Phoenix
Lunch: Mama Loca, Phoenix
Dinner: -
Accommodation: -
"""
# one car: 34 + 34; meals x 2 people; the cabin sleeps 1: two rooms x $234 for two nights
PHOENIX_TOTAL = 68 + (13 + 41 + 15 + 50 + 59 + 24 + 27) * 2 + 2 * 2 * 234

PHX_DRIVE_OUT = ("Transportation: Self-driving, from El Paso to Phoenix, Duration: 6 hours 15 "
                 "mins, Distance: 692 km, Cost: 34")
PHX_DRIVE_BACK = ("Transportation: Self-driving, from Phoenix to El Paso, Duration: 6 hours 17 "
                  "mins, Distance: 694 km, Cost: 34")
PHX_FLIGHT_OUT = ("Transportation: Flight Number: F3968528, from El Paso to Phoenix, Departure "
                  "Time: 14:51, Arrival Time: 16:27")
PHX_FLIGHT_BACK = ("Transportation: Flight Number: F3803743, from Phoenix to El Paso, Departure "
                   "Time: 09:45, Arrival Time: 11:01")

# -- instance 26: Monterey -> 3 cities of Texas, 7 days, 4 people, $15,600; French and Chinese -

TEXAS = """\
Day 1:
Current City: from Monterey to El Paso
Transportation: Self-driving, from Monterey to El Paso, Duration: 16 hours 41 mins, Distance: 1,801 km, Cost: 90
Breakfast: -
Attraction: El Paso Zoo and Botanical Gardens, El Paso
Lunch: Shi Cafe, El Paso
Dinner: The Celiac Kitchen, El Paso
Accommodation: Chic Designer Home Guest Studio, El Paso

Day 2:
Current City: El Paso
Transportation: -
Breakfast: SFC, El Paso
Attraction: El Paso Museum of Art, El Paso; San Jacinto Plaza, El Paso
Lunch: Los Beto's, El Paso
Dinner: Garden Chef, El Paso
Accommodation: Chic Designer Home Guest Studio, El Paso

Day 3:
Current City: from El Paso to Lubbock
Transportation: Self-driving, from El Paso to Lubbock, Duration: 5 hours 27 mins, Distance: 560 km, Cost: 28
Breakfast: Raju Chat Palace, El Paso
Attraction: Buddy Holly Center, Lubbock
Lunch: Handi, Lubbock
Dinner: Kapoor's Sanjha Chulha, Lubbock
Accommodation: Cozy Clean Small Apartment 2 Bedrooms Nyc, Lubbock

Day 4:
Current City: Lubbock
Transportation: -
Breakfast: Punjabi Chaap Corner, Lubbock
Attraction: National Ranching Heritage Center, Lubbock
Lunch: Mosaic - Country Inn & Suites By Carlson, Lubbock
Dinner: RV Restaurant, Lubbock
Accommodation: Cozy Clean Small Apartment 2 Bedrooms Nyc, Lubbock

Day 5:
Current City: from Lubbock to Amarillo
Transportation: Self-driving, from Lubbock to Amarillo, Duration: 1 hour 48 mins, Distance: 197 km, Cost: 9
Breakfast: Grand Barbeque Buffet Restaurant, Lubbock
Attraction: Cadillac Ranch, Amarillo
Lunch: Wood Box Cafe, Amarillo
Dinner: Lucknow Wale Kwality Kabab, Amarillo
Accommodation: Spacious retreat, Amarillo

Day 6:
Current City: Amarillo
Transportation: -
Breakfast: Cafe Coffee Day, Amarillo
Attraction: Amarillo Zoo, Amarillo; Texas Air & Space Museum, Amarillo
Lunch: Burger Point, Amarillo
Dinner: Sigree Global Grill, Amarillo
Accommodation: Spacious retreat, Amarillo

Day 7:
Current City: from Amarillo to Monterey
Transportation: Self-driving, from Amarillo to Monterey, Duration: 19 hours 21 mins, Distance: 2,104 km, Cost: 105
Breakfast: Sugar Daddy Bakers, Amarillo
Attraction: Amarillo Botanical Gardens, Amarillo
Lunch: Zareen's Dastarkhwan, Amarillo
Dinner: -
Accommodation: -
"""

# El Paso, then Lubbock, then back to El Paso: a city left earlier is visited again, and only
# two distinct cities of Texas are visited. Everything else is as valid as TEXAS.
TEXAS_REVISIT = """\
Day 1:
Current City: from Monterey to El Paso
Transportation: Self-driving, from Monterey to El Paso
Breakfast: -
Attraction: El Paso Zoo and Botanical Gardens, El Paso
Lunch: Shi Cafe, El Paso
Dinner: The Celiac Kitchen, El Paso
Accommodation: Chic Designer Home Guest Studio, El Paso

Day 2:
Current City: El Paso
Transportation: -
Breakfast: SFC, El Paso
Attraction: El Paso Museum of Art, El Paso
Lunch: Los Beto's, El Paso
Dinner: Garden Chef, El Paso
Accommodation: Chic Designer Home Guest Studio, El Paso

Day 3:
Current City: from El Paso to Lubbock
Transportation: Self-driving, from El Paso to Lubbock
Breakfast: Raju Chat Palace, El Paso
Attraction: Buddy Holly Center, Lubbock
Lunch: Handi, Lubbock
Dinner: Kapoor's Sanjha Chulha, Lubbock
Accommodation: Cozy Clean Small Apartment 2 Bedrooms Nyc, Lubbock

Day 4:
Current City: Lubbock
Transportation: -
Breakfast: Punjabi Chaap Corner, Lubbock
Attraction: National Ranching Heritage Center, Lubbock
Lunch: Mosaic - Country Inn & Suites By Carlson, Lubbock
Dinner: RV Restaurant, Lubbock
Accommodation: Cozy Clean Small Apartment 2 Bedrooms Nyc, Lubbock

Day 5:
Current City: from Lubbock to El Paso
Transportation: Self-driving, from Lubbock to El Paso
Breakfast: Grand Barbeque Buffet Restaurant, Lubbock
Attraction: San Jacinto Plaza, El Paso
Lunch: Panther Restaurant, El Paso
Dinner: Food Destination, El Paso
Accommodation: Chic Designer Home Guest Studio, El Paso

Day 6:
Current City: El Paso
Transportation: -
Breakfast: Pind Balluchi, El Paso
Attraction: Casa de Azucar, El Paso
Lunch: Super Cake Shop, El Paso
Dinner: The League Restaurant, El Paso
Accommodation: Chic Designer Home Guest Studio, El Paso

Day 7:
Current City: from El Paso to Monterey
Transportation: Self-driving, from El Paso to Monterey
Breakfast: The Big Buddha Grill, El Paso
Attraction: Franklin Mountains State Park, El Paso
Lunch: Soni Bhojnalaya, El Paso
Dinner: -
Accommodation: -
"""


def variant(plan: str, *edits: tuple[str, str]) -> str:
    """``plan`` with each ``(old, new)`` line edit applied; ``old`` must be there."""
    for old, new in edits:
        assert old in plan, f"not in the plan: {old!r}"
        plan = plan.replace(old, new)
    return plan


# -- fixtures --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def db(datasets_dir: Path) -> TravelDatabase:  # noqa: F811
    return TravelDatabase.load(datasets_dir)


@pytest.fixture(scope="module")
def instances(datasets_dir: Path) -> list[TravelInstance]:  # noqa: F811
    return load_instances(datasets_dir)


@pytest.fixture(scope="module")
def burbank(instances: list[TravelInstance]) -> TravelInstance:
    task = instances[0]
    assert (task.origin, task.destination, task.days, task.people, task.budget) == \
        ("Salt Lake City", "Burbank", 3, 7, 7600)
    assert task.local_constraint["room type"] == "entire room"
    return task


@pytest.fixture(scope="module")
def phoenix(instances: list[TravelInstance]) -> TravelInstance:
    task = instances[61]
    assert (task.origin, task.destination, task.days, task.people, task.budget) == \
        ("El Paso", "Phoenix", 3, 2, 1900)
    assert task.local_constraint["house rule"] == "visitors"
    assert task.local_constraint["transportation"] == "no flight"
    assert task.local_constraint["room type"] is None
    return task


@pytest.fixture(scope="module")
def texas(instances: list[TravelInstance]) -> TravelInstance:
    task = instances[26]
    assert (task.origin, task.destination, task.days, task.visiting_city_number) == \
        ("Monterey", "Texas", 7, 3)
    return task


def assert_fails_exactly(grade: Grade, key: str) -> None:
    failed = {name: v.reason for name, v in (*grade.commonsense.items(), *grade.hard.items())
              if v.passed is False}
    assert set(failed) == {key}, failed


# -- the plan form ---------------------------------------------------------------------------

def test_parse_reads_every_field() -> None:
    parsed = parse_plan(BURBANK)
    assert parsed.problems == []
    assert [d.day for d in parsed.days] == [1, 2, 3]
    day1, day2, day3 = parsed.days
    assert day1.cities == ["Salt Lake City", "Burbank"] and day1.is_travel_day
    assert day1.flight_number == "F3846241" and day1.transport_mode == "flight"
    assert day1.transport_route == ("Salt Lake City", "Burbank")
    assert day1.breakfast == "-" and day1.meals()[0] == ("lunch", "KB's Kulfi & Icecream",
                                                          "Burbank")
    assert day2.cities == ["Burbank"] and not day2.is_travel_day
    assert day2.transport_mode is None and day2.flight_number is None
    assert day2.attractions == ["Warner Bros. Studio Tour Hollywood, Burbank",
                                "Burbank Aviation Museum, Burbank"]
    assert day2.accommodation_entry() == ("Pleasant 1 bedroom apartment in Harlem Brownstone",
                                          "Burbank")
    assert day3.accommodation == "-" and day3.accommodation_entry() is None
    assert day3.end_city == "Salt Lake City"


def test_helpers() -> None:
    assert split_name_city("Cozy Home, Great Location, Burbank") == \
        ("Cozy Home, Great Location", "Burbank")
    assert split_name_city("Tpot") == ("Tpot", None)
    assert cities_of("from Salt Lake City to Burbank") == ["Salt Lake City", "Burbank"]
    assert cities_of("FROM  El Paso TO Phoenix") == ["El Paso", "Phoenix"]
    assert cities_of("Burbank") == ["Burbank"] and cities_of("-") == []
    assert flight_number("Flight Number: f3846241, from A to B") == "F3846241"
    assert flight_number("Self-driving, from A to B") is None
    assert transport_mode("Flight Number: F1234567, from A to B") == "flight"
    assert transport_mode("Self-driving, from A to B, Duration: 1 hour") == "self-driving"
    assert transport_mode("self driving from A to B") == "self-driving"
    assert transport_mode("Taxi, from A to B, Cost: 800") == "taxi"
    assert transport_mode("-") is None
    assert transport_route("Taxi, from Lubbock to Amarillo, Duration: 1 hour") == \
        ("Lubbock", "Amarillo")


def test_format_round_trips() -> None:
    days = parse_plan(BURBANK).days
    text = format_plan(days)
    assert text == BURBANK  # the canonical form is the form this file writes by hand
    assert parse_plan(text).days == days
    made = [DayPlan(day=1, current_city="from A to B", transportation="Taxi, from A to B",
                    attractions=["X, B", "Y, B"], dinner="Z, Q, B", accommodation="H, B"),
            DayPlan(day=2, current_city="B")]
    assert parse_plan(format_plan(made)).days == made
    assert format_plan([]) == ""


_WORDS = st.sampled_from(["Cozy", "Home", "*Loft", "Great", "Location", "St.", "Bob's",
                          "Caf\u00e9", "&", "2BR", "Burbank", "El", "Paso", "NYC*", "-", "(A)"])
_NAME = st.lists(_WORDS, min_size=1, max_size=5).map(" ".join).filter(
    lambda name: name not in ("-", "&") and not name.startswith("- "))
_ENTRY = st.tuples(st.lists(_NAME, min_size=1, max_size=2).map(", ".join), _NAME).map(
    ", ".join)
_SLOT = st.one_of(st.just("-"), _ENTRY)


@st.composite
def _days(draw: st.DrawFn) -> list[DayPlan]:
    days = []
    for n in range(1, draw(st.integers(1, 4)) + 1):
        a, b = draw(_NAME), draw(_NAME)
        days.append(DayPlan(
            day=n, current_city=draw(st.sampled_from([a, f"from {a} to {b}"])),
            transportation=draw(st.sampled_from(
                ["-", f"Flight Number: F{n}234567, from {a} to {b}, Departure Time: 08:00",
                 f"Self-driving, from {a} to {b}", f"Taxi, from {a} to {b}, Cost: 12"])),
            breakfast=draw(_SLOT), attractions=draw(st.lists(_ENTRY, max_size=3)),
            lunch=draw(_SLOT), dinner=draw(_SLOT), accommodation=draw(_SLOT)))
    return days


@settings(max_examples=150, deadline=None)
@given(_days())
def test_format_parse_round_trip_property(days: list[DayPlan]) -> None:
    text = format_plan(days)
    parsed = parse_plan(text)
    assert parsed.problems == []
    assert parsed.days == days
    assert format_plan(parsed.days) == text


def test_names_that_look_like_markdown(db: TravelDatabase, burbank: TravelInstance) -> None:
    # a real listing whose name starts with "*": the parser must keep it
    name = "*OH SO ZEN*~ Chill Bushwick Yoga Spot!!"
    assert db.accommodation(name, "Buffalo") is not None
    for line in (f"Accommodation: {name}, Buffalo", f"- **Accommodation:** {name}, Buffalo"):
        day = parse_plan(f"Day 1:\nCurrent City: Buffalo\n{line}\n").days[0]
        assert day.accommodation_entry() == (name, "Buffalo")
    # "**" at the start of a value reads as bold, but the grader still finds the listing
    # "**Cozy Private Room(B)" in its city: the name read is a substring of the stored one. The
    # listing has no house rules, so only the corrected table has it.
    text = "Day 1:\nCurrent City: Evansville\nAccommodation: **Cozy Private Room(B), Evansville\n"
    assert parse_plan(text).days[0].accommodation == "Cozy Private Room(B), Evansville"
    official, corrected = (grade_plan(text, burbank, db, mode=mode).commonsense[
        "is_valid_information_in_sandbox"] for mode in ("official", "corrected"))
    assert corrected.passed is True, corrected.reason
    assert official.passed is False and "no listing in 'Evansville'" in official.reason
    assert parse_plan("Day 1:\n**Lunch**: **Tpot, Burbank**\n").days[0].lunch == "Tpot, Burbank"
    assert parse_plan("Day 1:\nLunch: `Tpot, Burbank`\n").days[0].lunch == "Tpot, Burbank"


def test_tolerant_parsing() -> None:
    markdown = """Here is the plan we agreed on:

# Trip to Burbank

## **Day 1** (March 12)
- **Current City:** from Salt Lake City to Burbank
- **Transportation**: Flight Number: F3846241, from Salt Lake City to Burbank, Departure Time: 08:08, Arrival Time: 09:03
- Breakfast: -
- **Attractions:** Gordon R Howard Museum, Burbank;
- lunch:   KB's Kulfi & Icecream,   Burbank
- DINNER: Hard Rock Cafe, Burbank
- Accommodation: Pleasant 1 bedroom apartment in Harlem Brownstone, Burbank

**Day 2:**
* current city: Burbank
* transportation: -
* breakfast: Caffe Tonino, Burbank
* attractions: Warner Bros. Studio Tour Hollywood, Burbank;Burbank Aviation Museum, Burbank
* lunch: Tpot, Burbank
* dinner: Smaaash, Burbank
* accommodation: Pleasant 1 bedroom apartment in Harlem Brownstone, Burbank

### Day 3
1. Current City: from Burbank to Salt Lake City
2. Transportation: Flight Number: F3977100, from Burbank to Salt Lake City, Departure Time: 09:29, Arrival Time: 12:16

3. Breakfast: Dee The Baker, Burbank
4. Attraction: Johnny Carson Park, Burbank
5. Lunch: Chawnsan Chef, Burbank
6. Dinner: None
7. Accommodation: -
"""
    parsed = parse_plan(markdown)
    assert parsed.problems == []
    assert parsed.days == parse_plan(BURBANK).days


def test_parse_reports_what_it_cannot_read() -> None:
    parsed = parse_plan("Day 1:\nCurrent City: Burbank\nLunch: Tpot, Burbank\nWe could go "
                        "shopping\n\nDay 2: a lazy day\n\nDay 4:\nCurrent City: Burbank\n"
                        "Lunch: X, Burbank\nLunch: Y, Burbank\n")
    assert [d.day for d in parsed.days] == [1, 4]
    text = "\n".join(parsed.problems)
    assert "could not read the line 'We could go shopping'" in text
    assert "Day 2 (line 6) has none of the fields" in text
    assert "Day 4: Lunch is given twice" in text and parsed.days[1].lunch == "X, Burbank"
    assert "numbered [1, 4]" in text
    for junk in (None, "", "   ", "\x00\x01 Day", "Day x:", "Lunch: Tpot, Burbank", 12):
        assert parse_plan(junk).days == []  # type: ignore[arg-type]


def test_is_structured() -> None:
    assert is_structured(BURBANK)
    assert not is_structured("On day 1 we fly to Burbank and eat at Tpot.")
    assert not is_structured("Day 1: fly to Burbank. Day 2: museums.")
    assert not is_structured("")


def test_names_keep_their_inner_spaces() -> None:
    # stored names have double spaces; only the ends and the comma before the city are tidied
    day = parse_plan("Day 1:\nLunch:  A  B ,   Burbank \nAttraction: X  Y,Burbank;  Z, Burbank\n"
                     "Current City: from  Salt  Lake City to Burbank\n").days[0]
    assert day.lunch == "A  B, Burbank"
    assert day.attractions == ["X  Y, Burbank", "Z, Burbank"]
    assert day.cities == ["Salt Lake City", "Burbank"]  # cities are collapsed
    assert split_name_city("A  B ,  Salt  Lake City") == ("A  B", "Salt Lake City")
    assert parse_plan(format_plan([day])).days == [day]


def test_the_editor_days_become_a_submission() -> None:
    day1, day2, day3 = to_submission(parse_plan(BURBANK).days)
    assert day1 == {
        "days": 1, "current_city": "from Salt Lake City to Burbank",
        "transportation": DAY1_FLIGHT.removeprefix("Transportation: "), "breakfast": "-",
        "attraction": "Gordon R Howard Museum, Burbank;", "lunch": "KB's Kulfi & Icecream, Burbank",
        "dinner": "Hard Rock Cafe, Burbank",
        "accommodation": "Pleasant 1 bedroom apartment in Harlem Brownstone, Burbank"}
    assert day2["attraction"] == ("Warner Bros. Studio Tour Hollywood, Burbank;"
                                  "Burbank Aviation Museum, Burbank;")
    assert day2["current_city"] == "Burbank" and day3["accommodation"] == "-"
    # a transportation the official checks could not read gets the template's label
    loose = parse_plan("Day 1:\nCurrent City: Salt Lake City -> Burbank\n"
                       "Transportation: flight f3846241 from Salt Lake City to Burbank\n"
                       "Day 2:\nCurrent City: Burbank\nTransportation: self driving, from A to B\n"
                       "Day 3:\nCurrent City: B\nTransportation: Cab, from B to C\n").days
    first, second, third = to_submission(loose)
    assert first["current_city"] == "from Salt Lake City to Burbank"
    assert first["transportation"].startswith("Flight Number: F3846241, flight f3846241")
    assert second["transportation"] == "Self-driving, self driving, from A to B"
    assert third["transportation"] == "Taxi, Cab, from B to C"


# -- valid plans pass everything, in both modes -------------------------------------------------

MODES = ("official", "corrected")


@pytest.mark.parametrize("mode", MODES)
def test_valid_burbank_plan(db: TravelDatabase, burbank: TravelInstance, mode: str) -> None:
    grade = grade_plan(BURBANK, burbank, db, mode=mode)
    assert grade.failed == set(), grade.to_dict()
    assert grade.mode == mode and grade.errors == {}
    assert grade.performance == 1.0 and grade.delivered and grade.parser == "structured"
    assert grade.hard_evaluated and grade.final_pass
    assert grade.total_cost == BURBANK_TOTAL
    budget = grade.hard["valid_cost"].reason
    assert "$5,640" in budget and "$7,600" in budget and "within" in budget
    assert grade.hard["valid_room_type"].passed is True
    for key in ("valid_room_rule", "valid_cuisine", "valid_transportation"):
        assert grade.hard[key].passed is None
    assert list(grade.commonsense) == list(COMMONSENSE) and list(grade.hard) == list(HARD)
    assert grade.commonsense_pass_rate == 1.0 and grade.hard_pass_rate == 1.0


@pytest.mark.parametrize("mode", MODES)
def test_valid_phoenix_plan(db: TravelDatabase, phoenix: TravelInstance, mode: str) -> None:
    grade = grade_plan(PHOENIX, phoenix, db, mode=mode)
    assert grade.failed == set(), grade.to_dict()
    assert grade.performance == 1.0
    assert grade.total_cost == PHOENIX_TOTAL
    assert [k for k, v in grade.hard.items() if v.passed] == \
        ["valid_cuisine", "valid_room_rule", "valid_transportation", "valid_cost"]
    assert grade.hard["valid_room_type"].passed is None


@pytest.mark.parametrize("mode", MODES)
def test_valid_texas_plan(db: TravelDatabase, texas: TravelInstance, mode: str) -> None:
    grade = grade_plan(TEXAS, texas, db, mode=mode)
    assert grade.failed == set(), grade.to_dict()
    assert grade.performance == 1.0
    assert "Monterey -> El Paso -> Lubbock -> Amarillo -> Monterey" in \
        grade.commonsense["is_reasonable_visiting_city"].reason
    assert grade.hard["valid_cuisine"].passed is True


def test_every_form_of_a_plan_grades_alike(db: TravelDatabase, burbank: TravelInstance) -> None:
    from_text = grade_plan(BURBANK, burbank, db)
    from_days = grade_plan(parse_plan(BURBANK).days, burbank, db, parsed_with="lm")
    submission = to_submission(parse_plan(BURBANK).days)
    from_json = grade_plan(submission, burbank, db)
    assert from_days.parser == "lm" and from_json.parser == "json"
    assert from_days.to_dict() | {"parser": "structured"} == from_text.to_dict()
    assert from_json.to_dict() | {"parser": "structured"} == from_text.to_dict()
    assert grade_submission(submission, burbank, db).to_dict() == from_json.to_dict()
    data = json.loads(json.dumps(from_text.to_dict()))
    assert data["performance"] == 1.0 and data["hard"]["valid_cuisine"] == {
        "passed": None, "reason": "No cuisine was asked for."}
    assert from_text.plan == submission
    with pytest.raises(SubmissionError, match="day 2: 'lunch' must be a string, not null"):
        grade_submission([{}, {"lunch": None}], burbank, db)


def test_scores_are_flat_and_readable(db: TravelDatabase, burbank: TravelInstance) -> None:
    scores = grade_plan(variant(BURBANK, *BURBANK_BREAKS["valid_cost"][0]), burbank,
                        db).scores()
    assert scores["valid_cost"] == 0.0 and scores["valid_room_type"] == 1.0
    assert "valid_cuisine" not in scores  # not asked: no verdict
    assert scores["is_not_absent"] == 1.0 and scores["hard_evaluated"] == 1.0
    assert scores["commonsense_pass"] == 1.0 and scores["hard_pass"] == 0.0
    assert scores["final_pass"] == 0.0
    assert scores["hard_pass_rate"] == 0.5 and scores["performance"] == 0.75
    assert all(isinstance(v, float) and 0 <= v <= 1 for v in scores.values())


# -- one broken check at a time ----------------------------------------------------------------

BURBANK_BREAKS = {
    "is_valid_restaurants": [(("Dinner: Smaaash, Burbank", "Dinner: Hard Rock Cafe, Burbank"),)],
    "is_valid_attractions": [(("Attraction: Johnny Carson Park, Burbank",
                               "Attraction: Gordon R Howard Museum, Burbank"),)],
    "is_valid_accommodation": [
        # BROOKLYN 1 BEDROOM asks for 3 nights; the plan names it on 2 days
        ((PLEASANT, "Accommodation: BROOKLYN 1 BEDROOM, Burbank"),),
    ],
    "is_valid_transportation": [((DAY3_FLIGHT, DAY3_DRIVE),)],
    "is_valid_information_in_current_city": [
        # day 1 is spent between Salt Lake City and Burbank, not in Binghamton
        (("Lunch: KB's Kulfi & Icecream, Burbank", "Lunch: Le Petit Souffle, Binghamton"),),
    ],
    "is_valid_information_in_sandbox": [
        (("Lunch: Tpot, Burbank", "Lunch: The Imaginary Noodle House, Burbank"),),
        (("F3977100", "F0000001"),),
        (("Attraction: Johnny Carson Park, Burbank",
          "Attraction: Johnny Carson Park, Burbank; Museum of Nowhere, Burbank"),),
        (("Lunch: Tpot, Burbank", "Lunch: tpot, Burbank"),),  # case counts
    ],
    "is_not_absent": [
        # no accommodation on day 2
        (("Dinner: Smaaash, Burbank\n" + PLEASANT, "Dinner: Smaaash, Burbank\nAccommodation: -"),),
        # day 2 left out: 2 days for a 3-day trip
        ((BURBANK[BURBANK.index("Day 2:"):BURBANK.index("Day 3:")], ""),),
        # day 2, a day without travel, without lunch
        (("Lunch: Tpot, Burbank", "Lunch: -"),),
    ],
    "valid_cost": [
        # Cozy Home sleeps 4: two units at $1,098 a night
        ((PLEASANT, "Accommodation: Cozy Home, Great Location, Burbank"),),
    ],
    "valid_room_type": [
        # the second night in a private room (one night is its minimum)
        (("Dinner: Smaaash, Burbank\n" + PLEASANT,
          "Dinner: Smaaash, Burbank\nAccommodation: Sunny, spacious room in Bedstuy, Burbank"),),
    ],
}

PHOENIX_BREAKS = {
    "valid_room_rule": [
        (("Accommodation: Twin Cabin with a Window One, Phoenix",
          "Accommodation: 1,100 sq. ft. apt. Penthouse with private deck!, Phoenix"),),
    ],
    "valid_cuisine": [
        # Doughlicious is the plan's only French restaurant
        (("Dinner: Doughlicious, Phoenix", "Dinner: Jungle The Restaurant, Phoenix"),),
        # French food in El Paso, the origin, does not count
        (("Dinner: Doughlicious, Phoenix", "Dinner: Jungle The Restaurant, Phoenix"),
         ("Breakfast: -\nAttraction: Phoenix Zoo",
          "Breakfast: The Celiac Kitchen, El Paso\nAttraction: Phoenix Zoo")),
    ],
    "valid_transportation": [
        ((PHX_DRIVE_OUT, PHX_FLIGHT_OUT), (PHX_DRIVE_BACK, PHX_FLIGHT_BACK)),
    ],
}

TEXAS_LAST_DRIVE = ("Transportation: Self-driving, from Amarillo to Monterey, Duration: 19 hours "
                    "21 mins, Distance: 2,104 km, Cost: 105")
TEXAS_BREAKS = {
    "is_valid_transportation": [
        (("Transportation: Self-driving, from Lubbock to Amarillo",
          "Transportation: Taxi, from Lubbock to Amarillo"),),
    ],
    "is_reasonable_visiting_city": [
        # the last day drives to El Paso, not home to Monterey
        (("Current City: from Amarillo to Monterey", "Current City: from Amarillo to El Paso"),
         (TEXAS_LAST_DRIVE, "Transportation: Self-driving, from Amarillo to El Paso")),
    ],
}


def _cases(breaks: dict[str, list[tuple[tuple[str, str], ...]]]) -> list:
    return [pytest.param(key, edits, mode, id=f"{key}-{n}-{mode}")
            for key, variants in breaks.items() for n, edits in enumerate(variants)
            for mode in MODES]


@pytest.mark.parametrize(("key", "edits", "mode"), _cases(BURBANK_BREAKS))
def test_burbank_break(db: TravelDatabase, burbank: TravelInstance, key: str,
                       edits: tuple[tuple[str, str], ...], mode: str) -> None:
    grade = grade_plan(variant(BURBANK, *edits), burbank, db, mode=mode)
    assert_fails_exactly(grade, key)
    assert grade.delivered and 0 < grade.performance < 1 and grade.errors == {}


@pytest.mark.parametrize(("key", "edits", "mode"), _cases(PHOENIX_BREAKS))
def test_phoenix_break(db: TravelDatabase, phoenix: TravelInstance, key: str,
                       edits: tuple[tuple[str, str], ...], mode: str) -> None:
    assert_fails_exactly(grade_plan(variant(PHOENIX, *edits), phoenix, db, mode=mode), key)


@pytest.mark.parametrize(("key", "edits", "mode"), _cases(TEXAS_BREAKS))
def test_texas_break(db: TravelDatabase, texas: TravelInstance, key: str,
                     edits: tuple[tuple[str, str], ...], mode: str) -> None:
    assert_fails_exactly(grade_plan(variant(TEXAS, *edits), texas, db, mode=mode), key)


def test_every_check_has_a_breaking_variant() -> None:
    covered = set(BURBANK_BREAKS) | set(PHOENIX_BREAKS) | set(TEXAS_BREAKS)
    assert covered == set(COMMONSENSE) | set(HARD)


def test_day_one_without_transportation_fails_two_checks(db: TravelDatabase,
                                                         burbank: TravelInstance) -> None:
    grade = grade_plan(variant(BURBANK, (DAY1_FLIGHT, "Transportation: -")), burbank, db)
    assert grade.failed == {"is_valid_transportation", "is_not_absent"}
    assert grade.commonsense["is_valid_transportation"].reason == "Day 1 has no transportation."
    assert grade.commonsense["is_not_absent"].reason == \
        "Day 1 travels but has no transportation."


def test_texas_day_starts_where_the_last_ended(db: TravelDatabase, texas: TravelInstance) -> None:
    plan = parse_plan(TEXAS).days
    # day 4 said to be spent in Amarillo, with its places and stay in Amarillo, while day 3
    # ended in Lubbock and day 5 leaves from Lubbock
    plan[2] = replace(plan[2], accommodation="Private room near Columbia University, Lubbock")
    plan[3] = replace(plan[3], current_city="Amarillo",
                      breakfast="Biryani Sons & Co., Amarillo",
                      attractions=["Don Harrington Discovery Center, Amarillo"],
                      lunch="Thalaivar, Amarillo", dinner="ATM Food Corner, Amarillo",
                      accommodation="Spacious retreat, Amarillo")
    for mode in MODES:
        grade = grade_plan(plan, texas, db, mode=mode)
        assert_fails_exactly(grade, "is_reasonable_visiting_city")
        assert grade.commonsense["is_reasonable_visiting_city"].reason == (
            "The city sequence is invalid: Lubbock appears once in the middle of the route (a "
            "day does not start where the day before ended).")


def test_texas_revisit(db: TravelDatabase, texas: TravelInstance) -> None:
    grade = grade_plan(TEXAS_REVISIT, texas, db)
    assert grade.failed == {"is_reasonable_visiting_city", "is_not_absent"}
    assert "comes back to El Paso" in grade.commonsense["is_reasonable_visiting_city"].reason
    assert grade.commonsense["is_not_absent"].reason == \
        "The plan visits 2 cities (El Paso, Lubbock), the trip asks for 3."


def test_texas_city_outside_the_state(db: TravelDatabase, texas: TravelInstance) -> None:
    grade = grade_plan(TEXAS.replace("Amarillo", "Burbank"), texas, db)
    verdict = grade.commonsense["is_reasonable_visiting_city"]
    assert verdict.passed is False and verdict.reason == "Burbank is in California, not in Texas."


# -- reasons say what failed -------------------------------------------------------------------

def test_reasons_are_concrete(db: TravelDatabase, burbank: TravelInstance,
                              phoenix: TravelInstance) -> None:
    def reason(plan: str, task: TravelInstance, key: str, *edits: tuple[str, str]) -> str:
        grade = grade_plan(variant(plan, *edits), task, db)
        return (grade.commonsense.get(key) or grade.hard[key]).reason

    def first(breaks: dict, key: str) -> tuple[tuple[str, str], ...]:
        return breaks[key][0]

    assert reason(BURBANK, burbank, "is_valid_restaurants",
                  *first(BURBANK_BREAKS, "is_valid_restaurants")) == \
        "Day 2 dinner 'Hard Rock Cafe, Burbank' is the same restaurant as day 1 dinner."
    assert reason(BURBANK, burbank, "is_valid_accommodation",
                  *first(BURBANK_BREAKS, "is_valid_accommodation")) == \
        "'BROOKLYN 1 BEDROOM, Burbank' asks for at least 3 nights, but the plan stays 2."
    assert reason(BURBANK, burbank, "is_valid_information_in_current_city",
                  *first(BURBANK_BREAKS, "is_valid_information_in_current_city")) == \
        "Day 1 lunch 'Le Petit Souffle, Binghamton' is not in 'Salt Lake City' or 'Burbank'."
    assert reason(BURBANK, burbank, "is_valid_information_in_sandbox",
                  ("F3977100", "F0000001")) == \
        "Day 3: flight 'F0000001' from Burbank to Salt Lake City is not in the sandbox."
    assert reason(BURBANK, burbank, "is_valid_information_in_sandbox",
                  ("Lunch: Tpot, Burbank", "Lunch: tpot, Burbank")) == \
        "Day 2 lunch 'tpot, Burbank': no restaurant in 'Burbank' has a name containing 'tpot' " \
        "(case counts)."
    budget = reason(BURBANK, burbank, "valid_cost", *first(BURBANK_BREAKS, "valid_cost"))
    assert budget == ("Total cost $8,032 (transportation $2,366, meals $1,274, accommodation "
                      "$4,392) for 7 people is over the budget $7,600.")
    assert reason(BURBANK, burbank, "valid_room_type",
                  *first(BURBANK_BREAKS, "valid_room_type")) == \
        "The trip asks for entire room, but day 2 'Sunny, spacious room in Bedstuy, Burbank' " \
        "is 'Private room'."
    assert "says 'No visitors & No pets'" in reason(PHOENIX, phoenix, "valid_room_rule",
                                                     *first(PHOENIX_BREAKS, "valid_room_rule"))
    assert reason(PHOENIX, phoenix, "valid_cuisine", *PHOENIX_BREAKS["valid_cuisine"][1]) == (
        "No restaurant of the plan outside El Paso serves French. Not read, after a meal in the "
        "origin: day 1 lunch, day 1 dinner.")
    assert "day 1 has 'Flight Number: F3968528" in reason(
        PHOENIX, phoenix, "valid_transportation", *first(PHOENIX_BREAKS, "valid_transportation"))


def test_budget_counts_cars_and_cabs(db: TravelDatabase, texas: TravelInstance) -> None:
    # 4 people: one car for self-driving (90 + 28 + 9 + 105), one cab for a taxi
    driving = grade_plan(TEXAS, texas, db).hard["valid_cost"].reason
    assert "transportation $232" in driving
    (edits,) = TEXAS_BREAKS["is_valid_transportation"]
    taxi = grade_plan(variant(TEXAS, *edits), texas, db).hard["valid_cost"].reason
    assert "transportation $420" in taxi  # the 197 km taxi: $197 for one cab


# -- empty and unreadable plans ----------------------------------------------------------------

def test_blank_days_inside_a_plan_count(db: TravelDatabase, burbank: TravelInstance) -> None:
    blank = "Day 2:\n" + "".join(f"{key}: -\n" for key in (
        "Current City", "Transportation", "Breakfast", "Attraction", "Lunch", "Dinner",
        "Accommodation")) + "\n"
    text = variant(BURBANK, (BURBANK[BURBANK.index("Day 2:"):BURBANK.index("Day 3:")], blank))
    grade = grade_plan(text, burbank, db)
    assert grade.delivered and len(parse_plan(text).days) == 3
    assert grade.failed == {"is_reasonable_visiting_city", "is_not_absent"}
    assert "Burbank appears once in the middle of the route" in \
        grade.commonsense["is_reasonable_visiting_city"].reason


@pytest.mark.parametrize("text", ["", "   \n", "We have not decided anything yet.",
                                  "Day 1:\nCurrent City: -\nTransportation: -\nLunch: -"])
def test_empty_plan_scores_zero(db: TravelDatabase, burbank: TravelInstance, text: str) -> None:
    grade = grade_plan(text, burbank, db)
    assert not grade.delivered and not grade.hard_evaluated
    assert grade.performance == 0.0
    assert grade.commonsense_pass_rate == 0.0 and grade.hard_pass_rate == 0.0
    assert all(v.passed is False for v in grade.commonsense.values())
    assert grade.hard["valid_cost"].passed is False
    assert grade.hard["valid_room_type"].passed is False
    assert grade.hard["valid_cuisine"].passed is None
    assert grade.failed == set(COMMONSENSE) | {"valid_cost", "valid_room_type"}
    assert grade_submission([], burbank, db).to_dict() | {"parser": "structured"} == \
        grade.to_dict() | {"problems": []}


async def test_grade_text_without_lm(db: TravelDatabase, burbank: TravelInstance) -> None:
    assert (await grade_text(BURBANK, burbank, db)).performance == 1.0
    prose = await grade_text("We fly to Burbank and stay two nights.", burbank, db)
    assert not prose.delivered and prose.parser == "structured"


# -- the LM fallback, through our real LM client (over aiohttp) ------------------------------

PROSE = ("We take flight F3846241 from Salt Lake City to Burbank on the 12th, see the Gordon R "
         "Howard Museum, eat at KB's Kulfi & Icecream and Hard Rock Cafe, and sleep at the "
         "Pleasant 1 bedroom apartment in Harlem Brownstone for two nights ...")


@pytest.mark.usefixtures("no_ambient_lm")
async def test_lm_fallback(db: TravelDatabase, burbank: TravelInstance) -> None:
    with ScriptedOpenAIServer() as server:
        server.add("Sure! Here it is:\n```\n" + BURBANK + "```\n")
        lm = make_lm(LMConfig(model="m", base_url=server.base_url))
        try:
            grade = await grade_text(PROSE, burbank, db, lm)
        finally:
            await lm.aclose()
        assert len(server.requests) == 1
        prompt = server.requests[0]["messages"][-1]["content"]
    assert PROSE in prompt and "3 days" in prompt
    assert grade.parser == "lm" and grade.delivered
    assert grade.performance == 1.0, grade.to_dict()
    assert grade.to_dict()["parser"] == "lm"
    assert lm.meter.by_purpose["plan_parser"]["calls"] == 1


@pytest.mark.usefixtures("no_ambient_lm")
async def test_lm_not_called_for_a_structured_plan(db: TravelDatabase,
                                                   burbank: TravelInstance) -> None:
    with ScriptedOpenAIServer() as server:
        lm = make_lm(LMConfig(model="m", base_url=server.base_url))
        grade = await grade_text(BURBANK, burbank, db, lm)
        await lm.aclose()
        assert server.requests == []
    assert grade.parser == "structured" and grade.performance == 1.0


@pytest.mark.usefixtures("no_ambient_lm")
async def test_lm_fallback_answer_without_days(db: TravelDatabase,
                                               burbank: TravelInstance) -> None:
    with ScriptedOpenAIServer() as server:
        server.add("I cannot tell which days these are.")
        lm = make_lm(LMConfig(model="m", base_url=server.base_url))
        parsed = await parse_with_lm(PROSE, lm, days=3)
        server.add("I cannot tell which days these are.")
        grade = await grade_text(PROSE, burbank, db, lm)
        await lm.aclose()
    assert parsed.days == [] and "no day" in parsed.problems[0]
    assert grade.parser == "lm" and not grade.delivered and grade.performance == 0.0


@pytest.mark.usefixtures("no_ambient_lm")
async def test_lm_errors_propagate(db: TravelDatabase, burbank: TravelInstance) -> None:
    with ScriptedOpenAIServer() as server:
        server.add(Reply(status=400, error="bad request"))
        lm = make_lm(LMConfig(model="m", base_url=server.base_url, max_retries=0))
        with pytest.raises(LMError):
            await grade_text(PROSE, burbank, db, lm)
        await lm.aclose()


# -- data from the environment ----------------------------------------------------

def test_grades_with_data_from_cogym_data(use_shared_data: Path) -> None:  # noqa: F811
    task = load_instances()[0]
    assert grade_plan(BURBANK, task, TravelDatabase.load()).performance == 1.0
    with pytest.raises(ValueError, match="Unknown grading mode 'strict'"):
        grade_plan(BURBANK, task, TravelDatabase.load(), mode="strict")
