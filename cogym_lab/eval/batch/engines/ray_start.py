"""Starting Ray on a busy machine: a few tries with back-off, then one line that says what to do.

On a machine whose cores are taken, Ray's own processes start slowly: ``ray.init`` (or the first
actor) can fail with "GCS overloaded" or a start timeout although nothing is wrong but the load.
:func:`with_start_retries` tries such a step again, waiting :data:`FIRST_WAIT_SECONDS`, then
twice as long each time, for at most ``COGYM_RAY_START_SECONDS`` (:data:`DEFAULT_START_SECONDS`)
in all. What still fails then becomes a :class:`RayStartFailed` whose message names the way
out: the in-process engine (with worker processes), or more time. Other errors (a wrong
address, a missing token) are raised at once, as they were: trying again would not help.

This module does not import ``ray``: it only reads the errors' words.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import TypeVar

from cogym_lab.eval.batch.engines import EngineError

T = TypeVar("T")
#: The environment variable that sets how long, in seconds, Ray's start is tried in all.
START_SECONDS_VARIABLE = "COGYM_RAY_START_SECONDS"
DEFAULT_START_SECONDS = 60.0
FIRST_WAIT_SECONDS = 2.0
#: Words of Ray's errors that say the machine (or the cluster's head) is busy, lower case.
BUSY_SIGNS = ("overloaded", "timed out", "timeout", "deadline exceeded", "deadline_exceeded",
              "failed to connect to gcs", "gcs server is not ready")
log = logging.getLogger(__name__)


class RayStartFailed(EngineError):
    """Ray did not start in the time allowed, the machine (or the cluster's head) being busy."""


def is_busy(error: BaseException) -> bool:
    """Whether ``error`` says Ray's start was slow rather than wrong."""
    if isinstance(error, TimeoutError):
        return True
    text = f"{type(error).__name__} {error}".lower()
    return any(sign in text for sign in BUSY_SIGNS)


def start_seconds() -> float:
    """How long Ray's start may be tried in all (``COGYM_RAY_START_SECONDS``)."""
    given = os.environ.get(START_SECONDS_VARIABLE, "").strip()
    try:
        seconds = float(given) if given else DEFAULT_START_SECONDS
    except ValueError:
        raise ValueError(f"{START_SECONDS_VARIABLE}={given!r}: give a number of seconds") from None
    return max(0.0, seconds)


def with_start_retries(what: str, step: Callable[[], T], *,
                       undo: Callable[[], None] | None = None,
                       budget: float | None = None,
                       sleep: Callable[[float], None] = time.sleep) -> T:
    """``step()``, tried again while it fails because Ray is busy, within ``budget`` seconds
    (``COGYM_RAY_START_SECONDS`` when not given); ``undo()`` runs after each failed try (leave a
    half-joined cluster). Raises :class:`RayStartFailed` with what to do when time runs out."""
    budget = start_seconds() if budget is None else budget
    waited, wait, tries = 0.0, FIRST_WAIT_SECONDS, 0
    while True:
        tries += 1
        try:
            return step()
        except Exception as error:
            if undo is not None:
                try:
                    undo()
                except Exception:  # the step's error is the one to report
                    log.debug("undoing a failed Ray start failed too", exc_info=True)
            if not is_busy(error):
                raise
            if waited + wait > budget:
                raise RayStartFailed(
                    f"Ray could not {what}: the machine is busy ({_first_line(error)}; "
                    f"{tries} tries over {waited:.0f} s). Run on the in-process engine instead "
                    "(--engine inprocess, with --workers N to use N processes), or give Ray "
                    f"more time: {START_SECONDS_VARIABLE}={max(2 * budget, 120):.0f}"
                ) from error
            log.warning("Ray could not %s (%s); trying again in %.0f s", what,
                        _first_line(error), wait)
            sleep(wait)
            waited += wait
            wait *= 2


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}"[:200]


__all__ = ["BUSY_SIGNS", "DEFAULT_START_SECONDS", "START_SECONDS_VARIABLE", "RayStartFailed",
           "is_busy", "start_seconds", "with_start_retries"]
