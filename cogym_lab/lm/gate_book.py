"""The bookkeeping of a gate: who holds a slot, how many requests each pool started lately, which
keys are slowed down. Plain data and a clock passed in: no locks, no waiting, no event loop.

:class:`cogym_lab.lm.limits.LocalGate` wraps one :class:`GateBook` in a lock and makes callers wait;
the cluster-wide gate hosts that local gate in a Ray actor. Kept apart so that the rules can be
tested on their own with a fake clock (tests/lm/test_provider_limits.py does, with hypothesis).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cogym_lab.lm.limit_rules import ProviderLimits

__all__ = ["FREE", "GateBook", "LimitState", "Ticket", "describe_states"]

Pool = tuple[str, int]  # (name, limit)


@dataclass(frozen=True)
class Ticket:
    """A slot one request holds: its key and the in-flight pool it counts in (if any)."""

    key: str
    flight_pool: str | None = None


#: The slot of a request that nothing limits: giving it back changes nothing.
FREE = Ticket("")


@dataclass(frozen=True)
class LimitState:
    """How one pool (or one slowed-down key) stands, for a progress bar."""

    name: str
    in_flight: int = 0
    max_in_flight: int | None = None
    waiting: int = 0
    recent: int = 0  # requests started in the last rate_window seconds
    requests_per_minute: int | None = None
    rate_window: float = 60.0
    slowed_for: float = 0.0  # seconds before a slowed-down key may send again

    def describe(self) -> str:
        """``gpt-4o: 8/8 in flight, 12 waiting, 58/60 rpm, slowed 3s``."""
        parts = []
        if self.max_in_flight is not None:
            parts.append(f"{self.in_flight}/{self.max_in_flight} in flight")
        if self.waiting:
            parts.append(f"{self.waiting} waiting")
        if self.requests_per_minute is not None:
            per = "rpm" if self.rate_window == 60.0 else f"per {self.rate_window:g}s"
            parts.append(f"{self.recent}/{self.requests_per_minute} {per}")
        if self.slowed_for > 0:
            parts.append(f"slowed {self.slowed_for:.0f}s")
        return f"{self.name}: {', '.join(parts)}" if parts else ""


def describe_states(states: list[LimitState]) -> str:
    """Every pool's state in one line, ``""`` when nothing is limited or slowed down."""
    return "; ".join(text for state in states if (text := state.describe()))


class GateBook:
    """Counts for every pool of one set of :class:`ProviderLimits`."""

    def __init__(self, limits: ProviderLimits | None = None) -> None:
        self._limits = limits or ProviderLimits()
        self._pools: dict[str, tuple[Pool | None, Pool | None]] = {}  # by key: (flight, rate)
        self._in_flight: dict[str, int] = {}
        self._starts: dict[str, deque[float]] = {}
        self._slowed: dict[str, float] = {}  # key -> clock time the slowdown ends

    @property
    def limits(self) -> ProviderLimits:
        return self._limits

    @limits.setter
    def limits(self, limits: ProviderLimits) -> None:
        """New limits: slots already held stay counted in the pools they were taken from."""
        self._limits = limits
        self._pools.clear()

    @property
    def free(self) -> bool:
        """Nothing is limited and nothing slowed down: every request may go at once."""
        return self._limits.is_empty and not self._slowed

    def pools(self, key: str) -> tuple[Pool | None, Pool | None]:
        """The in-flight pool and the rate pool of ``key`` (``None``: not limited)."""
        found = self._pools.get(key)
        if found is None:
            found = (self._limits.pool(key, "max_in_flight"),
                     self._limits.pool(key, "requests_per_minute"))
            self._pools[key] = found
        return found

    def take(self, key: str, now: float) -> Ticket | float | None:
        """A slot for a request under ``key`` if one may start at clock time ``now``. Else the
        seconds before one might (a full rate window, a slowdown), or ``None`` when only a slot
        given back can free one."""
        until = self._slowed.get(key)
        if until is not None:
            if until > now:
                return until - now
            del self._slowed[key]
        flight, rate = self.pools(key)
        if flight is not None and self._in_flight.get(flight[0], 0) >= flight[1]:
            return None
        if rate is not None:
            starts = self._recent_starts(rate[0], now)
            if len(starts) >= rate[1]:
                return max(starts[0] + self._limits.rate_window - now, 1e-3)
            starts.append(now)
        if flight is None:
            return Ticket(key)
        self._in_flight[flight[0]] = self._in_flight.get(flight[0], 0) + 1
        return Ticket(key, flight[0])

    def give_back(self, ticket: Ticket) -> None:
        """The request of ``ticket`` is over (answered, failed or cancelled)."""
        pool = ticket.flight_pool
        if pool is None:
            return
        left = self._in_flight.get(pool, 0) - 1
        if left > 0:
            self._in_flight[pool] = left
        else:
            self._in_flight.pop(pool, None)

    def slow_down(self, key: str, seconds: float, now: float) -> None:
        """No request under ``key`` starts before ``seconds`` from ``now`` (a later end that is
        already set stays)."""
        if seconds > 0:
            self._slowed[key] = max(self._slowed.get(key, now), now + seconds)

    def in_flight(self, pool: str) -> int:
        return self._in_flight.get(pool, 0)

    def _recent_starts(self, pool: str, now: float) -> deque[float]:
        starts = self._starts.setdefault(pool, deque())
        horizon = now - self._limits.rate_window
        while starts and starts[0] <= horizon:
            starts.popleft()
        return starts

    def states(self, now: float, waiting: Mapping[str, int] | None = None) -> list[LimitState]:
        """Every limited pool and slowed-down key, with the callers waiting (by key) counted
        in each pool they wait for."""
        rows: dict[str, dict[str, Any]] = {}

        def row(name: str) -> dict[str, Any]:
            return rows.setdefault(name, {})

        for flight, rate in list(self._pools.values()):
            for found, field in ((flight, "max_in_flight"), (rate, "requests_per_minute")):
                if found is not None:
                    row(found[0])[field] = found[1]
        for name, count in self._in_flight.items():
            row(name)["in_flight"] = count
        for name, values in rows.items():
            if name in self._starts:
                values["recent"] = len(self._recent_starts(name, now))
        for key, count in (waiting or {}).items():
            for name in {found[0] for found in self.pools(key) if found is not None}:
                row(name)["waiting"] = row(name).get("waiting", 0) + count
        for key, until in list(self._slowed.items()):
            if until > now:
                row(key)["slowed_for"] = until - now
            else:
                del self._slowed[key]
        return [LimitState(name=name, rate_window=self._limits.rate_window, **values)
                for name, values in sorted(rows.items())]
