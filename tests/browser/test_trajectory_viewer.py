"""The trajectory viewer in Debian's Chromium: the exported HTML file opened from disk (no
Jupyter), and the widget in a real JupyterLab through ``%cogym view``.

The person scrubs through a session with the keyboard, and at three events what the viewer
draws (each member's checklist and chat, or the kitchen's tick) is checked against ``replay()``.
They type an event number and press Enter, press Escape in the number field and in the viewer,
resize the window and reload the page. Hostile texts (markup, U+2028, NUL, a lone surrogate, a
1 MB message) in the views, the chat and the LM prompts show as text.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, expect

from cogym_lab.core.messages import EventType
from cogym_lab.nodes.replay import replay
from cogym_lab.nodes.results import read_events
from cogym_lab.widgets.trajectory_export import export_html
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.screenshots import StepShots
from tests.browser.test_lab_kitchen import _notebook_state
from tests.support.viewer_sessions import (
    BIG,
    MARKUP,
    PRIVATE_NOTE,
    example_session,
    hostile_session,
    kitchen_session,
)

VIEWER = "[data-testid=trajectory-viewer]"
SHOWN_MEMBER = "[data-testid=viewer-member]:not([hidden])"
#: The characters of a long text shown before "Show all" (TEXT_SHOWN in trajectory_viewer.js).
TEXT_SHOWN = 20000


def _made(make: Callable[..., Path], *args: Any, **kwargs: Any) -> Path:
    """A session made in a thread of its own: Playwright's loop runs in this one, and a session
    runs its own."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(make, *args, **kwargs).result()


def _ready(page: Page, within: Page | Locator | None = None) -> Locator:
    root = (within or page).locator(f"{VIEWER}[data-state=ready]")
    expect(root).to_be_visible(timeout=UI_TIMEOUT_MS)
    return root


def _shown_seq(root: Locator) -> int:
    return int(root.get_attribute("data-seq") or 0)


def _wait_seq(root: Locator, seq: int) -> None:
    expect(root).to_have_attribute("data-seq", str(seq), timeout=UI_TIMEOUT_MS)


def _drawn(root: Locator) -> dict[str, Any]:
    """What the viewer draws of the member shown: the checklist's items (text, ticked) and the
    chat (seq, sender, the text shown)."""
    return root.evaluate("""(root) => {
        const member = root.querySelector('[data-testid=viewer-member]:not([hidden])');
        const items = [...member.querySelectorAll('[data-testid=checklist-item]')].map((li) =>
            [li.querySelector('.cogym-check-text').textContent, li.dataset.done === 'true']);
        const chat = [...member.querySelectorAll('[data-testid=viewer-chat-message]')].map(
            (row) => [Number(row.dataset.seq), row.dataset.sender,
                      row.querySelector('[data-testid=viewer-chat-text]').textContent]);
        return {role: member.dataset.role, seq: Number(member.dataset.seq), items, chat};
    }""")


def _expected(state: dict[str, Any], role: str, seq: int,
              expanded: frozenset[int] = frozenset()) -> dict[str, Any]:
    """What ``replay()``'s state says that member saw right after event ``seq``: long messages
    show their start, but those ``expanded`` (Show all was pressed, and the chat did not change
    since) show whole."""
    checklist = next(c for c in state["views"][role]["components"] if c["name"] == "checklist")
    chat = [m for m in state["chat"] if m["to"] is None or role in (m["to"], m["sender"])]
    return {"role": role, "seq": seq,
            "items": [[item["text"], bool(item["done"])] for item in checklist["content"]],
            "chat": [[m["seq"], m["sender"],
                      m["text"] if m["seq"] in expanded else m["text"][:TEXT_SHOWN]]
                     for m in chat]}


def _focused_testid(page: Page) -> str | None:
    return page.evaluate("document.activeElement?.dataset?.testid ?? null")


def _pick(root: Locator, role: str) -> None:
    root.locator(f"[data-testid=viewer-tab][data-role={role}]").click()
    expect(root).to_have_attribute("data-role", role)


def _nothing_sticks_out(root: Locator) -> None:
    overflow = root.evaluate("""(root) => [root, ...root.querySelectorAll('*')].filter((el) =>
        el.getBoundingClientRect().right > root.getBoundingClientRect().right + 1
        && el.getClientRects().length && !el.closest('.cogym-tv-event')).map(
        (el) => el.dataset.testid || el.className)""")
    assert overflow == [], overflow


def test_the_exported_viewer_scrubs_a_session_by_keyboard(
        page: Page, shots: StepShots, tmp_path: Path) -> None:
    folder = _made(hostile_session, tmp_path / "session")
    events = read_events(folder)
    seqs = [event.seq for event in events]
    replayed = replay(folder, keep=seqs)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    html = export_html(folder, tmp_path / "viewer.html")
    page.goto(html.as_uri())
    root = _ready(page)
    assert root.get_attribute("data-events") == str(len(events))
    shots.take("1-opened-at-the-first-event")

    # Keyboard: the viewer takes the focus, Home and the arrows move it.
    root.focus()
    page.keyboard.press("End")
    _wait_seq(root, seqs[-1])
    page.keyboard.press("Home")
    _wait_seq(root, 1)
    page.keyboard.press("ArrowRight")
    added = next(e for e in events if e.type is EventType.ACTION)
    _wait_seq(root, added.seq)  # the hostile item was added at event 2
    assert _drawn(root) == _expected(replayed.state_at(added.seq), "agent", added.seq)
    assert root.locator("[data-testid=viewer-slider]").input_value() == str(added.seq - 1)
    shots.take("2-the-hostile-item")

    # The LM call behind it: the last of the two calls that returned before it, the earlier
    # one folded; the prompt's markup is text.
    call = root.locator("[data-testid=viewer-call]")
    expect(call).to_have_attribute("data-call", "1")
    expect(call.locator("[data-testid=viewer-earlier-calls]")).to_contain_text("1 earlier call")
    prompt = call.locator("[data-testid=viewer-call-record]").first.locator(
        "[data-testid=viewer-prompt-text]")
    expect(prompt.first).to_contain_text(MARKUP)
    expect(prompt.nth(1)).to_contain_text("\ufffd")  # the lone surrogate, replaced

    # Two events on: the private message, seen by its sender and the user, not the observer.
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    private = next(e for e in events if PRIVATE_NOTE in (e.action or ""))
    _wait_seq(root, private.seq)
    state = replayed.state_at(private.seq)
    for role in ("agent", "user", "observer"):
        _pick(root, role)
        drawn = _drawn(root)
        assert drawn == _expected(state, role, private.seq), role
        assert (PRIVATE_NOTE in [text for _, _, text in drawn["chat"]]) == (role != "observer")
    shots.take("3-the-private-message-as-the-observer-saw-it")
    _pick(root, "user")

    # A typed event number and Enter: the big message's event; the chat shows its start, and
    # Show all the whole megabyte, as text.
    big = next(e for e in events if "big-start" in (e.action or ""))
    root.focus()
    page.keyboard.type(str(big.seq))
    assert _focused_testid(page) == "viewer-jump"
    page.keyboard.press("Enter")
    _wait_seq(root, big.seq)
    assert _focused_testid(page) == "trajectory-viewer"  # the keys are the viewer's again
    assert _drawn(root) == _expected(replayed.state_at(big.seq), "user", big.seq)
    last_message = root.locator(SHOWN_MEMBER).locator("[data-testid=viewer-chat-message]").last
    last_message.locator("[data-testid=viewer-show-all]").click()
    length = last_message.locator("[data-testid=viewer-chat-text]").evaluate(
        "(pre) => pre.textContent.length")
    assert length == len(BIG)
    shots.take("4-the-one-megabyte-message", focus=last_message)

    # A number that is no event, then Escape: the field goes back to the event shown, and
    # the viewer has the keys again.
    root.focus()
    page.keyboard.type("99")
    page.keyboard.press("Enter")
    expect(root.locator("[data-testid=viewer-jump-error]")).to_contain_text("No event 99")
    page.keyboard.press("Escape")
    assert _focused_testid(page) == "trajectory-viewer"
    assert root.locator("[data-testid=viewer-jump]").input_value() == str(big.seq)
    _wait_seq(root, big.seq)

    # End: the last event; the user's finish carries the audit's labels, marked on the
    # timeline too.
    # No message came since the big one: it stays whole.
    page.keyboard.press("End")
    _wait_seq(root, seqs[-1])
    assert _drawn(root) == _expected(replayed.state_at(seqs[-1]), "user", seqs[-1],
                                     expanded=frozenset({big.seq}))
    finish = next(e for e in events if e.type is EventType.FINISH)
    marks = root.locator("[data-testid=viewer-mark]")
    expect(marks).to_have_count(2)  # the failure at the first message; the audit at the finish
    root.locator(f"[data-testid=viewer-mark][data-seq='{finish.seq}']").click()
    _wait_seq(root, finish.seq)
    labels = root.locator("[data-testid=viewer-labels] [data-testid=viewer-label]")
    expect(labels).to_have_count(2)
    expect(labels.first).to_contain_text("ended_before_agent_acted")
    expect(labels.first).to_contain_text("critical")
    expect(root.locator("[data-testid=viewer-flagged]")).to_contain_text("flagged")
    shots.take("5-the-audit-labels-at-the-finish")

    # Escape in the viewer: the keys leave it.
    root.focus()
    page.keyboard.press("Escape")
    assert page.evaluate(f"!document.querySelector('{VIEWER}').contains(document.activeElement)")

    # Hostile text stayed text everywhere: no element was made from it, no script ran.
    assert page.locator("img[src=x]").count() == 0 and page.locator("b").count() == 0
    assert page.evaluate("window.pwned") is None and dialogs == []

    # A narrow window: one column, nothing sticks out.
    page.set_viewport_size({"width": 700, "height": 900})
    side = root.locator(".cogym-tv-side").bounding_box()
    main = root.locator(".cogym-tv-main").bounding_box()
    assert side and main and side["y"] >= main["y"] + main["height"] - 1  # under, not beside
    _nothing_sticks_out(root)
    shots.take("6-narrow-window")

    # A reload keeps the event and the member shown (they live in the address).
    page.reload()
    root = _ready(page)
    _wait_seq(root, finish.seq)
    expect(root).to_have_attribute("data-role", "user")
    assert _drawn(root) == _expected(replayed.state_at(finish.seq), "user", finish.seq)
    page.set_viewport_size({"width": 1600, "height": 1200})
    shots.take("7-after-the-reload")


def _kitchen_tick(state: dict[str, Any], role: str) -> int:
    kitchen = next(c for c in state["views"][role]["components"] if c["name"] == "kitchen")
    return int(kitchen["content"]["tick"])


def _drawn_tick(root: Locator) -> tuple[int, int]:
    """The kitchen's tick in the view of the member shown, and the tick its canvas drew."""
    member = root.locator(SHOWN_MEMBER)
    kitchen = member.locator("[data-testid=kitchen]")
    canvas = member.locator("[data-testid=kitchen-canvas]")
    expect(canvas).to_have_attribute("data-shown-tick", kitchen.get_attribute("data-tick") or "",
                                     timeout=UI_TIMEOUT_MS)
    return int(kitchen.get_attribute("data-tick") or -1), int(
        canvas.get_attribute("data-shown-tick") or -1)


def test_the_widget_shows_a_kitchen_game_in_jupyterlab(
        lab: LabPage, shots: StepShots, tmp_path: Path) -> None:
    folder = _made(kitchen_session, tmp_path / "run" / "kitchen", ticks=200)
    other = _made(example_session, tmp_path / "run" / "todo")  # a second session of the run
    events = read_events(folder)
    seqs = [event.seq for event in events]
    replayed = replay(folder, keep=seqs)
    page = lab.page
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, f"%load_ext cogym_lab\n%cogym view {folder.parent}")
    lab.append_cell(notebook, "print('viewer at', cogym_viewer.seq, cogym_viewer.role)")
    cell = lab.run_cell(notebook, 0)
    root = _ready(page, cell)
    assert root.get_attribute("data-events") == str(len(events))
    assert _drawn_tick(root) == (0, 0)  # the first event: the game not started yet
    shots.take("1-the-viewer-in-the-notebook", focus=root, where="start")

    # Scrub: End, then back by ten and by one; each time the kitchen shows replay's tick.
    root.click(position={"x": 8, "y": 8})  # the viewer takes the keys
    before = _notebook_state(page, notebook)
    checked = []
    for keys in (["End"], ["PageUp"], ["ArrowLeft", "ArrowLeft"]):
        for key in keys:
            page.keyboard.press(key)
        seq = _shown_seq(root)
        tick = _kitchen_tick(replayed.state_at(seq), "agent")
        assert _drawn_tick(root) == (tick, tick), seq
        checked.append(seq)
    assert checked == [seqs[-1], seqs[-11], seqs[-13]]
    shots.take("2-the-kitchen-near-the-end", focus=root, where="start")

    # The other member's view of the same event, and an event number typed with Enter.
    _pick(root, "user")
    root.focus()
    page.keyboard.type("150")
    page.keyboard.press("Enter")
    _wait_seq(root, 150)
    tick = _kitchen_tick(replayed.state_at(150), "user")
    assert _drawn_tick(root) == (tick, tick)
    changes = root.locator("[data-testid=viewer-change]")
    expect(changes.first).to_be_visible()
    # Keys pressed in the viewer never reached the notebook: no cell added, cut or run.
    for key in ("a", "b", "x", "Enter", "Shift+Enter"):
        page.keyboard.press(key)
    after = _notebook_state(page, notebook)
    assert (after["count"], after["prompts"]) == (before["count"], before["prompts"])
    shots.take("3-event-150-as-the-partner-saw-it", focus=root, where="start")

    # Escape hands the keys back to the notebook (command mode); the kernel knows where the
    # viewer is.
    page.keyboard.press("Escape")
    assert page.evaluate(f"!document.querySelector('{VIEWER}').contains(document.activeElement)")
    printed = lab.run_cell(notebook, 1)
    expect(lab.outputs(printed)).to_contain_text("viewer at 150 user")

    # A narrow window, then a reload of the page: the widget comes back at the same event.
    page.set_viewport_size({"width": 800, "height": 1000})
    root = _ready(page, lab.cells(notebook).nth(0))
    _nothing_sticks_out(root)
    shots.take("4-narrow-window", focus=root, where="start")
    page.reload()
    lab.wait_until_ready()
    root = _ready(page)
    _wait_seq(root, 150)
    assert _drawn_tick(root) == (tick, tick)
    shots.take("5-after-the-reload", focus=root, where="start")

    # The run's other session, picked in the header: the kernel replays it and sends it.
    picker = root.locator("[data-testid=viewer-session-picker]")
    assert picker.evaluate("(select) => [...select.options].map((o) => o.value)") == [
        "kitchen", "todo"]
    picker.select_option("todo")
    expect(root.locator("[data-testid=viewer-session]")).to_contain_text("task todo",
                                                                         timeout=UI_TIMEOUT_MS)
    root = _ready(page)
    _wait_seq(root, 1)
    last = read_events(other)[-1].seq
    root.focus()
    page.keyboard.press("End")
    _wait_seq(root, last)
    state = replay(other, keep=[last]).state_at(last)
    shown = _drawn(root)
    assert shown == _expected(state, shown["role"], last)
    shots.take("6-the-runs-other-session", focus=root, where="start")
