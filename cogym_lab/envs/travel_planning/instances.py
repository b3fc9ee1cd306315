"""The 102 travel-planning queries (TravelPlanner validation, medium and hard, with the hidden
preferences of the Collaborative Gym release), read from
``<data dir>/travel_planning/validation_with_hidden_profile.csv``; the first 12 of them when the
bundled sample stands in (see :func:`~cogym_lab.envs.travel_planning.database.travel_dir`)."""

from __future__ import annotations

import ast
import csv
import threading
from pathlib import Path
from typing import Any

from cogym_lab.envs.travel_planning.database import VALIDATION_CSV, travel_dir
from cogym_lab.envs.travel_planning.records import TravelInstance

__all__ = ["CONSTRAINT_KEYS", "load_instances", "parse_instance"]

CONSTRAINT_KEYS = ("house rule", "cuisine", "room type", "transportation")

_cache: dict[Path, list[TravelInstance]] = {}
_lock = threading.Lock()


def _literal(text: str, what: str, index: int) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError) as error:
        raise ValueError(f"row {index}: cannot read {what} {text[:80]!r}: {error}") from None


def _constraint_value(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):  # e.g. several cuisines
        return ", ".join(str(v) for v in value) if value else None
    text = str(value).strip()
    return text or None


def parse_instance(index: int, row: dict[str, str]) -> TravelInstance:
    """One CSV row as a :class:`TravelInstance` (``index`` is its row number from 0)."""
    dates = _literal(row["date"], "date", index)
    constraint = _literal(row.get("local_constraint") or "{}", "local_constraint", index) or {}
    preferences = _literal(row.get("preferences") or "[]", "preferences", index) or []
    return TravelInstance(
        index=index,
        query=row["query"].strip(),
        level=row["level"].strip(),
        origin=row["org"].strip(),
        destination=row["dest"].strip(),
        days=int(float(row["days"])),
        visiting_city_number=int(float(row["visiting_city_number"])),
        dates=tuple(str(d).strip() for d in dates),
        people=int(float(row["people_number"])),
        budget=int(float(row["budget"])),
        local_constraint={key: _constraint_value(constraint.get(key)) for key in CONSTRAINT_KEYS},
        preferences=tuple(str(p).strip() for p in preferences if str(p).strip()),
    )


def load_instances(data_dir: str | Path | None = None) -> list[TravelInstance]:
    """All queries, in file order (``index`` = row number from 0). Cached per folder (the sample
    and the full data apart); the list returned is a copy. Raises
    :class:`cogym_lab.datasets.DataMissing` when files are missing."""
    folder = travel_dir(data_dir).resolve()
    with _lock:
        instances = _cache.get(folder)
        if instances is None:
            with open(folder / VALIDATION_CSV, newline="", encoding="utf-8") as handle:
                rows = list(csv.DictReader(handle))
            instances = _cache[folder] = [parse_instance(i, row) for i, row in enumerate(rows)]
    return list(instances)
