"""Driving JupyterLab's own UI (not our panels) from Playwright: open it, open notebooks, type
and run cells, read outputs. Every wait has a generous deadline, never a fixed sleep."""

from __future__ import annotations

import re

from playwright.sync_api import Locator, Page, expect

from tests.browser.jupyter_lab import JupyterLabServer

__all__ = ["UI_TIMEOUT_MS", "LabPage"]

UI_TIMEOUT_MS = 60_000  # a busy 2-core machine can take this long to start a kernel
_EXECUTED_PROMPT = re.compile(r"^\[\d+\]:$")  # "[3]:", not "[*]:" or "[ ]:"
_NO_KERNEL = re.compile(r"^\s*$|No Kernel")  # before the session has a kernel attached


class LabPage:
    """One browser page showing JupyterLab on ``lab``."""

    def __init__(self, page: Page, lab: JupyterLabServer) -> None:
        self.page = page
        self.lab = lab

    # -- the application --------------------------------------------------------------------

    def open(self, path: str = "lab") -> None:
        """Load JupyterLab (a fresh workspace layout) and wait until its shell is up."""
        self.page.goto(self.lab.url(path, reset=""), wait_until="domcontentloaded")
        self.wait_until_ready()

    def wait_until_ready(self) -> None:
        expect(self.page.locator("#jp-main-dock-panel")).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(self.page.locator("#jupyterlab-splash")).to_have_count(0, timeout=UI_TIMEOUT_MS)

    def new_notebook_from_launcher(self) -> Locator:
        """Click the launcher's Python notebook card; returns the new notebook panel."""
        card = self.page.locator('.jp-LauncherCard[data-category="Notebook"]').first
        card.click(timeout=UI_TIMEOUT_MS)
        return self.current_notebook()

    def open_notebook(self, path: str) -> Locator:
        """Open ``path`` (relative to the server's root) in a fresh layout; returns its panel."""
        self.open(f"lab/tree/{path}")
        return self.current_notebook()

    def close_notebook(self, panel: Locator, name: str, first_save: bool = True) -> None:
        """Save the notebook ``panel`` (file name ``name``) and close its tab, as a person does:
        Ctrl+S in command mode, then the tab's close icon. On a new notebook's ``first_save``
        JupyterLab (by default) offers to rename it, once saved: the name is kept."""
        self.cells(panel).first.locator(".jp-InputArea-prompt").click()
        self.page.keyboard.press("Control+s")
        if first_save:
            rename = self.page.locator(".jp-Dialog").filter(has_text="Rename file")
            expect(rename).to_be_visible(timeout=UI_TIMEOUT_MS)
            rename.locator(".jp-Dialog-button.jp-mod-accept").click()
            expect(rename).to_have_count(0, timeout=UI_TIMEOUT_MS)
        tabs = ".lm-DockPanel-tabBar .lm-TabBar-tab"
        saved = self.page.locator(f"{tabs}:not(.jp-mod-dirty)").filter(
            has=self.page.get_by_text(name, exact=True))
        expect(saved).to_be_visible(timeout=UI_TIMEOUT_MS)
        saved.locator(".lm-TabBar-tabCloseIcon").click()
        expect(self.page.locator(tabs).filter(has=self.page.get_by_text(name, exact=True))
               ).to_have_count(0, timeout=UI_TIMEOUT_MS)

    def reopen_notebook(self, name: str) -> Locator:
        """Open ``name`` again from the file browser (a double click); returns its panel."""
        self.page.locator(".jp-DirListing-item").filter(
            has=self.page.get_by_text(name, exact=True)).dblclick()
        return self.current_notebook()

    # -- the notebook in front ------------------------------------------------------------------

    def current_notebook(self) -> Locator:
        """The visible notebook panel, once its cells are loaded and its kernel is idle."""
        panel = self.page.locator(".jp-NotebookPanel:visible").first
        expect(panel).to_be_visible(timeout=UI_TIMEOUT_MS)
        expect(self.cells(panel).first).to_be_visible(timeout=UI_TIMEOUT_MS)
        self.wait_kernel_idle(panel)
        return panel

    def wait_kernel_idle(self, panel: Locator) -> None:
        """Wait until the notebook has a kernel (not "No Kernel") and that kernel is idle."""
        kernel_name = panel.locator(".jp-Toolbar-kernelName")
        expect(kernel_name).not_to_have_text(_NO_KERNEL, timeout=UI_TIMEOUT_MS)
        indicator = panel.locator(".jp-Notebook-ExecutionIndicator")
        expect(indicator).to_have_attribute("data-status", "idle", timeout=UI_TIMEOUT_MS)

    @staticmethod
    def cells(panel: Locator) -> Locator:
        return panel.locator(".jp-Notebook .jp-Cell")

    def type_in_cell(self, panel: Locator, index: int, code: str) -> None:
        """Replace the text of cell ``index`` with ``code``, typed as a person would."""
        editor = self.cells(panel).nth(index).locator(".cm-content")
        editor.click(timeout=UI_TIMEOUT_MS)
        self.page.keyboard.press("Control+A")
        self.page.keyboard.press("Delete")
        # one input event, like a paste: typing key by key would meet auto-indent and brackets
        self.page.keyboard.insert_text(code)
        expect(editor).to_contain_text(code.splitlines()[-1], timeout=UI_TIMEOUT_MS)

    def run_cell(self, panel: Locator, index: int) -> Locator:
        """Run cell ``index`` (Shift+Enter in its editor); returns the cell once it has run."""
        cell = self.cells(panel).nth(index)
        cell.locator(".cm-content").click(timeout=UI_TIMEOUT_MS)
        self.page.keyboard.press("Shift+Enter")
        self.wait_cell_done(cell)
        return cell

    def wait_cell_done(self, cell: Locator) -> None:
        """Wait until the cell's prompt shows an execution count (``[3]:``), not ``[*]:``."""
        prompt = cell.locator(".jp-InputArea-prompt")
        expect(prompt).to_have_text(_EXECUTED_PROMPT, timeout=UI_TIMEOUT_MS)

    def append_cell(self, panel: Locator, code: str) -> int:
        """Add a code cell at the end holding ``code``; returns its index."""
        count = self.cells(panel).count()
        self.cells(panel).nth(count - 1).locator(".jp-InputArea-editor").click()
        self.page.keyboard.press("Escape")  # command mode
        self.page.keyboard.press("b")  # insert a cell below
        expect(self.cells(panel)).to_have_count(count + 1, timeout=UI_TIMEOUT_MS)
        self.type_in_cell(panel, count, code)
        return count

    def cell_with_source(self, panel: Locator, text: str) -> Locator:
        """The cell whose own source (not its outputs) holds ``text``."""
        source = self.page.locator(".jp-InputArea-editor", has_text=text)
        return self.cells(panel).filter(has=source).first

    @staticmethod
    def cell_index(panel: Locator, text: str) -> int:
        """The index of the first code cell whose source holds ``text`` (a one-line snippet)."""
        index = panel.evaluate(
            """(panel, text) => [...panel.querySelectorAll('.jp-Notebook .jp-Cell')].findIndex(
                   (cell) => cell.classList.contains('jp-CodeCell') && (cell.querySelector(
                       '.jp-InputArea-editor')?.textContent || '').includes(text))""", text)
        assert index >= 0, f"no cell holds {text!r}"
        return int(index)

    @staticmethod
    def outputs(cell: Locator) -> Locator:
        return cell.locator(".jp-OutputArea-output")

