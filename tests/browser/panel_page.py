"""Driving the cogym session panel (the anywidget in a notebook output) from Playwright, by the
``data-testid`` attributes listed in docs/panels.md."""

from __future__ import annotations

from playwright.sync_api import Locator, Page, expect

from tests.browser.lab_page import UI_TIMEOUT_MS

__all__ = ["SessionPanelPage", "assert_text_stayed_text", "focused_testid"]

_EDITOR = '[data-testid="editor-textarea"][data-component="{component}"]'


class SessionPanelPage:
    """One session panel inside a notebook."""

    def __init__(self, page: Page, root: Locator) -> None:
        self.page = page
        self.root = root

    @classmethod
    def find(cls, page: Page, within: Locator) -> SessionPanelPage:
        """The panel shown in ``within`` (a cell's output), once it is connected."""
        root = within.locator('[data-testid="cogym-panel"]')
        expect(root).to_be_visible(timeout=UI_TIMEOUT_MS)
        panel = cls(page, root)
        expect(panel.testid("connection-status")).to_have_attribute("data-state", "open",
                                                                    timeout=UI_TIMEOUT_MS)
        return panel

    def testid(self, name: str) -> Locator:
        return self.root.locator(f'[data-testid="{name}"]')

    @property
    def session_id(self) -> str:
        session_id = self.root.get_attribute("data-session")
        assert session_id, "the panel names no session"
        return session_id

    # -- chat ----------------------------------------------------------------------------------

    def send_chat(self, text: str) -> None:
        self.testid("chat-input").fill(text)
        self.testid("chat-send").click()

    def type_chat(self, text: str) -> None:
        """Type ``text`` into the chat box key by key and press Enter, as a person does."""
        self.testid("chat-input").click()
        self.page.keyboard.type(text)
        self.page.keyboard.press("Enter")

    def chat_message(self, containing: str) -> Locator:
        """The chat entry holding ``containing`` (waits for it to be shown)."""
        message = self.testid("chat-message").filter(has_text=containing)
        expect(message.first).to_be_visible(timeout=UI_TIMEOUT_MS)
        return message.first

    # -- confirmations ------------------------------------------------------------------------

    def pending_confirmation(self) -> Locator:
        confirmation = self.testid("confirmation").first
        expect(confirmation).to_be_visible(timeout=UI_TIMEOUT_MS)
        return confirmation

    # -- the shared editor --------------------------------------------------------------------

    def editor(self, component: str) -> Locator:
        return self.root.locator(_EDITOR.format(component=component))

    def editor_box(self, component: str) -> Locator:
        """The view of ``component``'s editor, with its preview button and state line."""
        textarea = self.page.locator(_EDITOR.format(component=component))
        return self.root.locator('[data-testid="view-editor"]').filter(has=textarea)

    def editor_state(self, component: str) -> Locator:
        """The state line of ``component``'s editor: ``data-state`` is synced, syncing,
        offline, refused, waiting, ended or readonly."""
        return self.editor_box(component).locator('[data-testid="editor-state"]')

    def wait_synced(self, component: str) -> None:
        """Until everything typed in ``component``'s editor has reached the session (the
        editor is live: there is nothing to save)."""
        expect(self.editor_state(component)).to_have_attribute("data-state", "synced",
                                                               timeout=UI_TIMEOUT_MS)

    # -- the end --------------------------------------------------------------------------------

    def finish(self) -> None:
        """Finish, then say yes to "End the session and grade it?" (Finish asks first)."""
        self.testid("finish-button").click()
        expect(self.testid("finish-confirm")).to_be_visible(timeout=UI_TIMEOUT_MS)
        self.testid("finish-confirm-yes").click()

    def rate(self, outcome: int, satisfaction: int, comment: str) -> None:
        form = self.testid("rating-form")
        expect(form).to_be_visible(timeout=UI_TIMEOUT_MS)
        form.locator('[data-testid="rating-outcome"]').select_option(str(outcome))
        form.locator('[data-testid="rating-satisfaction"]').select_option(str(satisfaction))
        form.locator('[data-testid="rating-comment"]').fill(comment)
        form.locator('[data-testid="rating-submit"]').click()
        expect(form.locator('[data-testid="rating-result"]')).to_have_attribute(
            "data-state", "saved", timeout=UI_TIMEOUT_MS)


def focused_testid(page: Page) -> str | None:
    """The test id of the element that has the keyboard focus."""
    return page.evaluate("document.activeElement && document.activeElement.dataset.testid")


def assert_text_stayed_text(page: Page) -> None:
    """Hostile text in the panel stayed text: no image, no handler in the page."""
    assert page.evaluate("""() => ({
        images: document.querySelectorAll('[data-testid=cogym-panel] img').length,
        handlers: document.querySelectorAll('[onerror]').length})""") == {
        "images": 0, "handlers": 0}
