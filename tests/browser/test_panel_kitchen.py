"""The panel's kitchen view (render type ``kitchen``, the real-time cooking game): the real ES
module in Chromium on the stand-in page, fed one update frame per tick.

The person plays with the keyboard and the macro buttons, and each key or click is checked
against the exact action the panel sent; keys pressed in the kitchen never reach the page
around it (where JupyterLab reads its shortcuts), and Escape gives them back. The canvas is
read back pixel by pixel where the chefs stand, follows the window's size, comes back after a
reload, and after the game shows the result and replays the last frames. A watcher, and a seat
without a chef, see the kitchen without controls.
"""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Page, expect

from tests.browser.kitchen_frames import (
    AGENT_BLUE,
    PERSON_ORANGE,
    KitchenSeat,
    chef,
    item,
    kitchen,
    pixel,
    shown_tick,
    wait_for_chef,
)
from tests.browser.lab_page import UI_TIMEOUT_MS
from tests.browser.panel_page import SessionPanelPage, assert_text_stayed_text, focused_testid
from tests.browser.screenshots import StepShots
from tests.browser.test_panel_updates import LOCAL, _deliver, _open

HOSTILE = "<img src=x onerror=alert(1)>"

#: Listeners that stand for JupyterLab's: every key that reaches the document or the window in
#: the bubble phase (where JupyterLab 4.1+ reads its shortcuts) lands in window.leaked; and the
#: page's scroll, which an unhandled arrow or Space would move.
LEAK_WATCH = """
window.leaked = [];
const note = (where) => (event) => window.leaked.push(`${where}:${event.key}`);
document.addEventListener('keydown', note('document'));
window.addEventListener('keydown', note('window'));
document.addEventListener('keypress', note('document-keypress'));
document.addEventListener('keyup', note('document-keyup'));
"""


def _actions(page: Page) -> list[dict[str, Any]]:
    return [m["action"] for m in page.evaluate("window.sent") if m.get("type") == "action"]


def _sent_after(page: Page, before: int, count: int) -> list[dict[str, Any]]:
    """The actions sent since ``before`` were sent, once there are ``count`` of them."""
    page.wait_for_function(
        f"window.sent.filter((m) => m.type === 'action').length >= {before + count}",
        timeout=UI_TIMEOUT_MS)
    return _actions(page)[before:]


def _leaked(page: Page) -> list[str]:
    return page.evaluate("window.leaked")




def _canvas_size(page: Page) -> dict[str, float]:
    return page.evaluate("""() => {
        const canvas = document.querySelector('[data-testid=kitchen-canvas]');
        const stage = document.querySelector('[data-testid=kitchen-stage]');
        return {css: canvas.clientWidth, pixels: canvas.width, stage: stage.clientWidth,
                drawn: Number(canvas.dataset.drawnWidth), tile: Number(canvas.dataset.tile),
                height: canvas.clientHeight, ratio: window.devicePixelRatio,
                panel: document.querySelector('[data-testid=cogym-panel]')
                    .getBoundingClientRect().width};
    }""")


def _wait_drawn_at_stage_width(page: Page, other_than: float) -> dict[str, float]:
    """Wait until the canvas was drawn again at the stage's new width; returns its sizes."""
    page.wait_for_function(
        """(before) => {
            const canvas = document.querySelector('[data-testid=kitchen-canvas]');
            const stage = document.querySelector('[data-testid=kitchen-stage]');
            const drawn = Number(canvas.dataset.drawnWidth);
            return drawn !== before && drawn === Math.floor(stage.clientWidth);
        }""", arg=other_than, timeout=UI_TIMEOUT_MS)
    return _canvas_size(page)


def test_a_person_plays_the_kitchen_with_keys_and_buttons(page: Page, shots: StepShots) -> None:
    page.add_init_script(LEAK_WATCH)
    panel = _open(page, LOCAL)
    seat = KitchenSeat()
    _deliver(page, seat.frame(kitchen(1), whole=True))
    stage = panel.testid("kitchen-stage")
    expect(stage).to_be_visible()
    shown_tick(page, 1)
    expect(panel.testid("kitchen-score")).to_have_text("Score 0")
    expect(panel.testid("kitchen-time")).to_have_text("0:50 left")  # 199 ticks of 0.25 s
    expect(panel.testid("kitchen-controls")).to_be_visible()
    expect(panel.root.locator("[data-testid=kitchen]")).to_have_attribute("data-playing", "true")
    # the chefs are drawn where they stand, each in its colour
    wait_for_chef(page, (10, 4), PERSON_ORANGE, "down")
    wait_for_chef(page, (1, 1), AGENT_BLUE, "up")
    assert pixel(page, 5, 1) != PERSON_ORANGE  # a floor tile in between
    shots.take("kitchen-at-tick-1", focus=panel.root, where="start")

    # The person clicks the kitchen: the keys go to the game now.
    stage.click()
    assert focused_testid(page) == "kitchen-stage"
    before = len(_actions(page))
    for key in ("ArrowUp", "ArrowLeft", "ArrowDown", "ArrowRight", "Space", "e", "1", "f"):
        page.keyboard.press(key)
    assert _sent_after(page, before, 8) == [
        {"name": "MOVE", "args": {"direction": "up"}},
        {"name": "MOVE", "args": {"direction": "left"}},
        {"name": "MOVE", "args": {"direction": "down"}},
        {"name": "MOVE", "args": {"direction": "right"}},
        {"name": "INTERACT", "args": {}},
        {"name": "INTERACT", "args": {}},
        {"name": "PREPARE", "args": {"food": "Beef", "plate": False}},
        {"name": "PUT_OUT_FIRE", "args": {}},
    ]
    # Enter and Shift+Enter (edit / run the cell in JupyterLab), a cell command (B inserts a
    # cell), Shift+arrows: nothing sent, nothing reaches the page; focus stays in the kitchen.
    for key in ("Enter", "Shift+Enter", "b", "x", "Shift+ArrowDown"):
        page.keyboard.press(key)
    assert _leaked(page) == []
    assert focused_testid(page) == "kitchen-stage"
    assert page.evaluate("window.scrollY") == 0
    # the game keys are the game's: their default (scrolling the page) is prevented too
    prevented = page.evaluate("""() => {
        const stage = document.querySelector('[data-testid=kitchen-stage]');
        const seen = [];
        const note = (event) => seen.push([event.key, event.defaultPrevented]);
        stage.addEventListener('keydown', note);
        for (const key of ['ArrowDown', ' ', 'Enter']) {
            const init = {key, bubbles: true, cancelable: true};
            stage.dispatchEvent(new KeyboardEvent('keydown', init));
        }
        stage.removeEventListener('keydown', note);
        return seen;
    }""")
    assert prevented == [["ArrowDown", True], [" ", True], ["Enter", True]]
    assert _leaked(page) == []
    sent = len(_actions(page))

    # A held arrow repeats at the game's pace (one move a tick), a held Space interacts once.
    _deliver(page, seat.frame(kitchen(2, tick_seconds=60.0)))  # a slow game: a minute a tick
    shown_tick(page, 2)
    page.keyboard.down("ArrowRight")
    page.keyboard.down("ArrowRight")  # the key repeats (KeyboardEvent.repeat)
    page.keyboard.down("ArrowRight")
    page.keyboard.up("ArrowRight")
    page.keyboard.down(" ")
    page.keyboard.down(" ")
    page.keyboard.up(" ")
    assert _sent_after(page, sent, 2)[-2:] == [
        {"name": "MOVE", "args": {"direction": "right"}}, {"name": "INTERACT", "args": {}}]
    assert len(_actions(page)) == sent + 2
    sent = len(_actions(page))

    # Escape gives the keys back: the kitchen loses the focus, and the next keys reach the page.
    page.keyboard.press("Escape")
    assert focused_testid(page) != "kitchen-stage"
    # (the Escape key comes up outside the kitchen: only its keyup is the page's)
    assert _leaked(page) == ["document-keyup:Escape"] and len(_actions(page)) == sent
    page.evaluate("window.leaked.length = 0")
    page.keyboard.press("ArrowDown")
    assert _leaked(page) == ["document:ArrowDown", "window:ArrowDown", "document-keyup:ArrowDown"]
    assert len(_actions(page)) == sent
    page.evaluate("window.leaked.length = 0")

    # The macro buttons send the structured macro actions; each click gives the keys back to
    # the kitchen. Pass on passes what the chef holds.
    holding = kitchen(3, chefs=[chef("agent", (1, 1), "up"),
                                chef("user", (10, 4), "down",
                                     holding=item("Beef", "Well-cooked"))])
    _deliver(page, seat.frame(holding))
    shown_tick(page, 3)
    controls = panel.testid("kitchen-controls")
    expect(controls.locator("[data-macro=pass-on]")).to_have_text("Pass on Beef")
    clicks = ["prepare-lettuce", "assemble-BeefBurger", "assemble-BeefLettuceBurger",
              "serve-LettuceBurger", "serve-BeefLettuceBurger", "put-out-fire",
              "clean-a-counter", "pass-on"]
    for name in clicks:
        controls.locator(f"[data-macro={name}]").click()
        assert focused_testid(page) == "kitchen-stage", name
    panel.testid("kitchen-plate").check()
    controls.locator("[data-macro=prepare-bread]").click()
    assert _sent_after(page, sent, len(clicks) + 1) == [
        {"name": "PREPARE", "args": {"food": "Lettuce", "plate": False}},
        {"name": "ASSEMBLE", "args": {"food": "BeefBurger"}},
        {"name": "ASSEMBLE", "args": {"food": "BeefLettuceBurger"}},
        {"name": "SERVE", "args": {"food": "LettuceBurger"}},
        {"name": "SERVE", "args": {"food": "BeefLettuceBurger"}},
        {"name": "PUT_OUT_FIRE", "args": {}},
        {"name": "CLEAN_A_COUNTER", "args": {}},
        {"name": "PASS_ON", "args": {"thing": "Beef", "thing_status": "Well-cooked"}},
        {"name": "PREPARE", "args": {"food": "Bread", "plate": True}},
    ]
    page.keyboard.press("ArrowUp")  # the keys went back to the kitchen after the click
    assert _sent_after(page, sent + len(clicks) + 1, 1)[-1] == {
        "name": "MOVE", "args": {"direction": "up"}}
    assert _leaked(page) == []
    shots.take("holding-beef-with-the-controls", focus=panel.root, where="start")

    # Tick by tick: the person walks up the right side, the agent carries a plate; the canvas
    # follows each frame. Hostile text in the content (a role, a dish, a macro) stays text.
    for tick in range(4, 40):
        row = max(1, 4 - (tick - 4) // 4)
        chefs = [chef("agent", (1 + min(8, (tick - 4) // 3), 1), "right",
                      holding=item("Plate"), macro=f'SERVE(food="{HOSTILE}")'),
                 chef("user", (10, row), "up", macro=None)]
        _deliver(page, seat.frame(kitchen(tick, chefs=chefs, score=20 if tick > 30 else 0,
                                          served=1 if tick > 30 else 0)))
    shown_tick(page, 39)
    wait_for_chef(page, (10, 1), PERSON_ORANGE, "up")
    wait_for_chef(page, (9, 1), AGENT_BLUE, "right")
    assert pixel(page, 10, 4, 0, -0.2) != PERSON_ORANGE  # the old tile is drawn without it
    expect(panel.testid("kitchen-score")).to_have_text("Score 20")
    expect(panel.testid("kitchen-counts")).to_have_text("served 1 · missed 0 · wrong 0")
    assert_text_stayed_text(page)
    # the kitchen does not flash on every tick like a changed component does
    assert panel.root.locator("[data-testid=view-kitchen].cogym-changed").count() == 0
    shots.take("kitchen-at-tick-39", focus=panel.root, where="start")

    # The canvas follows the window: lower (smaller tiles), then narrower, each redrawn at the
    # new size.
    wide = _canvas_size(page)
    assert wide["drawn"] == int(wide["stage"]) and wide["pixels"] == round(
        wide["css"] * wide["ratio"])
    page.set_viewport_size({"width": 1600, "height": 500})
    page.wait_for_function(
        "(tile) => Number(document.querySelector('[data-testid=kitchen-canvas]')"
        ".dataset.tile) < tile", arg=wide["tile"], timeout=UI_TIMEOUT_MS)
    low = _canvas_size(page)
    assert low["height"] < wide["height"] and low["pixels"] == round(low["css"] * low["ratio"])
    wait_for_chef(page, (10, 1), PERSON_ORANGE, "up")  # drawn again where it stands
    page.set_viewport_size({"width": 800, "height": 900})
    narrow = _wait_drawn_at_stage_width(page, low["drawn"])
    assert narrow["css"] < wide["css"] and narrow["pixels"] == round(
        narrow["css"] * narrow["ratio"])
    assert narrow["css"] <= narrow["panel"]
    wait_for_chef(page, (10, 1), PERSON_ORANGE, "up")
    shots.take("narrow-window", focus=panel.root, where="start")
    page.set_viewport_size({"width": 1600, "height": 1200})
    _wait_drawn_at_stage_width(page, narrow["drawn"])

    # A reload: nothing shows before the whole state, then the kitchen is back as it was.
    page.reload()
    page.wait_for_function("window.ready === true", timeout=UI_TIMEOUT_MS)
    panel = SessionPanelPage.find(page, page.locator("#root"))
    expect(panel.root).to_have_attribute("data-sync", "waiting")
    seat = KitchenSeat()
    last = kitchen(40, chefs=[chef("agent", (9, 1), "right"), chef("user", (10, 1), "up")],
                   score=20, served=1)
    _deliver(page, seat.frame(last, whole=True))
    shown_tick(page, 40)
    wait_for_chef(page, (10, 1), PERSON_ORANGE, "up")
    expect(panel.testid("kitchen-score")).to_have_text("Score 20")
    panel.testid("kitchen-stage").click()
    before = len(_actions(page))
    page.keyboard.press("ArrowLeft")
    assert _sent_after(page, before, 1) == [{"name": "MOVE", "args": {"direction": "left"}}]

    # To the end: 120 more ticks (30 s of 0.25 s), then the result.
    for tick in range(41, 161):
        chefs = [chef("agent", (1 + tick % 9, 1), "right"), chef("user", (10, 1 + tick % 4), "up")]
        _deliver(page, seat.frame(kitchen(tick, chefs=chefs, score=20, served=1)))
    result = {"score": 35, "served": 2, "missed": 1, "wrong": 0,
              "contribution": {"agent": 0.625, "user": 0.375, HOSTILE: 0.0}}
    final = kitchen(161, chefs=[chef("agent", (2, 1), "right"), chef("user", (10, 2), "up")],
                    score=35, served=2, missed=1, done=True, result=result, orders=[])
    _deliver(page, seat.frame(final, done=True))
    shown_tick(page, 161)
    box = panel.testid("kitchen-result")
    expect(box).to_be_visible()
    expect(box.locator("[data-testid=kitchen-result-score]")).to_have_text("35")
    expect(box.locator("[data-testid=kitchen-result-served]")).to_have_text("2")
    expect(box.locator("[data-testid=kitchen-result-missed]")).to_have_text("1")
    expect(box.locator("[data-testid=kitchen-result-wrong]")).to_have_text("0")
    shares = box.locator("[data-testid=kitchen-contribution]")
    expect(shares).to_have_count(3)
    expect(shares.nth(0)).to_contain_text("agent")
    expect(shares.nth(0).locator("[data-testid=kitchen-contribution-value]")).to_have_text("63%")
    expect(shares.nth(1)).to_contain_text("user (you)")
    expect(shares.nth(1).locator("[data-testid=kitchen-contribution-value]")).to_have_text("38%")
    expect(shares.nth(2)).to_contain_text(HOSTILE)
    assert_text_stayed_text(page)
    expect(panel.testid("kitchen-controls")).to_be_hidden()
    # the game is over: keys in the kitchen send nothing (and still stay in it)
    panel.testid("kitchen-stage").click()
    sent = len(_actions(page))
    for key in ("ArrowUp", "Space", "Enter", "Shift+Enter"):
        page.keyboard.press(key)
    assert len(_actions(page)) == sent and _leaked(page) == []
    shots.take("after-the-game", focus=box, where="end")

    # The replay: the last 20 s the panel saw (80 ticks of 0.25 s), played on the canvas, in
    # order, then back to the final frame.
    page.evaluate("""() => {
        window.replayed = [];
        const canvas = document.querySelector('[data-testid=kitchen-canvas]');
        new MutationObserver(() => window.replayed.push(Number(canvas.dataset.replayTick)))
            .observe(canvas, {attributes: true, attributeFilter: ['data-replay-tick']});
    }""")
    panel.testid("kitchen-replay").click()
    kitchen_box = panel.root.locator("[data-testid=kitchen]")
    expect(kitchen_box).to_have_attribute("data-replaying", "true")
    expect(panel.testid("kitchen-replay-state")).to_contain_text("Replaying: tick")
    shots.take("replaying", focus=panel.root, where="start")
    expect(kitchen_box).to_have_attribute("data-replaying", "false", timeout=UI_TIMEOUT_MS)
    replayed = page.evaluate("window.replayed")
    assert replayed == sorted(replayed) and len(set(replayed)) == len(replayed), replayed
    assert replayed[0] >= 161 - 80 and replayed[-1] == 161, replayed
    assert len(replayed) >= 80
    expect(panel.testid("kitchen-replay-state")).to_contain_text("Replay over")
    shown_tick(page, 161)


def test_a_watcher_and_a_seat_without_a_chef_see_the_kitchen_without_controls(
        page: Page, shots: StepShots) -> None:
    page.add_init_script(LEAK_WATCH)
    # a watcher following the agent
    panel = _open(page, LOCAL | {"readonly": True, "role": "agent"})
    seat = KitchenSeat("agent")
    _deliver(page, seat.frame(kitchen(5), whole=True))
    shown_tick(page, 5)
    wait_for_chef(page, (1, 1), AGENT_BLUE, "up")
    expect(panel.testid("kitchen-controls")).to_be_hidden()
    expect(panel.testid("kitchen-keys")).to_contain_text("Watching")
    panel.testid("kitchen-stage").click()
    for key in ("ArrowUp", "Space", "1", "Enter", "Shift+Enter"):
        page.keyboard.press(key)
    assert _actions(page) == [] and _leaked(page) == []
    shots.take("watcher", focus=panel.root, where="start")
    page.keyboard.press("Escape")
    assert focused_testid(page) != "kitchen-stage"

    # a person seat whose role has no chef (a third member of the team)
    page.goto("about:blank")
    panel = _open(page, LOCAL | {"role": "coach"})
    seat = KitchenSeat("coach")
    _deliver(page, seat.frame(kitchen(6), whole=True))
    shown_tick(page, 6)
    expect(panel.testid("kitchen-controls")).to_be_hidden()
    expect(panel.testid("kitchen-keys")).to_contain_text("No chef in this game is yours")
    panel.testid("kitchen-stage").click()
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Shift+Enter")
    assert _actions(page) == [] and _leaked(page) == []


def test_a_malformed_kitchen_still_shows(page: Page) -> None:
    """Fields of the wrong type are left out; a kitchen without a grid says so."""
    panel = _open(page, LOCAL)
    seat = KitchenSeat()
    broken = kitchen(3, chefs=[{"role": "user", "pos": "nowhere"}, {"role": 5, "pos": [2, 1]},
                               chef("agent", (1, 1), "sideways", holding="a string")],
                     items=[{"pos": [1], "item": None}, {"pos": [3, 0], "item": {"name": 7}}],
                     orders=[None, {"dish": HOSTILE, "remaining": "x"}], fires=[[1, 2, 3], "x"],
                     score="lots", legend=["not", "a", "legend"])
    _deliver(page, seat.frame(broken, whole=True))
    shown_tick(page, 3)
    expect(panel.testid("kitchen-score")).to_have_text("Score 0")
    assert_text_stayed_text(page)
    _deliver(page, seat.frame({"grid": "not a list"}))
    expect(panel.testid("kitchen-status")).to_have_text("The kitchen is not open yet.")
    assert json.loads(json.dumps(_actions(page))) == []
