"""The panel's ES module on a test page of its own, with a stand-in anywidget model: what the
panel sends lands in ``window.sent``, ``window.deliver(message)`` is the kernel relaying a custom
message, ``window.mod`` is the module and ``window.modelState`` the widget's traits. Served by
the browser tests (sync and async Playwright alike) from a made-up origin.

The traits get Yjs (``yjs_module``) as a real panel's do, read from the page's ``yjs.mjs``,
unless the state given names it (``""``: a panel without live editing)."""

from __future__ import annotations

from cogym_lab.widgets import panel_css, panel_esm, yjs_esm

STAND_IN_PAGE = """<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="session_panel.css"></head><body><div id="root"></div>
<script type="module">
import panel from "./session_panel.js";
import * as mod from "./session_panel.js";
const params = new URLSearchParams(location.search);
const state = JSON.parse(params.get("state"));
if (!("yjs_module" in state) && !state.readonly) {
  state.yjs_module = await (await fetch("./yjs.mjs")).text();
}
const listeners = new Set();
window.sent = [];
window.mod = mod;
window.deliver = (message) => listeners.forEach((listener) => listener(message));
const model = {
  get: (key) => state[key],
  set: (key, value) => { state[key] = value; },
  save_changes() {},
  on(event, listener) { if (event === "msg:custom") listeners.add(listener); },
  off(event, listener) { listeners.delete(listener); },
  send(message) { window.sent.push(message); },
};
window.modelState = state;
window.teardown = await panel.render({ model, el: document.getElementById("root") });
window.ready = true;
</script></body></html>"""


def page_files() -> dict[str, tuple[str, str]]:
    """The test page's files under ``/cogym-panel-test/``: name -> (body, content type)."""
    return {"index.html": (STAND_IN_PAGE, "text/html"),
            "session_panel.js": (panel_esm(), "text/javascript"),
            "session_panel.css": (panel_css(), "text/css"),
            "yjs.mjs": (yjs_esm(), "text/javascript")}
