"""The built-in example task: a shared packing checklist."""

from cogym_lab.envs.todo.env import TodoEnv
from cogym_lab.envs.todo.example_team import ExampleAgent, ExampleUser

__all__ = ["ExampleAgent", "ExampleUser", "TodoEnv"]
