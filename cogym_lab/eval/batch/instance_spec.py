"""Which instances of a task a batch runs: ``"0:102"``, ``"0,3,5"``, ``"0:10,40,90:"`` or a list."""

from __future__ import annotations

from collections.abc import Iterable

InstanceSpec = str | int | Iterable[int] | None


def parse_instances(spec: InstanceSpec, count: int) -> list[int]:
    """The sorted, distinct instance numbers ``spec`` names, for a task with ``count`` instances.

    A string is a comma-separated list of numbers and ranges. A range is ``START:STOP`` (STOP
    excluded, as in Python slices) with an optional ``:STEP``; a missing START means 0 and a
    missing STOP means the task's last instance. ``None`` or ``"all"`` means every instance.
    Raises ``ValueError`` for text that is not a spec, an empty selection, or a number outside
    ``0..count-1``.
    """
    if spec is None or (isinstance(spec, str) and spec.strip().lower() in ("all", "")):
        numbers = list(range(count))
    elif isinstance(spec, str):
        numbers = [n for part in spec.split(",") for n in _parse_part(part.strip(), count)]
    elif isinstance(spec, int):
        numbers = [spec]
    else:
        numbers = [int(n) for n in spec]
    outside = sorted({n for n in numbers if not 0 <= n < count})
    if outside:
        shown = ", ".join(str(n) for n in outside[:5]) + (" ..." if len(outside) > 5 else "")
        raise ValueError(f"the task has instances 0 to {count - 1}; there is no instance {shown}")
    if not numbers:
        raise ValueError(f"the selection {spec!r} names no instance")
    return sorted(set(numbers))


def _parse_part(part: str, count: int) -> range:
    try:
        if ":" not in part:
            number = int(part)
            return range(number, number + 1)
        pieces = part.split(":")
        if len(pieces) > 3:
            raise ValueError(part)
        start = int(pieces[0]) if pieces[0].strip() else 0
        stop = int(pieces[1]) if pieces[1].strip() else count
        step = int(pieces[2]) if len(pieces) == 3 and pieces[2].strip() else 1
        if step <= 0:
            raise ValueError(part)
        return range(start, stop, step)
    except ValueError:
        raise ValueError(f"cannot read {part!r} as instances: use numbers and START:STOP "
                         "ranges separated by commas, e.g. 0:102 or 0,3,5") from None
