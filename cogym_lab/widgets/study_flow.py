"""``StudyFlow``: the participant's study in a notebook cell (an anywidget).

The browser code (``js/study_flow.js``) talks to the study API of the Jupyter server the page
came from, with the page's login, and shows each step; a session step embeds the session panel
(its module travels in ``panel_module``, as the trajectory viewer's does). The kernel only
hands over the browser code: the participant's state lives on the server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
from traitlets import Unicode

from cogym_lab.widgets.assets import STATIC_DIR, panel_css, panel_esm, yjs_esm
from cogym_lab.widgets.fallback import Fallback, TextFallback

STUDY_ESM_PATH = STATIC_DIR / "study_flow.js"
STUDY_CSS_PATH = STATIC_DIR / "study_flow.css"


def study_css() -> str:
    """The panel's style sheet, then the study's (the study embeds the panel)."""
    return panel_css() + "\n" + Path(STUDY_CSS_PATH).read_text(encoding="utf-8")


class StudyFlow(TextFallback, anywidget.AnyWidget):
    """Consent, instructions, practice, sessions, questionnaires and thanks, step by step."""

    _esm = STUDY_ESM_PATH
    _css = study_css()

    base_url = Unicode("", help="The Jupyter server's base URL; empty: the page's own "
                                "(JupyterLab's page config).").tag(sync=True)
    panel_module = Unicode("", help="The session panel's ES module, as text.").tag(sync=True)
    yjs_module = Unicode("", help="Yjs as one ES module, for the panel's live editing."
                         ).tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("panel_module", panel_esm())
        kwargs.setdefault("yjs_module", yjs_esm())
        super().__init__(**kwargs)

    def fallback(self) -> Fallback:
        """What a participant reads where the study cannot be drawn (a notebook read as a file,
        a restarted kernel): how to bring it back. Their place in the study is on the server."""
        words = Fallback("Your study, step by step")
        words.add("The study shows only while this notebook's kernel runs; your answers so far "
                  "are kept. To see it again, run:",
                  "from cogym_lab.widgets.study_flow import StudyFlow\nStudyFlow()")
        return words


__all__ = ["StudyFlow", "study_css"]
