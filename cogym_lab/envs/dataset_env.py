"""The base of tasks whose instances come from a dataset in the data directory, and which declare
the files they read there."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from cogym_lab.core import CoEnv
from cogym_lab.core.protocol import DEFAULT_PROTOCOL, get_protocol
from cogym_lab.datasets import DataItem, DataSample


@dataclass
class DatasetEnv(CoEnv):
    """``instance`` picks one of the dataset's instances (``self.task``); ``data_dir`` says where
    the data is (see :func:`cogym_lab.datasets.data_dir`); ``protocol`` names the scoring
    protocol, which may choose the instance set and how the outcome is scored. Subclasses provide
    the loader and declare their :attr:`data_files`."""

    #: The files the task reads from the data directory, each with where to get it: what
    #: ``cogym-lab data`` checks and fetches, and what ``cogym_lab.datasets.require`` checks.
    data_files: ClassVar[tuple[DataItem, ...]] = ()
    #: The small part of the data that ships inside the package, read when nobody chose a data
    #: directory and the default one lacks :attr:`data_files` (see
    #: :func:`cogym_lab.datasets.task_folder`); None when the task has none.
    data_sample: ClassVar[DataSample | None] = None
    #: Whether this env's task came from the dataset: set by :meth:`__post_init__`. A subclass
    #: that takes a person's own task instead (a custom query about their own data) reads no
    #: dataset, and its session records no ``data`` (full or sample).
    reads_dataset = False

    instance: int = 0
    data_dir: str | None = None
    protocol: str = DEFAULT_PROTOCOL

    @classmethod
    @abc.abstractmethod
    def load_dataset(cls, data_dir: str | None, protocol: str = DEFAULT_PROTOCOL
                     ) -> Sequence[Any]:
        """All instances of the task under ``protocol``, in a stable order."""

    def __post_init__(self) -> None:
        super().__init__()
        self.protocol = get_protocol(self.protocol).name  # a clear error for an unknown name
        items = self.load_dataset(self.data_dir, self.protocol)
        if not 0 <= self.instance < len(items):
            raise ValueError(f"{self.name} has instances 0 to {len(items) - 1}, "
                             f"not {self.instance}.")
        self.task: Any = items[self.instance]
        self.reads_dataset = True

    @classmethod
    def data_report(cls, data_dir: Path, *, progress: bool = False) -> list[str]:
        """Lines ``cogym-lab data`` prints about the task's data beyond present or missing (e.g.
        how many papers a corpus holds). May be slow (``--no-coverage`` skips it); ``progress``
        allows a progress bar on stderr. None by default."""
        return []

    @classmethod
    def prepare_data(cls, data_dir: Path | None, *, progress: bool = False) -> list[str]:
        """Build ahead of time what the task's sessions would otherwise build on first use (a
        search index), so no session waits for it (``cogym-lab data --prepare``). ``data_dir``
        None means nobody chose one: the task prepares what its sessions would read then, its
        :attr:`data_sample` perhaps. Returns lines saying what was done; ``progress`` allows
        progress bars on stderr. Nothing by default."""
        return []

    @classmethod
    def instances(cls, protocol: str = DEFAULT_PROTOCOL) -> list[dict[str, Any]]:
        return [{"instance": i} for i in range(len(cls.load_dataset(None, protocol)))]

    def env_args(self) -> dict[str, Any]:
        return {"instance": self.instance, "protocol": self.protocol,
                **({"data_dir": self.data_dir} if self.data_dir else {})}
