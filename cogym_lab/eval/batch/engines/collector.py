"""The garbage collector's setting for a large in-process batch: see
:mod:`cogym_lab.core.collector` (shared with the Jupyter server's hosted sessions)."""

from __future__ import annotations

from cogym_lab.core.collector import YOUNG_THRESHOLD, batch_collector

__all__ = ["YOUNG_THRESHOLD", "batch_collector"]
