"""``TrajectoryViewer``: one finished session, event by event, in a notebook (an anywidget).

``cogym_lab.view(results_dir)`` (or ``%cogym view DIR``) makes one. ``results_dir`` is a
session folder, or a run folder: the viewer then lists its sessions, shows the first and lets
the person pick another (or pass ``session="003"``). The data comes from
:func:`cogym_lab.records.viewer.build_trajectory` (the session's log replayed), sent gzipped in the
``payload`` trait; the browser module is ``js/trajectory_viewer.js``. The position is a trait
too: ``viewer.seq = 40`` shows event 40, and ``viewer.seq`` says which event the person is on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
from traitlets import Bytes, Int, List, Unicode

from cogym_lab.records.trajectory import find_sessions
from cogym_lab.records.viewer import Trajectory, build_trajectory
from cogym_lab.widgets.assets import VIEWER_ESM_PATH, panel_esm, viewer_css
from cogym_lab.widgets.fallback import Fallback, TextFallback
from cogym_lab.widgets.trajectory_export import export_html


def _name(root: Path, folder: Path) -> str:
    """How a session is named in the picker: its path under the run folder."""
    if folder == root:
        return folder.name or str(folder)
    return folder.relative_to(root).as_posix()


class TrajectoryViewer(TextFallback, anywidget.AnyWidget):
    """A session's timeline with a slider, each member's view and chat at the event shown, what
    the event changed, the LM call behind it, and the failure and audit labels."""

    _esm = VIEWER_ESM_PATH
    _css = viewer_css()

    mode = Unicode("widget", help="widget here; the HTML export says export.").tag(sync=True)
    folder = Unicode("", help="The folder given: a session or a run.").tag(sync=True)
    sessions = List(Unicode(), help="The sessions found in the folder.").tag(sync=True)
    session = Unicode("", help="The session shown (one of sessions).").tag(sync=True)
    payload = Bytes(b"", help="The session's trajectory, gzipped JSON.").tag(sync=True)
    panel_module = Unicode("", help="The session panel's module: the viewer draws the "
                                    "members' views with it.").tag(sync=True)
    seq = Int(0, help="The event shown (0 before the browser shows one).").tag(sync=True)
    role = Unicode("", help="The member whose view is shown.").tag(sync=True)
    error = Unicode("", help="Why the session cannot be shown, if it cannot.").tag(sync=True)

    def __init__(self, results_dir: str | Path, session: str | None = None,
                 **kwargs: Any) -> None:
        root = Path(results_dir)
        found = find_sessions([root])  # FileNotFoundError: neither a session nor a folder
        if not found:
            raise FileNotFoundError(f"{root} holds no session (no session.json in it or below)")
        names = [_name(root, folder) for folder in found]
        if session is not None and session not in names:
            raise ValueError(f"{root} has no session {session!r}; it has {', '.join(names)}")
        super().__init__(folder=str(root), sessions=names, panel_module=panel_esm(), **kwargs)
        self._folders = dict(zip(names, found, strict=True))
        self.trajectory: Trajectory | None = None
        self.observe(self._picked, names="session")
        self.session = session or names[0]

    def fallback(self) -> Fallback:
        """What the viewer showed, and the code that shows it again, where it cannot be drawn
        (no live widget model: a restarted kernel, a notebook read as a file)."""
        shown = f", session {self.session}" if len(self.sessions) > 1 and self.session else ""
        words = Fallback(f"Cogym trajectory viewer of {self.folder}{shown}")
        words.add("The viewer shows only while the notebook's kernel holds it. To see it again, "
                  "run:", _view_call(self.folder, self.session if len(self.sessions) > 1
                                     else None))
        folder = getattr(self, "_folders", {}).get(self.session)
        if folder is not None:
            words.add("or in a terminal:", f"cogym-lab replay {folder}")
        return words

    def _picked(self, change: dict[str, Any]) -> None:
        """The person (or code) picked another session: replay it and send it."""
        name = change["new"]
        folder = self._folders.get(name)
        error, data = "", b""
        self.trajectory = None
        if folder is None:
            error = f"No session {name!r} in {self.folder}"
        else:
            try:
                self.trajectory = build_trajectory(folder)
                data = self.trajectory.encoded()
            except (OSError, ValueError) as failure:  # an unreadable session.json or log
                error = f"{name}: {failure}"
        with self.hold_sync():
            self.seq = 0
            self.role = ""
            self.error = error
            self.payload = data

    def frame(self, seq: int) -> dict[str, Any]:
        """The whole state right after event ``seq`` of the session shown, as the viewer shows
        it (``Coordinator.snapshot()`` at that point of the replay)."""
        if self.trajectory is None:
            raise ValueError(self.error or "No session is shown")
        return self.trajectory.state(seq)

    def export_html(self, path: str | Path) -> Path:
        """Write the session shown as one HTML file that opens without Jupyter (everything
        inlined: the code, the styles and the data). Returns its path."""
        if self.trajectory is None:
            raise ValueError(self.error or "No session is shown")
        return export_html(self.trajectory, path, sessions=list(self.sessions),
                           session=self.session)


def _view_call(folder: str, session: str | None) -> str:
    """The code that makes the viewer again."""
    picked = f', session="{session}"' if session else ""
    return f'cogym_lab.view("{folder}"{picked})'


def view(results_dir: str | Path, session: str | None = None) -> TrajectoryViewer:
    """The trajectory viewer of a session folder, or of a run folder's sessions (the first, or
    ``session``, a name from ``viewer.sessions``; the viewer's picker shows the others).

    Display it in a notebook, or ``viewer.export_html("trajectory.html")`` for a file that opens
    in any browser."""
    return TrajectoryViewer(results_dir, session=session)
