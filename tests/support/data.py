"""Fixtures for tests that read the shared task data: the folder ``COGYM_DATA`` names when the suite
starts, else the ``shared/datasets`` folder next to the repository. Missing data fails the test
loudly: these tests are part of the suite, not extras.

Use them by importing (``from tests.support.data import datasets_dir, use_shared_data``) or by
listing ``"tests.support.data"`` in ``pytest_plugins``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cogym_lab.datasets import DATA_ENV_VAR
from tests.support.paths import REPO_ROOT

SHARED_ORACLES = REPO_ROOT.parent / "shared" / "oracles"
# Read once, at collection: a test that points ``COGYM_DATA`` elsewhere must not move it.
SHARED_DATASETS = Path(os.environ.get(DATA_ENV_VAR) or REPO_ROOT.parent / "shared" / "datasets")


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    """The task data folder: ``COGYM_DATA`` if set, else ``<repo>/../shared/datasets``."""
    if not (SHARED_DATASETS / "travel_planning").is_dir():
        pytest.fail(f"The task data folder is missing: expected {SHARED_DATASETS} (set "
                    f"{DATA_ENV_VAR}, or put the 'shared/datasets' folder next to the repository, "
                    "with travel_planning/ in it). `cogym-lab data --data-dir <that folder>` says "
                    "what it needs.", pytrace=False)
    return SHARED_DATASETS


@pytest.fixture
def use_shared_data(datasets_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point ``COGYM_DATA`` at the shared datasets folder for one test."""
    monkeypatch.setenv(DATA_ENV_VAR, str(datasets_dir))
    return datasets_dir
