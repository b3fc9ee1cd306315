"""Where the browser code of the panel and the trajectory viewer lives: ``static/`` in this
package, the repository's ``js/``."""

from __future__ import annotations

from pathlib import Path

STATIC_DIR = Path(__file__).resolve().parent / "static"
ESM_PATH = STATIC_DIR / "session_panel.js"
CSS_PATH = STATIC_DIR / "session_panel.css"
VIEWER_ESM_PATH = STATIC_DIR / "trajectory_viewer.js"
VIEWER_CSS_PATH = STATIC_DIR / "trajectory_viewer.css"
#: Yjs and lib0 as one ES module (made by scripts/vendor_yjs.sh): the panel's live editing.
YJS_PATH = STATIC_DIR / "vendor" / "yjs.mjs"


def panel_esm() -> str:
    """The panel's ES module, as text."""
    return ESM_PATH.read_text(encoding="utf-8")


def panel_css() -> str:
    """The panel's style sheet, as text."""
    return CSS_PATH.read_text(encoding="utf-8")


def yjs_esm() -> str:
    """Yjs as one ES module, as text (the panel imports it in the browser)."""
    return YJS_PATH.read_text(encoding="utf-8")


def viewer_esm() -> str:
    """The trajectory viewer's ES module, as text."""
    return VIEWER_ESM_PATH.read_text(encoding="utf-8")


def viewer_css() -> str:
    """The trajectory viewer's style sheet after the panel's (it draws the panel's views)."""
    return panel_css() + "\n" + VIEWER_CSS_PATH.read_text(encoding="utf-8")
