"""One screenshot per test step, saved as ``test-artifacts/browser/<test>/NN-step.png``."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from playwright.sync_api import Locator, Page

__all__ = ["ARTIFACTS_DIR", "StepShots"]

REPO_ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS_DIR = REPO_ROOT / "test-artifacts" / "browser"


class StepShots:
    """Numbered full-page screenshots of one test, in a folder emptied when the test starts."""

    def __init__(self, page: Page, test_name: str, root: Path = ARTIFACTS_DIR) -> None:
        self.page = page
        self.folder = root / self.slug(test_name)
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.taken: list[Path] = []

    @staticmethod
    def slug(text: str) -> str:
        """A file-name-safe form of a test or step name."""
        return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-").lower() or "step"

    def take(self, step: str, focus: Locator | None = None, where: str = "center") -> Path:
        """Save the page as it looks now, named after the step; returns the file.

        ``focus`` is scrolled into view first (``where``: "start", "center" or "end" of its
        scrolling container), since JupyterLab scrolls inside panels, not the page."""
        if focus is not None:
            focus.evaluate("(element, where) => element.scrollIntoView({block: where})", where)
        path = self.folder / f"{len(self.taken) + 1:02d}-{self.slug(step)}.png"
        self.page.screenshot(path=str(path), full_page=True)
        self.taken.append(path)
        return path
