"""The ``data`` of a tabular session started from a notebook: your DataFrame, by name or value.

When the agent works in this very kernel (a notebook under a Jupyter server with cogym_lab), the
variable's name is enough: the agent reads ``df`` itself. Otherwise the agent gets a kernel of
its own, so the frame is written to a CSV file that the session copies in.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any


def user_namespace() -> dict[str, Any]:
    """The notebook's variables (empty outside IPython)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return {}
    shell = get_ipython()
    return shell.user_ns if shell is not None else {}


def resolve_data(data: Any, *, share_kernel: bool) -> str:
    """The ``data`` env arg for ``data``: a variable name, a CSV written from a frame, or an
    absolute file path. Raises ``ValueError`` when it is none of these."""
    namespace = user_namespace()
    if isinstance(data, str | os.PathLike):
        text = str(data)
        if text.isidentifier() and text in namespace:
            return text if share_kernel else save_frame(namespace[text], text)
        path = Path(text).expanduser()
        if path.exists():
            return str(path.resolve())
        raise ValueError(f"data={text!r} is neither a variable of this notebook nor a file.")
    name = next((key for key, value in namespace.items()
                 if value is data and not key.startswith("_")), None)
    if share_kernel and name:
        return name
    return save_frame(data, name or "data")


def save_frame(value: Any, name: str) -> str:
    """Write a DataFrame (or anything pandas can turn into one) to ``<tmp>/<name>.csv``."""
    import pandas as pd

    try:
        frame = value if isinstance(value, pd.DataFrame) else pd.DataFrame(value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"data must be a DataFrame, a variable name or a file path; "
                         f"{type(value).__name__} cannot become a table: {error}") from None
    path = Path(tempfile.mkdtemp(prefix="cogym-data-")) / f"{name}.csv"
    frame.to_csv(path, index=not isinstance(frame.index, pd.RangeIndex))
    return str(path)
