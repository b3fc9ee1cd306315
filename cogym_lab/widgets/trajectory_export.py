"""The trajectory viewer as one HTML file that opens without Jupyter.

Everything is inside the file: the viewer's module, the panel's module (the viewer draws the
members' views with it), both style sheets and the session's payload. The code and the payload
are gzipped and written in base64, so no text from the session is ever part of the page's
markup; a small inline module unpacks them with the browser's ``DecompressionStream`` and starts
the viewer on a stand-in for the widget's model. The position (event and member) lives in the
address's fragment (``#event=12&member=user``), so a reload shows the same event.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import re
from pathlib import Path
from typing import Any

from cogym_lab.records.viewer import Trajectory, build_trajectory
from cogym_lab.widgets.assets import panel_esm, viewer_css, viewer_esm

_CODE_ID = "cogym-trajectory-code"
_DATA_ID = "cogym-trajectory-data"
_ROOT_ID = "cogym-trajectory"

#: Unpacks the code and the payload, adds the style sheet and starts the viewer. Written here
#: rather than in the viewer's module because it must run before that module is loaded.
_BOOT = """
const read = (id) => Uint8Array.from(atob(document.getElementById(id).textContent.trim()),
  (c) => c.charCodeAt(0));
const gunzip = (bytes) => new Response(new Blob([bytes]).stream()
  .pipeThrough(new DecompressionStream("gzip"))).text();
const root = document.getElementById("@ROOT@");
try {
  const bundle = JSON.parse(await gunzip(read("@CODE@")));
  const style = document.createElement("style");
  style.textContent = bundle.css;
  document.head.append(style);
  const url = URL.createObjectURL(new Blob([bundle.viewer_module], { type: "text/javascript" }));
  const viewer = await import(url);
  URL.revokeObjectURL(url);
  await viewer.standalone(root, { ...bundle.state, panel_module: bundle.panel_module,
    payload: read("@DATA@") });
} catch (error) {
  root.textContent = `This trajectory could not be shown: ${error}`;
}
"""

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@TITLE@</title>
<style>body { margin: 12px; background: #fff; }</style>
</head>
<body>
<div id="@ROOT@">Loading the trajectory…</div>
<noscript>The trajectory viewer needs JavaScript.</noscript>
<script type="application/octet-stream" id="@CODE@">@CODE_DATA@</script>
<script type="application/octet-stream" id="@DATA@">@PAYLOAD@</script>
<script type="module">@BOOT@</script>
</body>
</html>
"""


_IDS = {"ROOT": _ROOT_ID, "CODE": _CODE_ID, "DATA": _DATA_ID}


def _fill(template: str, values: dict[str, str]) -> str:
    """``template`` with each ``@NAME@`` replaced by its value. Neither ``%`` nor ``{}``
    formatting: the boot script is full of braces, and the values go in once, in one pass, so a
    value never has a placeholder of its own filled in."""
    return re.sub(r"@([A-Z_]+)@", lambda match: values[match.group(1)], template)


def _packed(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def html_document(trajectory: Trajectory, *, sessions: list[str] | None = None,
                  session: str | None = None) -> str:
    """The standalone page of ``trajectory``. ``sessions`` and ``session`` name it among the
    sessions of its run folder, for the header (the file holds this one session only)."""
    name = session or trajectory.payload.session.folder
    state: dict[str, Any] = {"sessions": sessions or [name], "session": name, "error": ""}
    bundle = json.dumps({"panel_module": panel_esm(), "viewer_module": viewer_esm(),
                         "css": viewer_css(), "state": state}, ensure_ascii=False)
    code = gzip.compress(bundle.encode("utf-8"), compresslevel=9, mtime=0)
    summary = trajectory.payload.session
    return _fill(_PAGE, {
        "TITLE": html.escape(f"Trajectory · {summary.session_id} · {summary.task}"),
        "CODE_DATA": _packed(code), "PAYLOAD": _packed(trajectory.encoded()),
        "BOOT": _fill(_BOOT, _IDS), **_IDS,
    })


def export_html(source: str | Path | Trajectory, out: str | Path, *,
                sessions: list[str] | None = None, session: str | None = None) -> Path:
    """Write the viewer of ``source`` (a session folder, or a trajectory already built) to the
    file ``out``; returns its path. Raises ``FileNotFoundError`` for a folder without a
    session."""
    trajectory = source if isinstance(source, Trajectory) else build_trajectory(source)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html_document(trajectory, sessions=sessions, session=session),
                    encoding="utf-8")
    return path
