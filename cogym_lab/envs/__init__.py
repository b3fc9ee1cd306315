"""Task environments, one package per task, and the registry that finds them."""

from cogym_lab.envs.registry import available_envs, load_object, make_env, register_env

__all__ = ["available_envs", "load_object", "make_env", "register_env"]
