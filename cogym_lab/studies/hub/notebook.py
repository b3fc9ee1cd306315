"""The notebook a participant opens: a line of words and one cell that shows the study."""

from __future__ import annotations

import json
from pathlib import Path

NOTEBOOK_NAME = "study.ipynb"

CELL = "from cogym_lab.widgets.study_flow import StudyFlow\nStudyFlow()"
WORDS = ("# Welcome\n\nRun the cell below (click into it, then press **Shift+Enter**) to see "
         "the study. You can close this tab and come back later: you will find your place.")


def notebook_text() -> str:
    cells = [{"cell_type": "markdown", "id": "study-welcome", "metadata": {}, "source": WORDS},
             {"cell_type": "code", "id": "study-flow", "metadata": {}, "execution_count": None,
              "outputs": [], "source": CELL}]
    return json.dumps({"cells": cells, "metadata": {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5}, indent=1)


def write_study_notebook(folder: str | Path, *, overwrite: bool = False) -> Path:
    """Write :data:`NOTEBOOK_NAME` into ``folder`` (kept when it exists, unless
    ``overwrite``); its path."""
    path = Path(folder) / NOTEBOOK_NAME
    if overwrite or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(notebook_text(), encoding="utf-8")
    return path


__all__ = ["CELL", "NOTEBOOK_NAME", "notebook_text", "write_study_notebook"]
