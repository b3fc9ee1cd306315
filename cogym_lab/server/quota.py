"""How many sessions may run at once: per user and per server.

A create (or resume) takes a place before it starts building, so requests that arrive together
cannot all pass the check and then all start.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from cogym_lab.runtime.hosting import HostingError
from cogym_lab.server.limits import ServerLimits, TokenBucket


class SessionQuota:
    """``running(owner)`` counts the sessions running now (all of them for ``None``)."""

    def __init__(self, limits: ServerLimits, running: Callable[[str | None], int]) -> None:
        self.limits = limits
        self.running = running
        self.starting: Counter[str] = Counter()

    @contextmanager
    def place(self, who: str) -> Iterator[None]:
        """Hold a place for one more session of ``who`` while it starts; ``HostingError`` 429
        when the user or the server has no room."""
        mine = self.running(who) + self.starting[who]
        if mine >= self.limits.max_sessions_per_user:
            raise HostingError(f"You have {mine} running sessions, the most one user may have "
                               "here (c.CogymLab.max_sessions_per_user). End one first.",
                               status=429)
        everyone = self.running(None) + sum(self.starting.values())
        if everyone >= self.limits.max_sessions:
            raise HostingError(f"The server runs {everyone} sessions, the most it takes "
                               "(c.CogymLab.max_sessions). Try again when one has ended.",
                               status=429)
        self.starting[who] += 1
        try:
            yield
        finally:
            self.starting[who] -= 1
            if self.starting[who] <= 0:
                del self.starting[who]


class ActionRates:
    """One rate bucket per (user, session) for actions sent over REST, the few most recent
    kept (a bucket left alone refills anyway, so forgetting it loses nothing)."""

    def __init__(self, limits: ServerLimits, keep: int = 1024) -> None:
        self.limits = limits
        self.keep = keep
        self.buckets: OrderedDict[tuple[str, str], TokenBucket] = OrderedDict()

    def allow(self, who: str, session_id: str) -> bool:
        key = (who, session_id)
        bucket = self.buckets.pop(key, None) or TokenBucket(self.limits.ws_actions_per_second,
                                                            self.limits.ws_action_burst)
        self.buckets[key] = bucket
        while len(self.buckets) > self.keep:
            self.buckets.popitem(last=False)
        return bucket.take()
