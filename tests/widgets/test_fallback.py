"""Where a widget of ours cannot be drawn (no live model: a restarted kernel, a notebook read as a
file), its saved output says in words what it is and how to see it again, never a Python repr.

The bundles are made by IPython's own display formatter, as a notebook cell makes them, from
real widgets: server-mode panels, local panels on a real ``SessionHost`` session that runs and
then ends, and a trajectory viewer of a real finished session. Every widget class the package
defines is walked, so a new one without words fails here.
"""

from __future__ import annotations

import html
import importlib
import inspect
from pathlib import Path
from typing import Any

import ipywidgets
import pytest
from IPython.core.formatters import DisplayFormatter

import cogym_lab
from cogym_lab.runtime.hosting import SessionHost
from cogym_lab.widgets import SessionPanel
from cogym_lab.widgets.study_flow import StudyFlow
from cogym_lab.widgets.fallback import WIDGET_VIEW_MIME, TextFallback
from cogym_lab.widgets.trajectory_viewer import TrajectoryViewer
from tests.support.viewer_sessions import example_session


def our_widget_classes() -> list[type]:
    """Every ipywidgets widget class defined in the cogym_lab package's modules that use
    widgets at all (the test below checks that only cogym_lab.widgets does)."""
    found: dict[str, type] = {}
    for name in modules_using_widgets():
        module = importlib.import_module(name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if (issubclass(value, ipywidgets.Widget)
                    and value.__module__.startswith("cogym_lab.")):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return sorted(found.values(), key=lambda cls: cls.__qualname__)


def modules_using_widgets() -> list[str]:
    """The cogym_lab modules whose source imports ipywidgets or anywidget."""
    root = Path(cogym_lab.__file__).parent
    names = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if "import anywidget" in source or "ipywidgets" in source:
            parts = path.relative_to(root.parent).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_only_the_widgets_package_defines_widgets() -> None:
    assert all(name.startswith("cogym_lab.widgets") for name in modules_using_widgets())


def saved_output(widget: Any) -> dict[str, Any]:
    """The MIME bundle a notebook saves for ``widget`` displayed as a cell's result."""
    data, _metadata = DisplayFormatter().format(widget)
    return data


def assert_words(data: dict[str, Any], *expected: str) -> None:
    plain, page = data["text/plain"], data["text/html"]
    assert "object at 0x" not in plain and "object at 0x" not in page
    for words in expected:
        assert words in plain, plain
        assert html.escape(words) in page, page


@pytest.fixture
def finished_folder(tmp_path: Path) -> Path:
    return example_session(tmp_path / "viewer")


def make_each(cls: type, finished_folder: Path) -> Any:
    if cls is SessionPanel:
        return SessionPanel.for_server("/", "", "20260101-120000-abc123", "user")
    if cls is TrajectoryViewer:
        return TrajectoryViewer(finished_folder)
    if cls is StudyFlow:
        return StudyFlow()
    raise AssertionError(f"no test makes a {cls.__qualname__}: add it to make_each")


def test_every_widget_class_of_ours_says_words_where_it_cannot_be_drawn(
        finished_folder: Path) -> None:
    classes = our_widget_classes()
    assert SessionPanel in classes and TrajectoryViewer in classes
    for cls in classes:
        assert issubclass(cls, TextFallback), cls
        widget = make_each(cls, finished_folder)
        try:
            data = saved_output(widget)
            assert data[WIDGET_VIEW_MIME]["model_id"] == widget.model_id  # still a widget view
            assert_words(data, "To see it again, run:")
            assert "object at 0x" not in repr(widget)
        finally:
            widget.close()


def test_a_server_panel_names_its_session_and_the_code_to_see_it_again() -> None:
    panel = SessionPanel.for_server("/", "", "20260101-120000-abc123", "user")
    panel.describe({"task": "todo", "status": "running", "results_dir": "/srv/r/abc"})
    try:
        data = saved_output(panel)
    finally:
        panel.close()
    assert data["text/plain"].splitlines()[0] == (
        "Cogym session 20260101-120000-abc123 (todo), your seat: user")
    assert_words(data, "It was running when this output was made",
                 'cogym_lab.attach("20260101-120000-abc123")',
                 "%cogym attach 20260101-120000-abc123",
                 'cogym_lab.view("/srv/r/abc")', "cogym-lab replay /srv/r/abc")


def test_a_watch_panel_says_how_to_watch_again() -> None:
    panel = SessionPanel.for_server("/", "", "s-1", "agent", readonly=True)
    try:
        assert_words(saved_output(panel), "watching agent, read-only",
                     'cogym_lab.attach("s-1").watch("agent")')
    finally:
        panel.close()


async def test_a_local_panel_says_running_then_ended_with_its_reason(tmp_path: Path) -> None:
    host = SessionHost(tmp_path / "results")
    try:
        hosted = await host.create("todo", team="example", people=["user"], idle_seconds=60)
        panel = SessionPanel.for_local(host, hosted.session_id, "user")
        try:
            assert_words(saved_output(panel), f"Cogym session {hosted.session_id} (todo)",
                         "running inside the notebook's kernel")
            await host.end(hosted.session_id, "ended by the user")
            folder = tmp_path / "results" / hosted.session_id
            assert_words(saved_output(panel), "It had ended (finished: ended by the user)",
                         f'cogym_lab.view("{folder}")', f"cogym-lab replay {folder}")
        finally:
            panel.close()
    finally:
        await host.close()


def test_markup_in_a_summary_is_shown_as_text(finished_folder: Path) -> None:
    panel = SessionPanel.for_server("/", "", "s-2", "user")
    panel.describe({"task": "<script>x()</script>", "status": "failed",
                    "end_reason": "<img src=x onerror=y()>"})
    try:
        page = saved_output(panel)["text/html"]
    finally:
        panel.close()
    assert "<script>" not in page and "<img" not in page
    assert "&lt;script&gt;" in page


def test_the_viewer_names_its_folder_and_the_code_to_see_it_again(finished_folder: Path) -> None:
    viewer = TrajectoryViewer(finished_folder)
    try:
        assert_words(saved_output(viewer), f"Cogym trajectory viewer of {finished_folder}",
                     f'cogym_lab.view("{finished_folder}")',
                     f"cogym-lab replay {finished_folder}")
    finally:
        viewer.close()
