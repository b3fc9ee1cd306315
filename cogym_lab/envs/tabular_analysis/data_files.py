"""The files the Tabular Analysis task reads from the data directory, and where each comes from."""

from __future__ import annotations

from cogym_lab.datasets import DataItem

__all__ = ["DATA_FILES"]

_TASK = "tabular_analysis"

_DB = "DiscoveryBench"
_DB_HOME = "https://github.com/allenai/discoverybench"
_DB_COMMIT_TEST = "6955693ea863c78d881f136aef5a3133fb46d8a6"
_DB_COMMIT_KEY = "77af7d6514bd45da4b2d11fe014a0e57b4803d5a"

DATA_FILES: tuple[DataItem, ...] = (
    DataItem(_TASK, f"{_TASK}/discoverybench/real/test/",
             "DiscoveryBench-Real test split: one folder a domain (tables + metadata)",
             _DB, _DB_HOME, "ODC-By",
             f"https://github.com/allenai/discoverybench/archive/{_DB_COMMIT_TEST}.zip",
             archive_member="discoverybench/real/test/",
             # Of the unpacked folder's 163 files (the archive's own bytes are not stable).
             sha256="7ae646a32f342a3771a1f241bdc88537dc33915f61446f6ff9ddddf355685c4f"),
    DataItem(_TASK, f"{_TASK}/discoverybench/real/test/answer_key_real.csv",
             "gold hypotheses for grading", _DB, _DB_HOME, "ODC-By",
             "https://raw.githubusercontent.com/allenai/discoverybench/"
             f"{_DB_COMMIT_KEY}/eval/answer_key_real.csv",
             sha256="67504136becc97f4b4b3c698489bf2222d2a55f75aaa5cf033d6dd62ef5537e0",
             size=57833),
)
