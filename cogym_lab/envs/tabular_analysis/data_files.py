"""The files the Tabular Analysis task reads from the data directory, where each comes from, and
the sample of them that ships inside the package."""

from __future__ import annotations

from pathlib import Path

from cogym_lab.datasets import DataItem, DataSample

__all__ = ["DATA_FILES", "SAMPLE", "SAMPLE_DOMAINS"]

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

#: The DiscoveryBench-Real domains (folders of the test split) the bundled sample holds: small
#: ones whose queries are all multi-table, so both protocols select every one of them.
SAMPLE_DOMAINS: tuple[str, ...] = ("introduction_pathways_non-native_plants",
                                   "worldbank_education_gdp_indicators")

#: Laid out like ``<data dir>/tabular_analysis/``, except that the gold hypotheses are sealed
#: (``sealed.py``); rebuilt by ``scripts/samples/build_tabular_analysis_sample.py``.
SAMPLE = DataSample(
    _TASK, Path(__file__).resolve().parent / "sample",
    "the 22 queries of two DiscoveryBench-Real domains, non-native plants and World Bank "
    "education and GDP; the full data gives 110 queries under the cogym protocol, 117 under "
    "cogym_lab")
