"""The inter-quartile mean (IQM) and the standard error of repeated runs, as reported for
real-time tasks (a few runs may go very wrong, or very right, by chance: the IQM is not pulled
by them the way the mean is).

* :func:`interquartile_mean`: the mean of the middle half of the values. The lowest and the
  highest quarter are dropped, ``floor(n / 4)`` values at each end (as a 25% trimmed mean does),
  so 20 runs keep the middle 10; fewer than 4 values keep them all.
* :func:`standard_error`: the sample standard deviation (``n - 1``) over the square root of
  ``n``, over every run (the spread of the runs, not of the middle half alone).

NaN and ``None`` are left out of both: a run that has no value for a measure (no macro action,
so no efficiency) does not count towards it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

#: The share of the values cut at each end.
TRIM = 0.25


def _clean(values: Iterable[float | int | None]) -> np.ndarray:
    kept = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return np.sort(np.asarray(kept, dtype=float))


def interquartile_mean(values: Iterable[float | int | None]) -> float:
    """The mean of the middle half of ``values`` (NaN when there are none)."""
    ordered = _clean(values)
    if ordered.size == 0:
        return math.nan
    cut = int(TRIM * ordered.size)
    return float(ordered[cut:ordered.size - cut].mean())


def standard_error(values: Iterable[float | int | None]) -> float:
    """The standard error of the mean of ``values`` (NaN for fewer than two)."""
    clean = _clean(values)
    if clean.size < 2:
        return math.nan
    return float(clean.std(ddof=1) / math.sqrt(clean.size))


def iqm_and_se(values: Iterable[float | int | None]) -> tuple[float, float]:
    """:func:`interquartile_mean` and :func:`standard_error` of ``values``."""
    listed = list(values)
    return interquartile_mean(listed), standard_error(listed)
