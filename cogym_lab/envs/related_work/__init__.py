"""The Related Work task: paper search over a 345k-paper corpus, a shared library with stable
citation numbers, drafting from the library, and a rubric-based LM judge."""

from typing import Any

__all__ = ["RelatedWorkEnv"]


def __getattr__(name: str) -> Any:  # importing a submodule (the index, say) needs no env
    if name == "RelatedWorkEnv":
        from cogym_lab.envs.related_work.env import RelatedWorkEnv

        return RelatedWorkEnv
    raise AttributeError(name)
