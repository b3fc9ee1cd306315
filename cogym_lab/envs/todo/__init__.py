"""The built-in example task: a shared packing checklist, with its own rule-based team."""

from pathlib import Path

from cogym_lab.envs.todo.env import TodoEnv
from cogym_lab.envs.todo.example_team import ExampleAgent, ExampleUser

#: The task's rule-based team (``example``), found through the ``cogym_lab.teams`` entry point.
EXAMPLE_TEAM = Path(__file__).with_name("example.toml")

__all__ = ["EXAMPLE_TEAM", "ExampleAgent", "ExampleUser", "TodoEnv"]
