"""What ends a round of collaboration, shared by the simulated user (which rates each round as
it ends) and the evaluation suite (which splits a finished log into rounds).

A round ends when the human side hands the work back, by one of :data:`ROUND_STARTERS` taking
effect, after an agent acted.
"""

from __future__ import annotations

from cogym_lab.core.messages import EventType

#: The human side's acts that hand the work back to the agent and so start a new round.
ROUND_STARTERS = frozenset({EventType.MESSAGE, EventType.CONFIRM_ACCEPT,
                            EventType.CONFIRM_REJECT, EventType.PAUSE, EventType.RESUME})
