"""The Cocoa study's Likert items in a rating (steerability, ease of use, utility): saved through
``SessionHost.rate`` and through a real server's rating endpoint, refused with 400 and no
change when they are not whole numbers from 1 to 5, left out of ``ratings.json`` when not
answered, and read back by the evaluation (old files without them still read)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks

from cogym_lab.eval.stats.rating_tests import rating_items
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
        for item in ("steerability", "ease_of_use", "utility"):
            for value in [v for v in BAD_VALUES if v is not None]:
                status, error = await api("POST", session_id, "rating",
                                          body=good | {item: value})
                assert status == 400, (item, value, error)
                assert item in error["message"], (item, value, error)
        assert not ratings_file.exists()  # every refusal left nothing

        for comment in HOSTILE_COMMENTS:
            status, saved = await api("POST", session_id, "rating", body=good | {
                "steerability": 5, "ease_of_use": 4, "utility": 3, "comment": comment})
            assert status == 201, saved
            entry = json.loads(ratings_file.read_text())["user"]
            assert entry["comment"] == comment
            assert (entry["steerability"], entry["ease_of_use"], entry["utility"]) == (5, 4, 3)
        before = ratings_file.read_bytes()
        status, _ = await api("POST", session_id, "rating", body=good | {"utility": 6})
        assert status == 400 and ratings_file.read_bytes() == before

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
        saved = host.rate(session_id, "user", 3, 4, "<b>fine</b>\u2028", steerability=2,
                          utility=5)
        assert saved["user"]["steerability"] == 2 and saved["user"]["utility"] == 5
        assert "ease_of_use" not in saved["user"]  # not answered: not written
        before = ratings_file.read_bytes()
        for value in BAD_VALUES:
            if value is None:
                continue
            with pytest.raises(HostingError, match="ease_of_use") as refused:
                host.rate(session_id, "user", 3, 4, "", ease_of_use=value)
            assert refused.value.status == 400
            assert ratings_file.read_bytes() == before
        await api("DELETE", session_id)

        # What the evaluation reads back from the results directory.
        record = load_session(ratings_file.parent)
        assert rating_items(record) == {"steerability": 2.0, "utility": 5.0,
                                        "outcome_rating": 3.0, "satisfaction": 4.0}

    run(body())


def test_old_ratings_still_read(tmp_path):
    old = {"outcome_rating": 4, "satisfaction": 5, "comment": "", "ts": 1.0}
    assert StoredRating.model_validate(old).steerability is None
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
        "steerability": 5, "ease_of_use": "3"})
    assert isinstance(message, wire.RatingMessage)
    # Passed on as sent: SessionHost.rate refuses the text, naming the item, by the id.
    assert (message.steerability, message.ease_of_use, message.utility) == (5, "3", None)
    with pytest.raises(ValueError, match="ease_of_use"):
        RatingRequest.model_validate({"role": "user", "outcome_rating": 4, "satisfaction": 4,
                                      "ease_of_use": "3"})
