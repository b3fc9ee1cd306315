"""One accommodation table for the search tools and the grader: what an agent can find is what the
grader accepts, and names are shown exactly as stored.

The official table is checked against TravelPlanner's own way of loading the CSV (pandas,
``dropna()`` over all columns), computed here independently.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cogym_lab.envs import make_env
from cogym_lab.envs.travel_planning.accommodation_table import (
    GRADED_FIELDS,
    read_accommodations,
)
from cogym_lab.envs.travel_planning.database import TravelDatabase
from cogym_lab.envs.travel_planning.grader import grade_plan
from cogym_lab.envs.travel_planning.tools import DatabaseProvider
from tests.envs.travel_planning.test_travel_grader import BURBANK, PHOENIX, PLEASANT, variant
from tests.support.data import datasets_dir, use_shared_data  # noqa: F401 (fixtures)

CSV = Path("travel_planning") / "database" / "accommodations" / "clean_accommodations_2022.csv"
SANDBOX = "is_valid_information_in_sandbox"
DROPPED_IN_PHOENIX = "DLKLC Residence"  # no house rules: the official loader drops it
DOUBLE_SPACED = "Dominiques Homesharing  room NYC* metro*quiet*safe"  # in Burbank


@pytest.fixture(scope="module")
def frame(datasets_dir: Path) -> pd.DataFrame:  # noqa: F811
    return pd.read_csv(datasets_dir / CSV)


def _pairs(listings: list) -> list[tuple[str, str]]:
    return [(a.name, a.city) for a in listings]


def test_the_official_table_is_the_official_loaders(frame: pd.DataFrame,
                                                    datasets_dir: Path) -> None:  # noqa: F811
    official = read_accommodations(datasets_dir / CSV, "official")
    kept = frame.dropna()
    assert (official.rows, len(official.listings), official.dropped) == (5047, 4285, 762)
    assert _pairs(official.listings) == list(zip(kept["NAME"], kept["city"], strict=True))
    assert official.listings[0].price == kept.iloc[0]["price"]
    corrected = read_accommodations(datasets_dir / CSV, "corrected")
    assert (len(corrected.listings), corrected.dropped) == (5007, 40)
    needed = frame.dropna(subset=list(GRADED_FIELDS))
    assert _pairs(corrected.listings) == list(zip(needed["NAME"], needed["city"], strict=True))
    assert set(_pairs(official.listings)) < set(_pairs(corrected.listings))
    no_rules = next(a for a in corrected.listings if a.name == DROPPED_IN_PHOENIX)
    assert no_rules.house_rules == "" and no_rules.city == "Phoenix"
    with pytest.raises(ValueError, match="Unknown accommodation table"):
        read_accommodations(datasets_dir / CSV, "all")  # type: ignore[arg-type]


@pytest.mark.parametrize("table", ["official", "corrected"])
def test_the_tools_show_exactly_the_table(frame: pd.DataFrame, datasets_dir: Path,  # noqa: F811
                                          table: str) -> None:
    db = TravelDatabase.load(datasets_dir, accommodations=table)
    assert db.accommodation_table == table
    provider = DatabaseProvider(db)
    kept = frame.dropna() if table == "official" else frame.dropna(subset=list(GRADED_FIELDS))
    shown: list[tuple[str, str]] = []
    for city in sorted(set(frame["city"])):
        result = provider.accommodation_search(city)
        shown += [(row["Name"], city) for row in result.rows]
        assert [row["Name"] for row in result.rows] == \
            list(kept[kept["city"] == city]["NAME"])  # exactly as stored, in file order
    assert sorted(shown) == sorted(zip(kept["NAME"], kept["city"], strict=True))
    if table == "official":  # no listing the official loader drops is ever offered
        dropped = set(zip(frame["NAME"], frame["city"], strict=True)) - set(shown)
        assert len(dropped) >= 750 and (DROPPED_IN_PHOENIX, "Phoenix") in dropped


def test_names_are_shown_as_stored(frame: pd.DataFrame, datasets_dir: Path) -> None:  # noqa: F811
    provider = DatabaseProvider(TravelDatabase.load(datasets_dir))
    odd = [name for name in frame.dropna()["NAME"] if name != " ".join(name.split())]
    assert len(odd) >= 140  # double spaces, spaces at the ends, line breaks
    names = {row["Name"] for row in provider.accommodation_search("Burbank").rows}
    assert DOUBLE_SPACED in names
    restaurants = pd.read_csv(datasets_dir / "travel_planning/database/restaurants/"
                              "clean_restaurant_2022.csv")
    spaced = restaurants[restaurants["Name"].map(lambda n: n != " ".join(n.split()))].iloc[0]
    shown = [row["Name"] for row in provider.restaurant_search(spaced["City"]).rows]
    assert spaced["Name"] in shown


@pytest.mark.usefixtures("use_shared_data")
@pytest.mark.parametrize(("protocol", "offered"), [("cogym", False), ("cogym_lab", True)])
def test_what_the_agent_finds_is_what_the_grader_accepts(protocol: str, offered: bool) -> None:
    env = make_env("travel_planning", instance=61, protocol=protocol)
    env.reset()
    # cogym grades as the Co-Gym release, which loads the official table (and looks stays up
    # among the attractions, so no listing passes Within Sandbox there)
    assert env.grading_mode == {"cogym": "release", "cogym_lab": "corrected"}[protocol]
    assert env.db.accommodation_table == {"cogym": "official", "cogym_lab": "corrected"}[protocol]
    env.step("agent", 'ACCOMMODATION_SEARCH(city="Phoenix")')
    names = [row["Name"] for row in env.view("agent")["search"].content["rows"]]
    assert (DROPPED_IN_PHOENIX in names) is offered
    plan = variant(PHOENIX, ("Twin Cabin with a Window One", DROPPED_IN_PHOENIX))
    env.step("agent", {"name": "EDITOR_UPDATE", "args": {"text": plan}})
    assert env.grade().commonsense[SANDBOX].passed is offered
    assert env.evaluate()[SANDBOX] == float(offered)


@pytest.mark.usefixtures("use_shared_data")
def test_a_double_spaced_name_copied_from_a_search_passes() -> None:
    env = make_env("travel_planning", instance=0)  # the official table, graded officially below
    env.reset()
    env.step("agent", 'ACCOMMODATION_SEARCH(city="Burbank")')
    rows = env.view("agent")["search"].content["rows"]
    name = next(row["Name"] for row in rows if row["Name"].startswith("Dominiques"))
    assert name == DOUBLE_SPACED
    copied = variant(BURBANK, (PLEASANT, f"Accommodation: {name}, Burbank"))
    env.step("agent", {"name": "EDITOR_UPDATE", "args": {"text": copied}})
    verdict = official_grade(env).commonsense[SANDBOX]
    assert verdict.passed is True, verdict.reason
    collapsed = variant(BURBANK, (PLEASANT, f"Accommodation: {' '.join(name.split())}, Burbank"))
    env.step("agent", {"name": "EDITOR_UPDATE", "args": {"text": collapsed}})
    verdict = official_grade(env).commonsense[SANDBOX]
    assert verdict.passed is False and "no listing in 'Burbank'" in verdict.reason


def official_grade(env):
    """The plan in ``env``'s editor graded by TravelPlanner's official verdicts."""
    return grade_plan(env.plan_text, env.task, env.db, mode="official")
