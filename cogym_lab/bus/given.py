"""Where the messages a subscription returned sit in their channel, for ``consumed``.

A message reaches its receiver as a plain dict, without its place in the channel; a reader that
says it consumed one hands that dict back, so the subscription remembers the places of the last
messages it returned, keyed by the dict itself.
"""

from __future__ import annotations

from collections import deque

#: How many of the messages a subscription returned it remembers the positions of, for
#: ``consumed`` (a reader says it is done with the message it just handled). Small: every
#: subscription from a channel's beginning keeps them, whether or not its reader consumes.
GIVEN_KEPT = 64


class GivenPositions:
    """Where the messages a subscription returned sit in their channel, newest last, looked up
    by the message object itself (a receiver holds it while it says it consumed it)."""

    __slots__ = ("_given",)

    def __init__(self) -> None:
        self._given: deque[tuple[int, object]] = deque(maxlen=GIVEN_KEPT)

    def add(self, message: object, position: object) -> None:
        """Remember where ``message`` sits; ``position`` must not hold the message itself (a
        reader that never consumes would keep its last messages alive)."""
        self._given.append((id(message), position))

    def take_through(self, message: object) -> object | None:
        """The position of ``message`` (forgetting it and every older one), or ``None`` if it
        is not one of the remembered. Newest first: an id reused after a message was freed can
        only belong to an older entry."""
        wanted = id(message)
        for index in range(len(self._given) - 1, -1, -1):
            if self._given[index][0] == wanted:
                position = self._given[index][1]
                for _ in range(index + 1):
                    self._given.popleft()
                return position
        return None
