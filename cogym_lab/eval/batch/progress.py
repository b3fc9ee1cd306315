"""Running cost of a batch (tokens, and dollars where prices are known) and its progress bar."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any, TextIO

from cogym_lab.core.member import SeatDriver
from cogym_lab.eval.batch.manifest import Price, TokenCount
from cogym_lab.lm import LM
from cogym_lab.lm.limits import Gate, current_gate

REFRESH_SECONDS = 1.0
#: The least time between two refreshes when sessions end: summing the running sessions' meters
#: costs time that grows with the batch, so a thousand sessions ending must not pay it each.
ENDED_REFRESH_SECONDS = 0.2


def lm_usage(lms: Mapping[str, LM]) -> dict[str, dict[str, Any]]:
    """Usage by source (a member's role, or an env attribute such as ``judge_lm``)."""
    return {source: {"model": lm.config.model, "prompt_tokens": lm.meter.prompt_tokens,
                     "completion_tokens": lm.meter.completion_tokens, "calls": lm.meter.calls,
                     "failures": lm.meter.failures}
            for source, lm in lms.items()}


def outside_usage(members: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The token use that outside agents in the team reported (a
    :class:`~cogym_lab.core.member.SeatDriver` with ``lm_usage()``), by role, in
    :func:`lm_usage`'s form: their LM is not the session's, so only they can say."""
    used = {}
    for role, member in members.items():
        report = getattr(member, "lm_usage", None)
        if isinstance(member, SeatDriver) and callable(report) and (record := report()):
            used[role] = record
    return used


def cost_usd(by_model: Mapping[str, TokenCount], prices: Mapping[str, Price]) -> float | None:
    """Dollars for the priced models; ``None`` when no model used has a price."""
    priced = [(count, prices[model]) for model, count in by_model.items() if model in prices]
    if not priced:
        return None
    return round(sum(c.prompt_tokens * p.input + c.completion_tokens * p.output
                     for c, p in priced) / 1e6, 6)


def short_count(number: int) -> str:
    """12345 -> ``12.3k``: tokens in a progress bar."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if number >= size:
            return f"{number / size:.1f}{suffix}"
    return str(number)


def _lm_totals(sessions: list[Mapping[str, LM]]) -> dict[str, TokenCount]:
    """The usage so far of these sessions' LMs, by model."""
    totals: dict[str, TokenCount] = {}
    for lms in sessions:
        for lm in lms.values():
            count = totals.setdefault(lm.config.model or "unknown", TokenCount())
            count.add(TokenCount(prompt_tokens=lm.meter.prompt_tokens,
                                 completion_tokens=lm.meter.completion_tokens,
                                 calls=lm.meter.calls))
    return totals


class CostMeter:
    """Token totals by model: finished sessions plus the live meters of the running ones.

    The sessions (on the in-process engine's thread) and the progress bar (on the caller's loop)
    use it at once: every table is read and changed under one lock."""

    def __init__(self, prices: Mapping[str, Price] | None = None) -> None:
        self.prices = dict(prices or {})
        self._lock = threading.Lock()
        self._done: dict[str, TokenCount] = {}
        self._live: dict[Any, Mapping[str, LM]] = {}
        # Usage of sessions running in other processes (Ray workers), by the worker reporting.
        self._remote: dict[Any, dict[str, TokenCount]] = {}

    def add(self, by_model: Mapping[str, TokenCount]) -> None:
        with self._lock:
            self._add(by_model)

    def _add(self, by_model: Mapping[str, TokenCount]) -> None:
        for model, count in by_model.items():
            self._done.setdefault(model, TokenCount()).add(count)

    def track(self, key: Any, lms: Mapping[str, LM]) -> None:
        with self._lock:
            self._live[key] = lms

    def settle(self, key: Any, by_model: Mapping[str, TokenCount]) -> None:
        """A session ended: its LMs stop being live and its usage becomes final."""
        with self._lock:
            self._live.pop(key, None)
            self._add(by_model)

    def report(self, source: Any, by_model: Mapping[str, TokenCount]) -> None:
        """The usage, so far, of the sessions running in another process (``source``, a
        worker); it replaces what that worker reported before."""
        with self._lock:
            self._remote[source] = dict(by_model)

    def live_totals(self) -> dict[str, TokenCount]:
        """Usage so far of the sessions running in this process, by model."""
        with self._lock:
            live = list(self._live.values())
        return _lm_totals(live)

    def totals(self) -> dict[str, TokenCount]:
        with self._lock:  # one moment's tables: a session settling now is counted once
            live = list(self._live.values())
            totals = {model: count.model_copy() for model, count in self._done.items()}
            remote = list(self._remote.values())
        for part in (_lm_totals(live), *remote):
            for model, count in part.items():
                totals.setdefault(model, TokenCount()).add(count)
        return totals

    def describe(self) -> str:
        totals = self.totals()
        text = "tokens=" + short_count(sum(c.total_tokens for c in totals.values()))
        dollars = cost_usd(totals, self.prices)
        return text if dollars is None else f"{text} cost=${dollars:.4f}"


class BatchProgress:
    """A tqdm bar over the batch's sessions, showing running cost and the error count.

    ``output`` is ``True`` for stderr, ``False`` for no bar, or a text stream to draw on.
    ``gate`` is the LM gate whose provider limits it shows (in flight / limit, callers waiting,
    requests in the rate window, slowdowns after a 429); ``None``: the process's current gate.
    Nothing is shown while nothing is limited or slowed down.
    """

    def __init__(self, total: int, *, done: int, meter: CostMeter, label: str,
                 output: bool | TextIO = True, gate: Gate | None = None) -> None:
        from tqdm import tqdm

        bar_class: type[tqdm[Any]] = tqdm
        if output is True:  # a notebook gets its widget bar, a terminal the text one
            from tqdm.auto import tqdm as auto_tqdm

            bar_class = auto_tqdm

        self.meter = meter
        self.errors = 0
        self.gate = gate
        stream = sys.stderr if output is True else (output or None)
        self.bar = bar_class(total=total, initial=done, desc=label, unit="session",
                             file=stream, disable=stream is None,
                             dynamic_ncols=stream is sys.stderr, mininterval=0.2)
        self._ticker: asyncio.Task[None] | None = None
        self._refreshed = 0.0
        self.refresh()

    def refresh(self) -> None:
        if self.bar.disable:
            return
        self._refreshed = time.monotonic()
        limits = (self.gate or current_gate()).describe()
        self.bar.set_postfix_str(f"{self.meter.describe()} errors={self.errors}"
                                 + (f" limits[{limits}]" if limits else ""), refresh=True)

    def session_ended(self, *, failed: bool) -> None:
        self.errors += failed
        self.bar.update(1)
        if time.monotonic() - self._refreshed >= ENDED_REFRESH_SECONDS:
            self.refresh()

    def start_ticking(self) -> None:
        """Refresh the running cost every second while sessions are under way."""
        self._ticker = asyncio.get_running_loop().create_task(self._tick())

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(REFRESH_SECONDS)
            self.refresh()

    async def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)
        self.refresh()
        self.bar.close()
