"""Driving the chat beside the notebook (the seat's chat-only view in JupyterLab's right side
area) from Playwright, and the notebook it sits beside: finding the side chat, scrolling the
notebook under the mouse, reading what keys leaking into the notebook would change."""

from __future__ import annotations

from playwright.sync_api import Locator, Page, expect

from tests.browser.lab_page import UI_TIMEOUT_MS
from tests.browser.panel_page import SessionPanelPage

__all__ = ["LONG_OUTPUT", "close_the_file_browser", "execution_counts", "in_viewport",
           "is_focused", "scroll_the_notebook", "side_chat", "side_chats"]

#: A cell that makes the notebook long: a person's work around the session.
LONG_OUTPUT = "for line in range(150):\n    print('row', line)"


def side_chats(page: Page, session_id: str) -> Locator:
    """Every chat-only view of ``session_id`` in JupyterLab's side area, shown or not."""
    return page.locator('.jupyterlab-sidecar [data-testid="cogym-panel"][data-part="chat"]'
                        f'[data-session="{session_id}"]')


def side_chat(page: Page, session_id: str) -> SessionPanelPage:
    """The chat-only view of ``session_id`` in JupyterLab's side area, once it is connected."""
    root = side_chats(page, session_id)
    expect(root).to_be_visible(timeout=UI_TIMEOUT_MS)
    chat = SessionPanelPage(page, root)
    expect(chat.testid("connection-status")).to_have_attribute("data-state", "open",
                                                               timeout=UI_TIMEOUT_MS)
    return chat


def in_viewport(page: Page, element: Locator) -> bool:
    """Whether the whole of ``element`` is inside the window."""
    box = element.bounding_box()
    size = page.viewport_size
    assert size is not None
    return (box is not None and box["x"] >= 0 and box["y"] >= 0
            and box["x"] + box["width"] <= size["width"] + 1
            and box["y"] + box["height"] <= size["height"] + 1)


def close_the_file_browser(page: Page) -> None:
    """Collapse the left side area, as a person does in a narrow window (its tab again)."""
    current = page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")
    if current.count():
        current.first.click()
    expect(page.locator("#jp-left-stack")).to_be_hidden(timeout=UI_TIMEOUT_MS)


def execution_counts(notebook: Locator) -> list[str]:
    """Every cell's prompt ("[3]:"), drawn or not (the notebook draws only what is in view)."""
    return notebook.locator(".jp-Cell .jp-InputArea-prompt").evaluate_all(
        "(prompts) => prompts.map((prompt) => prompt.textContent.trim())")


def is_focused(element: Locator) -> bool:
    return bool(element.evaluate("(node) => node === document.activeElement"))


def scroll_the_notebook(page: Page, notebook: Locator, by: float) -> None:
    """Turn the mouse wheel over the middle of ``notebook`` (the mouse moves there, the focus
    stays where it is), ``by`` pixels down, or up where there is no room left below, and wait
    until the notebook has scrolled."""
    scroller = notebook.locator(".jp-WindowedPanel-outer").first
    box = scroller.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    before = scroller.evaluate("(node) => node.scrollTop")
    room_below = scroller.evaluate(
        "(node) => node.scrollHeight - node.clientHeight - node.scrollTop")
    page.mouse.wheel(0, by if room_below > 0 else -by)
    page.wait_for_function("([node, before]) => node.scrollTop !== before",
                           arg=[scroller.element_handle(), before], timeout=UI_TIMEOUT_MS)
