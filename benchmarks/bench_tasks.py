"""Tasks the benchmarks register: the todo task with as many instances as a batch needs.

A module of its own (this folder is on the path when a benchmark runs), not the script: a
worker process of the in-process engine finds the class here by its name, and the run's
provenance reads its source like any task's.
"""

from __future__ import annotations

import os
from typing import Any

from cogym_lab.envs.todo.env import TodoEnv

#: How many instances :class:`ManyTodo` has; the worker processes inherit it with the
#: environment.
INSTANCES_VARIABLE = "COGYM_BENCH_INSTANCES"


class ManyTodo(TodoEnv):
    """The todo task with ``$COGYM_BENCH_INSTANCES`` instances, all the camping trip."""

    @classmethod
    def instances(cls, protocol: str = "cogym") -> list[dict[str, Any]]:
        return [TodoEnv.instances(protocol)[0]] * int(os.environ.get(INSTANCES_VARIABLE, "1"))


def many_todo_instances(count: int) -> type:
    """:class:`ManyTodo` with ``count`` instances."""
    os.environ[INSTANCES_VARIABLE] = str(count)
    return ManyTodo
