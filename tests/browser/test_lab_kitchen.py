"""A person plays the real-time kitchen beside the FSM agent, in JupyterLab in a real browser.

The person (this test, in Chromium) starts a ``kitchen`` session of the ``kitchen-fsm`` team
from a notebook, in the seat ``user`` (the rule-based partner's seat: a person takes it), with
a fast clock (a tick every 0.1 s). The FSM agent cooks in the Jupyter server; the panel talks to
the session over the browser's own WebSocket and draws the kitchen on every tick.

The person walks and interacts with the keyboard and starts a macro with a button; keys pressed
in the kitchen never reach the notebook (Enter, Shift+Enter, Ctrl+Enter, Alt+Enter, arrows and
cell commands change nothing there), Escape gives the keys back to the notebook (the next arrow
moves the active cell). An order is served, the game runs out, and the panel shows the result
with each role's contribution and replays the last seconds. The session's log holds the
person's actions and the clock's ticks.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Locator, Page, expect

from cogym_lab.core.messages import EventType
from cogym_lab.nodes.results import read_events
from tests.browser.jupyter_lab import BROWSER_LIMITS, JupyterLabServer, ServerSession
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.panel_page import SessionPanelPage
from tests.browser.screenshots import StepShots
from tests.browser.test_tabular_flow import wait_for

TICK_SECONDS = 0.1
TICKS = 900  # 90 s: time for the FSM agent to serve an order with a person in the way
# person_macros: this person also starts a macro with a button (paper mode, the default, gives
# people moves and interact only: tests/browser/test_kitchen_keyboard_play.py plays that way).
START = ("%load_ext cogym_lab\n"
         f"%cogym new kitchen --team kitchen-fsm --role user --env-arg tick_seconds={TICK_SECONDS}"
         f" --env-arg ticks={TICKS} --env-arg person_macros=true --idle-seconds 600")
#: Ticks to wait between two actions the person sends: the browser tests' server takes
#: BROWSER_LIMITS["ws_actions_per_second"] actions a second from one connection.
PACE = int(1 / BROWSER_LIMITS["ws_actions_per_second"] / TICK_SECONDS) + 1
STEPS = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}
KEYS = {"up": "ArrowUp", "down": "ArrowDown", "left": "ArrowLeft", "right": "ArrowRight"}
GAME_MS = int(TICKS * TICK_SECONDS * 1000) + UI_TIMEOUT_MS


class KitchenSession(ServerSession):
    """The kitchen as the server holds it (REST)."""

    def kitchen(self) -> dict[str, Any]:
        return self.component("kitchen")

    def chef(self, role: str) -> dict[str, Any]:
        return next(c for c in self.kitchen()["chefs"] if c["role"] == role)

    def actions_of(self, role: str) -> list[tuple[str, str]]:
        """``role``'s actions in the log: (name, status), in order."""
        return [((e.action or "").split("(", 1)[0], e.status)
                for e in read_events(self.lab.results_dir / self.session_id)
                if e.type is EventType.ACTION and e.actor == role]


def _tick(kitchen: Locator) -> int:
    return int(kitchen.get_attribute("data-tick") or 0)


def _wait_tick(page: Page, at_least: int, timeout: int = UI_TIMEOUT_MS) -> None:
    page.wait_for_function(
        "(tick) => Number(document.querySelector('[data-testid=kitchen]')?.dataset.tick) >= tick",
        arg=at_least, timeout=timeout)


def _a_free_step(content: dict[str, Any], pos: list[int]) -> str:
    """A direction in which the tile next to ``pos`` is floor nobody stands on."""
    taken = {tuple(chef["pos"]) for chef in content["chefs"]}
    for direction, (dx, dy) in STEPS.items():
        x, y = pos[0] + dx, pos[1] + dy
        row = content["grid"][y] if 0 <= y < len(content["grid"]) else ""
        if 0 <= x < len(row) and content["legend"].get(row[x]) == "floor" and (x, y) not in taken:
            return direction
    raise AssertionError(f"no free floor next to {pos}")


def _notebook_state(page: Page, notebook: Locator) -> dict[str, Any]:
    """What a leaked key would change: the cells, the active one, the mode, the prompts."""
    return notebook.evaluate("""(panel) => {
        const cells = [...panel.querySelectorAll('.jp-Notebook .jp-Cell')];
        const book = panel.querySelector('.jp-Notebook');
        const has = (name) => (cell) => cell.classList.contains(name);
        return {count: cells.length, active: cells.findIndex(has('jp-mod-active')),
                selected: cells.filter(has('jp-mod-selected')).length,
                kinds: cells.map((cell) => has('jp-CodeCell')(cell) ? 'code' : 'other'),
                edit: book.classList.contains('jp-mod-editMode'),
                prompts: cells.map(
                    (cell) => cell.querySelector('.jp-InputArea-prompt')?.textContent)};
    }""")


def _in_kitchen(page: Page) -> bool:
    return page.evaluate(
        "document.activeElement?.dataset.testid === 'kitchen-stage'")


def test_a_person_plays_the_kitchen_beside_the_fsm_agent(
        lab: LabPage, shots: StepShots, jupyter_lab: JupyterLabServer) -> None:
    page = lab.page
    notebook = lab.new_notebook_from_launcher()
    lab.type_in_cell(notebook, 0, START)
    lab.append_cell(notebook, 'print("the cell below the kitchen")')
    start_cell = lab.run_cell(notebook, 0)
    panel = SessionPanelPage.find(page, start_cell)
    session = KitchenSession(jupyter_lab, panel.session_id)
    kitchen = panel.root.locator("[data-testid=kitchen]")
    expect(kitchen).to_have_attribute("data-playing", "true", timeout=UI_TIMEOUT_MS)
    stage = panel.testid("kitchen-stage")

    # 0. the clock waits for the person: nothing ticks until they press Start
    expect(kitchen).to_have_attribute("data-clock", "waiting")
    expect(panel.testid("kitchen-starter")).to_be_visible()
    page.wait_for_timeout(1000)  # four ticks' worth of time: none comes
    assert _tick(kitchen) == 0 and session.kitchen()["tick"] == 0
    shots.take("0-the-kitchen-waits-for-start", focus=panel.root, where="start")
    panel.testid("kitchen-start").click()
    expect(panel.testid("kitchen-starter")).to_be_hidden()
    _wait_tick(page, 5)
    shots.take("1-kitchen-at-the-start", focus=panel.root, where="start")

    def sessions() -> list[str]:
        status, listing = jupyter_lab.request("GET", "cogym/api/sessions")
        assert status == 200, listing
        return [summary["session_id"] for summary in listing["sessions"]]

    known = sessions()

    # 1. the person clicks the kitchen and walks with the arrows: each key is one MOVE, and the
    # chef is where the server says, on the canvas too
    stage.click()
    assert _in_kitchen(page)
    before = _notebook_state(page, notebook)
    content = session.kitchen()
    start = session.chef("user")["pos"]
    direction = _a_free_step(content, start)
    page.keyboard.press(KEYS[direction])
    moved = wait_for(lambda: (pos := session.chef("user")["pos"]) != start and pos,
                     "the person's chef moves")
    assert moved == [start[0] + STEPS[direction][0], start[1] + STEPS[direction][1]]
    _wait_tick(page, _tick(kitchen) + PACE)
    back = {"up": "down", "down": "up", "left": "right", "right": "left"}[direction]
    page.keyboard.press(KEYS[back])
    wait_for(lambda: session.chef("user")["pos"] == start, "the chef steps back")
    _wait_tick(page, _tick(kitchen) + PACE)
    page.keyboard.press("Space")  # INTERACT with whatever the chef faces
    wait_for(lambda: ("INTERACT", "ok") in session.actions_of("user"), "INTERACT in the log")
    _wait_tick(page, _tick(kitchen) + PACE)
    shots.take("2-the-person-walked", focus=panel.root, where="start")

    # 2. keys that JupyterLab binds do nothing to the notebook while the kitchen has the focus:
    # no edit mode (Enter), no run (Shift/Ctrl/Alt+Enter), no new, cut or changed cell (B, X,
    # M), no move between cells (the arrows above, Shift+arrows)
    for key in ("Enter", "Shift+Enter", "Control+Enter", "Alt+Enter", "b", "x", "m",
                "Shift+ArrowUp", "Shift+ArrowDown"):
        page.keyboard.press(key)
    assert _in_kitchen(page)
    assert _notebook_state(page, notebook) == before
    assert sessions() == known and panel.session_id == session.session_id
    assert [name for name, _ in session.actions_of("user")] == ["MOVE", "MOVE", "INTERACT"]

    # 3. Escape gives the keys back: the focus leaves the kitchen for the notebook, in command
    # mode, and the next arrow moves the active cell as usual
    page.keyboard.press("Escape")
    assert not _in_kitchen(page)
    focus = page.evaluate("""() => {
        const focused = document.activeElement;
        return {inNotebook: Boolean(focused.closest('.jp-Notebook')),
                inPanel: Boolean(focused.closest('[data-testid=cogym-panel]'))};
    }""")
    assert focus == {"inNotebook": True, "inPanel": False}, focus
    released = _notebook_state(page, notebook)
    assert not released["edit"] and released["count"] == before["count"]
    page.keyboard.press("ArrowDown")
    page.wait_for_function(
        """([panel, was]) => {
            const cells = [...panel.querySelectorAll('.jp-Notebook .jp-Cell')];
            const active = cells.findIndex((cell) => cell.classList.contains('jp-mod-active'));
            return active === was + 1;
        }""", arg=[notebook.element_handle(), released["active"]], timeout=UI_TIMEOUT_MS)
    assert [name for name, _ in session.actions_of("user")] == ["MOVE", "MOVE", "INTERACT"]
    shots.take("3-escape-gave-the-keys-back", focus=start_cell, where="start")

    # 4. a macro button: the person prepares bread on a plate; the click gives the keys back
    # to the kitchen
    stage.click()
    panel.testid("kitchen-plate").check()
    panel.root.locator("[data-testid=kitchen-macro][data-macro=prepare-bread]").click()
    assert _in_kitchen(page)
    wait_for(lambda: ("PREPARE", "ok") in session.actions_of("user"), "PREPARE in the log")
    _wait_tick(page, _tick(kitchen) + 10)
    shots.take("4-preparing-bread", focus=panel.root, where="start")

    # 5. an order is served (the agent cooks; the person's bread may be in it), screenshots on
    # the way
    for ticks in (150, 300):
        _wait_tick(page, ticks, timeout=GAME_MS)
        shots.take(f"5-kitchen-at-tick-{ticks}", focus=panel.root, where="start")
    page.wait_for_function(
        "() => /served [1-9]/.test(document.querySelector('[data-testid=kitchen-counts]')"
        "?.textContent || '')", timeout=GAME_MS)
    shots.take("6-an-order-served", focus=panel.root, where="start")

    # 6. the game runs out: the result with the contribution of each role; the replay
    result = panel.testid("kitchen-result")
    expect(result).to_be_visible(timeout=GAME_MS)
    final = session.kitchen()
    assert final["result"] is not None and final["tick"] == TICKS
    expect(result.locator("[data-testid=kitchen-result-score]")).to_have_text(
        str(final["result"]["score"]))
    expect(result.locator("[data-testid=kitchen-result-served]")).to_have_text(
        str(final["result"]["served"]))
    assert final["result"]["served"] >= 1
    roles = result.locator("[data-testid=kitchen-contribution]")
    expect(roles).to_have_count(len(final["result"]["contribution"]))
    expect(result.locator("[data-testid=kitchen-contribution][data-role=user]")).to_contain_text(
        "user (you)")
    expect(panel.testid("kitchen-controls")).to_be_hidden()
    shots.take("7-the-result", focus=result, where="end")
    panel.testid("kitchen-replay").click()
    expect(kitchen).to_have_attribute("data-replaying", "true")
    shots.take("8-replaying", focus=stage, where="center")
    expect(kitchen).to_have_attribute("data-replaying", "false", timeout=UI_TIMEOUT_MS)

    # the log: the person's actions (accepted), a clock event per tick, the end by the clock
    events = read_events(jupyter_lab.results_dir / session.session_id)
    mine = session.actions_of("user")
    assert mine[:4] == [("MOVE", "ok"), ("MOVE", "ok"), ("INTERACT", "ok"), ("PREPARE", "ok")]
    ticks = [e for e in events if e.type is EventType.CLOCK]
    assert len(ticks) == TICKS and ticks[-1].info["tick"] == TICKS
    pressed = next(e for e in events if e.type is EventType.WAIT and e.actor == "user")
    assert ticks[0].seq > pressed.seq  # the clock started with Start
    served = [h for e in ticks for h in e.info.get("happened", []) if h.get("kind") == "served"]
    assert served, "no order was served"
    status = session.snapshot()
    assert status.get("end_reason") == "time_up", status.get("end_reason")
