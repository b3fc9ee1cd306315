"""The Tabular Analysis task: DiscoveryBench-Real queries, analysed in a real Jupyter kernel, with
findings judged against the gold hypothesis."""

from typing import Any

__all__ = ["TabularAnalysisEnv"]


def __getattr__(name: str) -> Any:  # the data and the grader need no env
    if name == "TabularAnalysisEnv":
        from cogym_lab.envs.tabular_analysis.env import TabularAnalysisEnv

        return TabularAnalysisEnv
    raise AttributeError(name)
