"""The Related Work task: paper search over a 442k-paper corpus (two files read with a supersede
rule), a shared library with stable citation numbers, drafting from the library, and a
rubric-based LM judge scored by protocol."""

from typing import Any

__all__ = ["RelatedWorkEnv"]


def __getattr__(name: str) -> Any:  # importing a submodule (the index, say) needs no env
    if name == "RelatedWorkEnv":
        from cogym_lab.envs.related_work.env import RelatedWorkEnv

        return RelatedWorkEnv
    raise AttributeError(name)
