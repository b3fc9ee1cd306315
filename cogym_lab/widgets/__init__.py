"""Session panels for notebooks: an anywidget that follows one person seat of a session.

``SessionPanel.for_server(...)`` talks to a session hosted by the Jupyter server extension
straight from the browser; ``SessionPanel.for_local(...)`` relays a session hosted inside the
kernel through the widget's comm. The browser code is one ES module in ``static/`` (the
repository's ``js/`` folder); Yjs, for live editing of shared texts, is another
(``static/vendor/yjs.mjs``), sent to the browser as text and imported there.
"""

from cogym_lab.widgets.assets import CSS_PATH, ESM_PATH, YJS_PATH, panel_css, panel_esm, yjs_esm
from cogym_lab.widgets.panel import SessionPanel

__all__ = ["CSS_PATH", "ESM_PATH", "YJS_PATH", "SessionPanel", "panel_css", "panel_esm",
           "yjs_esm"]
