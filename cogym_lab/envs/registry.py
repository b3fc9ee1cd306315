"""Find task environments by name: built-ins plus any package's ``cogym_lab.envs`` entry points."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from cogym_lab.core import CoEnv

EnvFactory = Callable[..., CoEnv]

_BUILTIN = {
    "todo": "cogym_lab.envs.todo:TodoEnv",
    "travel_planning": "cogym_lab.envs.travel_planning:TravelPlanningEnv",
    "related_work": "cogym_lab.envs.related_work:RelatedWorkEnv",
    "tabular_analysis": "cogym_lab.envs.tabular_analysis:TabularAnalysisEnv",
}
_registered: dict[str, EnvFactory] = {}


def register_env(name: str, factory: EnvFactory) -> None:
    """Make ``make_env(name, ...)`` call ``factory``. Later registrations win."""
    _registered[name] = factory


def available_envs() -> list[str]:
    names = set(_BUILTIN) | set(_registered)
    names |= {ep.name for ep in entry_points(group="cogym_lab.envs")}
    return sorted(names)


def make_env(name: str, instance: int | None = None, **env_args: Any) -> CoEnv:
    """Build the env registered as ``name``: instance number ``instance`` of the task, if given,
    with ``env_args`` on top."""
    factory = _resolve(name)
    if instance is not None:
        instances = factory.instances()  # type: ignore[attr-defined]
        if not 0 <= instance < len(instances):
            raise IndexError(f"Task {name!r} has instances 0 to {len(instances) - 1}; "
                             f"there is no instance {instance}.")
        env_args = {**instances[instance], **env_args}
    return factory(**env_args)


def _resolve(name: str) -> EnvFactory:
    if name in _registered:
        return _registered[name]
    for ep in entry_points(group="cogym_lab.envs"):
        if ep.name == name:
            return ep.load()
    if name in _BUILTIN:
        return load_object(_BUILTIN[name])
    raise KeyError(f"Unknown task {name!r}. Available: {', '.join(available_envs())}.")


def load_object(path: str) -> Any:
    """Import ``package.module:attribute``."""
    module, _, attribute = path.partition(":")
    if not attribute:
        raise ValueError(f"Expected 'package.module:attribute', got {path!r}")
    return getattr(importlib.import_module(module), attribute)
