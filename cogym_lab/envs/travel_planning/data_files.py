"""The files the Travel Planning task reads from the data directory, where each comes from, and
the small sample of them that ships inside the package."""

from __future__ import annotations

from pathlib import Path

from cogym_lab.datasets import DataItem, DataSample

__all__ = ["DATA_FILES", "SAMPLE"]

_TASK = "travel_planning"

_COGYM = "the Collaborative Gym release"
_COGYM_HOME = "https://github.com/SALT-NLP/collaborative-gym"
_COGYM_RAW = "https://raw.githubusercontent.com/SALT-NLP/collaborative-gym/main/datasets"

_TP = "the TravelPlanner repository"
_TP_HOME = "https://github.com/OSU-NLP-Group/TravelPlanner"
# Pinned commits of the TravelPlanner repository that hold the sandbox database files.
_TP_RAW = ("https://raw.githubusercontent.com/OSU-NLP-Group/TravelPlanner/"
           "958f30d7e7629d18f33d79183dedf9b2830ff88c/database")
_TP_RAW_TRAIN = ("https://raw.githubusercontent.com/OSU-NLP-Group/TravelPlanner/"
                 "75767a7c21703f2d4b53f9dd373733b9219f8b0a/database")


def _database_file(path: str, description: str, *, train: bool = False) -> DataItem:
    """A file of TravelPlanner's sandbox database, fetched from its pinned commit."""
    base = _TP_RAW_TRAIN if train else _TP_RAW
    return DataItem(_TASK, f"{_TASK}/database/{path}", description, _TP, _TP_HOME, "MIT",
                    f"{base}/{path}")


DATA_FILES: tuple[DataItem, ...] = (
    DataItem(_TASK, f"{_TASK}/validation_with_hidden_profile.csv",
             "102 TravelPlanner validation queries with hidden preferences and reference "
             "information (the flights come from here)", _COGYM, _COGYM_HOME, "MIT",
             f"{_COGYM_RAW}/TravelPlanner/validation_with_hidden_profile.csv"),
    _database_file("accommodations/clean_accommodations_2022.csv", "accommodations"),
    _database_file("attractions/attractions.csv", "attractions"),
    _database_file("restaurants/clean_restaurant_2022.csv", "restaurants"),
    _database_file("googleDistanceMatrix/distance.csv", "driving distances between cities"),
    _database_file("background/citySet.txt", "the cities of the sandbox"),
    _database_file("background/citySet_with_states.txt", "city <TAB> state"),
    _database_file("background/stateSet.txt", "the states of the sandbox"),
    _database_file("train_ref_info.jsonl", "reference information of the training queries "
                   "(more flights)", train=True),
)

#: Read when nobody chose a data directory and the default one lacks the files above; rebuilt by
#: ``scripts/samples/build_travel_planning_sample.py`` (its ``SAMPLE.md`` says what was taken).
SAMPLE = DataSample(_TASK, Path(__file__).parent / "sample",
                    "12 of the 102 validation queries, with the database rows of their cities")
