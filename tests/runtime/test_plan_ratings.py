"""The Cocoa study's nine Likert items in a rating: saved through ``SessionHost.rate`` and
through a real server's rating endpoint, refused with 400 and no change when they are not whole
numbers from 1 to 5 (or not items at all), left out of ``ratings.json`` when not answered, and
read back by the evaluation with the general-utility composite (old files, with the three old
item names or none, still read)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks

from cogym_lab.eval.stats.rating_tests import rating_items
from cogym_lab.records.likert import COCOA_ITEMS
from cogym_lab.records.trajectory import load_session
from cogym_lab.runtime.hosting import HostingError
from cogym_lab.runtime.models import RatingRequest, StoredRating
from cogym_lab.widgets import wire
from tests.support.jupyter_api import server_config
from tests.support.trajectories import write_session

#: Comments that broke a log or a page once: markup, line separators, NUL, quotes, long text.
HOSTILE_COMMENTS = ["<script>alert(1)</script>", "a\u2028b\u2029c", "nul\x00here", "'\"\\",
                    "🙂" * 200, "x" * 9_000]
BAD_VALUES = [0, 6, "3", True, 3.5, None, [4]]


@pytest.fixture
def jp_server_config(tmp_path):
    return server_config(tmp_path / "results")


async def _person_session(api, tmp_path: Path) -> tuple[str, Path]:
    """A todo session with a person seat, and where its ratings will be saved."""
    status, created = await api("POST", body={"task": "todo", "people": ["user"],
                                              "idle_seconds": 60})
    assert status == 201, created
    session_id = created["session_id"]
    return session_id, tmp_path / "results" / session_id / "ratings.json"


def test_likert_items_through_the_endpoint(run, api, tmp_path):
    async def body():
        session_id, ratings_file = await _person_session(api, tmp_path)
        good = {"role": "user", "outcome_rating": 4, "satisfaction": 5}
        for item in COCOA_ITEMS:
            for value in [v for v in BAD_VALUES if v is not None]:
                status, error = await api("POST", session_id, "rating",
                                          body=good | {item: value})
                assert status == 400, (item, value, error)
                assert item in error["message"], (item, value, error)
        # An old name is read as its new one, and refused under that name.
        status, error = await api("POST", session_id, "rating", body=good | {"ease_of_use": 9})
        assert status == 400 and "easy_to_use" in error["message"]
        status, error = await api("POST", session_id, "rating", body=good | {"clarity": 3})
        assert status == 400 and "clarity" in error["message"]  # not an item
        assert not ratings_file.exists()  # every refusal left nothing

        nine = {item: 1 + n % 5 for n, item in enumerate(COCOA_ITEMS)}
        for comment in HOSTILE_COMMENTS:
            status, saved = await api("POST", session_id, "rating",
                                      body=good | nine | {"comment": comment})
            assert status == 201, saved
            entry = json.loads(ratings_file.read_text())["user"]
            assert entry["comment"] == comment
            assert {item: entry[item] for item in COCOA_ITEMS} == nine
            assert "utility" not in entry  # the composite is computed, never stored
        before = ratings_file.read_bytes()
        status, _ = await api("POST", session_id, "rating", body=good | {"insights": 6})
        assert status == 400 and ratings_file.read_bytes() == before

        # The old names are still taken, and saved under the new ones.
        status, saved = await api("POST", session_id, "rating", body=good | {
            "steerability": 5, "ease_of_use": 4, "utility": 3})
        assert status == 201
        assert {k: saved["ratings"]["user"][k] for k in ("steerable", "easy_to_use",
                                                          "useful_outputs")} == {
            "steerable": 5, "easy_to_use": 4, "useful_outputs": 3}
        assert not {"steerability", "ease_of_use", "utility"} & set(saved["ratings"]["user"])

        # A form without the items writes what it always wrote: no Likert keys at all.
        status, saved = await api("POST", session_id, "rating", body=good)
        assert status == 201
        assert set(saved["ratings"]["user"]) == {"outcome_rating", "satisfaction", "comment",
                                                 "ts"}
        await api("DELETE", session_id)

    run(body())


def test_likert_items_through_the_host(run, api, host, tmp_path):
    async def body():
        session_id, ratings_file = await _person_session(api, tmp_path)
        saved = host.rate(session_id, "user", 3, 4, "<b>fine</b>\u2028", likert={
            "steerable": 2, "understanding": 5, "insights": 4, "useful_outputs": None})
        assert saved["user"]["steerable"] == 2 and saved["user"]["understanding"] == 5
        assert "easy_to_use" not in saved["user"]  # not answered: not written
        assert "useful_outputs" not in saved["user"]  # None: not answered either
        before = ratings_file.read_bytes()
        for value in BAD_VALUES:
            if value is None:
                continue
            with pytest.raises(HostingError, match="easy_to_use") as refused:
                host.rate(session_id, "user", 3, 4, "", likert={"easy_to_use": value})
            assert refused.value.status == 400
            assert ratings_file.read_bytes() == before
        await api("DELETE", session_id)

        # What the evaluation reads back: the items, and the utility composite of the two
        # utility items answered (understanding 5, insights 4).
        record = load_session(ratings_file.parent)
        assert rating_items(record) == {"steerable": 2.0, "understanding": 5.0, "insights": 4.0,
                                        "utility": 4.5, "outcome_rating": 3.0,
                                        "satisfaction": 4.0}

    run(body())


def test_the_utility_composite_is_the_mean_of_the_three_utility_items(tmp_path):
    rating = {"outcome_rating": 4, "satisfaction": 4, "understanding": 2, "insights": 3,
              "useful_outputs": 5, "clear_steps": 1}
    other = {"outcome_rating": 2, "satisfaction": 2, "useful_outputs": 1}
    record = load_session(write_session(tmp_path / "s", [("user", "FINISH()")],
                                        ratings={"user": rating, "other": other}))
    assert record.ratings["user"].utility == pytest.approx(10 / 3)  # clear_steps not in it
    assert record.ratings["other"].utility == 1.0
    assert rating_items(record)["utility"] == pytest.approx((10 / 3 + 1) / 2)  # over raters


def test_old_ratings_still_read(tmp_path):
    old = {"outcome_rating": 4, "satisfaction": 5, "comment": "", "ts": 1.0}
    assert StoredRating.model_validate(old).steerable is None
    three = old | {"steerability": 2, "ease_of_use": 3, "utility": 4}
    assert StoredRating.model_validate(three).likert() == {
        "steerable": 2, "easy_to_use": 3, "useful_outputs": 4}
    items = rating_items(load_session(write_session(tmp_path / "three", [("user", "FINISH()")],
                                                    ratings={"user": three})))
    # The old single utility item is useful_outputs, so the composite is its value.
    assert items == {"steerable": 2.0, "easy_to_use": 3.0, "useful_outputs": 4.0,
                     "utility": 4.0, "outcome_rating": 4.0, "satisfaction": 5.0}
    directory = write_session(tmp_path / "old", [("user", "FINISH()")],
                              ratings={"user": old, "other": {"steerability": True,
                                                              "utility": "5"}})
    record = load_session(directory)
    assert record.ratings["user"].satisfaction == 5
    # Values that are not whole numbers from 1 to 5 are not counted.
    assert rating_items(record) == {"outcome_rating": 4.0, "satisfaction": 5.0}


def test_the_kernel_wire_carries_the_items():
    message = wire.FROM_PANEL.validate_python({
        "type": "rating", "id": 7, "outcome_rating": 4, "satisfaction": 4,
        "steerable": 5, "easy_to_use": "3", "next_steps": 2, "utility": 4})
    assert isinstance(message, wire.RatingMessage)
    # Passed on as sent: SessionHost.rate refuses the text, naming the item, by the id.
    assert message.likert() == {"steerable": 5, "easy_to_use": "3", "next_steps": 2,
                                "utility": 4}
    with pytest.raises(ValueError, match="easy_to_use"):
        RatingRequest.model_validate({"role": "user", "outcome_rating": 4, "satisfaction": 4,
                                      "easy_to_use": "3"})
