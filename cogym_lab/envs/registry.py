"""Find task environments by name: built-ins plus any package's ``cogym_lab.envs`` entry points."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from cogym_lab.core import CoEnv
from cogym_lab.core.plan_env import with_plans
from cogym_lab.core.plugins import installed_entry_points
from cogym_lab.core.protocol import get_protocol
from cogym_lab.datasets import reading_from

EnvFactory = Callable[..., CoEnv]

_BUILTIN = {
    "todo": "cogym_lab.envs.todo:TodoEnv",
    "travel_planning": "cogym_lab.envs.travel_planning:TravelPlanningEnv",
    "related_work": "cogym_lab.envs.related_work:RelatedWorkEnv",
    "tabular_analysis": "cogym_lab.envs.tabular_analysis:TabularAnalysisEnv",
    "kitchen": "cogym_lab.envs.kitchen:KitchenEnv",
}
_registered: dict[str, EnvFactory] = {}
#: The task a command runs when none is named: the example, which needs no LM and no data.
EXAMPLE_TASK = "todo"


def register_env(name: str, factory: EnvFactory) -> None:
    """Make ``make_env(name, ...)`` call ``factory``. Later registrations win."""
    _registered[name] = factory


def registered_env(name: str) -> EnvFactory | None:
    """The factory registered as ``name`` in this process with :func:`register_env` (``None``
    for a built-in task, an installed package's, or an unknown name): what a fresh process
    would not find by the name alone."""
    return _registered.get(name)


def available_envs() -> list[str]:
    names = set(_BUILTIN) | set(_registered)
    names |= {ep.name for ep in installed_entry_points("cogym_lab.envs")}
    return sorted(names)


def make_env(name: str, instance: int | None = None, *, protocol: str | None = None,
             **env_args: Any) -> CoEnv:
    """Build the env registered as ``name``: instance number ``instance`` of the task, if given,
    with ``env_args`` on top, scored by ``protocol`` (the default protocol when not given).

    The protocol may choose the instance set, so it is applied before the instance is picked.
    An env whose constructor takes no ``protocol`` gets it as an attribute. ``plans=True``
    gives the task interactive plans (``core.plan_env.with_plans``).
    """
    factory = _resolve(name)
    if env_args.pop("plans", False):
        factory = with_plans(factory)  # type: ignore[arg-type]  # with_plans checks it
    protocol = get_protocol(protocol or env_args.pop("protocol", None)).name
    takes_protocol = _accepts(factory, "protocol")
    if instance is not None:
        numbered = getattr(factory, "instances", None)  # CoEnv.instances, or a factory's own
        if not callable(numbered):
            raise TypeError(f"Task {name!r} has no numbered instances: its factory has no "
                            f"instances()")
        # the instances of the data directory the env will read (``instances()`` looks it up
        # itself), not of the default one: they differ in number when a sample stands in there
        with reading_from(env_args.get("data_dir")):
            instances = numbered(protocol)
        if not 0 <= instance < len(instances):
            raise IndexError(f"Task {name!r} has instances 0 to {len(instances) - 1}; "
                             f"there is no instance {instance}.")
        env_args = {**instances[instance], **env_args}
    env = factory(**env_args, **({"protocol": protocol} if takes_protocol else {}))
    env.protocol = protocol
    return env


def _accepts(factory: EnvFactory, parameter: str) -> bool:
    try:
        return parameter in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin or C callable: pass only what it documents
        return False


def task_class(name: str) -> EnvFactory | None:
    """The factory registered as ``name`` (usually its CoEnv class), or ``None`` when this
    installation does not have that task."""
    try:
        return _resolve(name)
    except (KeyError, ImportError):
        return None


def _resolve(name: str) -> EnvFactory:
    if name in _registered:
        return _registered[name]
    for ep in installed_entry_points("cogym_lab.envs"):
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
