"""The files the Travel Planning task reads from the data directory, where each comes from, and
the small sample of them that ships inside the package."""

from __future__ import annotations

from pathlib import Path

from cogym_lab.datasets import DataItem, DataSample

__all__ = ["DATA_FILES", "SAMPLE"]

_TASK = "travel_planning"

_COGYM = "the Collaborative Gym release"
_COGYM_HOME = "https://github.com/SALT-NLP/collaborative-gym"
# Pinned: the file is the same at this commit as in the first release (same git blob).
_COGYM_RAW = ("https://raw.githubusercontent.com/SALT-NLP/collaborative-gym/"
              "1e3b02e9be9593d092833d8dee01b12359200bd9/datasets")

_TP = "the TravelPlanner repository"
_TP_HOME = "https://github.com/OSU-NLP-Group/TravelPlanner"
# Pinned commits of the TravelPlanner repository that hold the sandbox database files.
_TP_RAW = ("https://raw.githubusercontent.com/OSU-NLP-Group/TravelPlanner/"
           "958f30d7e7629d18f33d79183dedf9b2830ff88c/database")
_TP_RAW_TRAIN = ("https://raw.githubusercontent.com/OSU-NLP-Group/TravelPlanner/"
                 "75767a7c21703f2d4b53f9dd373733b9219f8b0a/database")


def _database_file(path: str, description: str, sha256: str, size: int, *,
                   train: bool = False) -> DataItem:
    """A file of TravelPlanner's sandbox database, fetched from its pinned commit."""
    base = _TP_RAW_TRAIN if train else _TP_RAW
    return DataItem(_TASK, f"{_TASK}/database/{path}", description, _TP, _TP_HOME, "MIT",
                    f"{base}/{path}", sha256=sha256, size=size)


DATA_FILES: tuple[DataItem, ...] = (
    DataItem(_TASK, f"{_TASK}/validation_with_hidden_profile.csv",
             "102 TravelPlanner validation queries with hidden preferences and reference "
             "information (the flights come from here)", _COGYM, _COGYM_HOME, "MIT",
             f"{_COGYM_RAW}/TravelPlanner/validation_with_hidden_profile.csv",
             sha256="988c763fa0e74fe8cdac8a2aff8f029d7eeb3b6a4f2a5fe248c4e6a45e5be521",
             size=2980899),
    _database_file("accommodations/clean_accommodations_2022.csv", "accommodations",
                   "7e70cc8cb573e824267be47153a3cf7934c839f01c955fb523d18be405921d86", 520458),
    _database_file("attractions/attractions.csv", "attractions",
                   "8007fa851ba5b3adb205fbd298169c95116b297cef7ccd21dbea26ecce2605d8", 817982),
    _database_file("restaurants/clean_restaurant_2022.csv", "restaurants",
                   "a38ef00a3398b1ef78306a9b1851c491723d27899c6a1d4a3d6fe042929c0f26", 683023),
    _database_file("googleDistanceMatrix/distance.csv", "driving distances between cities",
                   "44726ca74a335fd2d4824fc748f8832813550bfead37376fd51d6521a93a8b3b", 777824),
    _database_file("background/citySet.txt", "the cities of the sandbox",
                   "5e80edac9ccacec673d51bbeaf2d4e99339e104684988eafdb42c214ddb0ce39", 3064),
    _database_file("background/citySet_with_states.txt", "city <TAB> state",
                   "a3d18b5c692857cd561cbb4ad8d221ac3eb6c47af7c787a3489e3ffa184ca4d6", 5921),
    _database_file("background/stateSet.txt", "the states of the sandbox",
                   "ad8d88f7e87cf85f230abf4b69c69cd4908399c1c93049eaa466d0ce0fe6bed5", 642),
    _database_file("train_ref_info.jsonl", "reference information of the training queries "
                   "(more flights)",
                   "f9eff8c9e3056c726c4bc46b8183a51efdf63760755b0183fa36f1c9f14b6e83", 1197800,
                   train=True),
)

#: Read when nobody chose a data directory and the default one lacks the files above; rebuilt by
#: ``scripts/samples/build_travel_planning_sample.py`` (its ``SAMPLE.md`` says what was taken).
SAMPLE = DataSample(_TASK, Path(__file__).parent / "sample",
                    "12 of the 102 validation queries, with the database rows of their cities")
