"""Where the panel's browser code lives: ``static/`` in this package, the repository's ``js/``."""

from __future__ import annotations

from pathlib import Path

STATIC_DIR = Path(__file__).resolve().parent / "static"
ESM_PATH = STATIC_DIR / "session_panel.js"
CSS_PATH = STATIC_DIR / "session_panel.css"


def panel_esm() -> str:
    """The panel's ES module, as text."""
    return ESM_PATH.read_text(encoding="utf-8")


def panel_css() -> str:
    """The panel's style sheet, as text."""
    return CSS_PATH.read_text(encoding="utf-8")
