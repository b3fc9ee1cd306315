"""A task registered at run time (``register_env``) for the worker-process tests: defined at the
top level of an importable module, so its class reaches a spawned worker by reference."""

from __future__ import annotations

from typing import Any

from cogym_lab.envs.todo.env import TodoEnv


class TwoTodos(TodoEnv):
    """The todo task with two instances, both the first one's."""

    @classmethod
    def instances(cls, protocol: str = "cogym") -> list[dict[str, Any]]:
        return [TodoEnv.instances(protocol)[0]] * 2
