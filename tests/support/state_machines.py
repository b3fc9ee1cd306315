"""Shared parts of the stateful property tests of the coordinator and the nodes: running a
machine, checking that the results log replays, catching what the nodes log as errors."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine

from cogym_lab.core import Action
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import Event
from cogym_lab.nodes.restore import replay_events
from cogym_lab.nodes.results import read_events


def run_machine(machine: type[RuleBasedStateMachine], examples: int, steps: int) -> None:
    """Run a state machine for ``examples`` runs of up to ``steps`` steps, with no deadline
    (a step drives a real event loop, whose time varies with the machine's load)."""
    run = machine.TestCase
    run.settings = settings(max_examples=examples, stateful_step_count=steps, deadline=None,
                            suppress_health_check=[HealthCheck.too_slow,
                                                   HealthCheck.filter_too_much])
    run("runTest").runTest()


def replay_the_log(directory: Path, logged: Sequence[Event], replica: Coordinator,
                   replayed_up_to: int) -> list[Event]:
    """Read the results log back (``events.jsonl`` in ``directory``), check it holds exactly the
    events ``logged`` saw applied, and replay those past ``replayed_up_to`` on ``replica``.
    Returns the events read back."""
    read_back = read_events(directory)
    assert [e.model_dump(mode="json") for e in read_back] == [
        e.model_dump(mode="json") for e in logged]
    for _ in replay_events(replica, read_back[replayed_up_to:]):
        pass
    return read_back


class ErrorRecords(logging.Handler):
    """Collects what the nodes log at ERROR: a step, an observer or a log that failed."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def on_the_bus(raw: Any) -> Any:
    """An action as a member's transport sends it: an Action travels as its plain fields."""
    return {"name": raw.name, "args": raw.args} if isinstance(raw, Action) else raw
