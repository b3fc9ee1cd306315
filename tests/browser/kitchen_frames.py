"""Kitchen contents and the update frames that carry them, for the panel's kitchen view on the
stand-in page (``tests/browser/test_panel_kitchen.py``), and the canvas read back from the page.

The content follows the kitchen's view format (render type ``kitchen``); the grid is the
New Counter Circuit layout, so the drawings look like the game's.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page

from tests.browser.lab_page import UI_TIMEOUT_MS
from tests.browser.seat_frames import OneComponentSeat

SESSION = "kitchen-1"
GRID = ["#XBXXLXXOXO#",
        "X..........X",
        "R.CCCCCCCC.S",
        "T.CCCCCCCC.X",
        "X..........X",
        "#XPXXKXKXXX#"]
LEGEND = {".": "floor", "#": "wall", "X": "counter", "C": "center counter", "B": "beef station",
          "L": "lettuce station", "R": "bread station", "P": "plate station", "O": "pan",
          "K": "chopping board", "S": "serving window", "T": "trash can"}
#: The chefs' colours as the panel draws them, in team order (js/session_panel.js CHEF_COLOURS).
AGENT_BLUE = (0x2F, 0x6F, 0xDB)
PERSON_ORANGE = (0xE0, 0x76, 0x2B)

CONTEXT = {
    "session_id": SESSION, "task": "kitchen",
    "task_description": "Cook burgers with your partner before the orders run out.",
    "role": "user", "kind": "person",
    "team": [{"role": "agent", "kind": "agent"}, {"role": "user", "kind": "person"}],
    "action_specs": [], "collaboration_specs": [],
}


def item(name: str, status: str = "", progress: float | None = None,
         contents: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"name": name, "status": status, "progress": progress, "contents": contents or []}


def chef(role: str, pos: tuple[int, int], facing: str = "down",
         holding: dict[str, Any] | None = None, macro: str | None = None) -> dict[str, Any]:
    return {"role": role, "pos": list(pos), "facing": facing, "holding": holding,
            "macro": macro, "queued": 0}


def kitchen(tick: int, *, chefs: list[dict[str, Any]] | None = None, ticks: int = 200,
            tick_seconds: float = 0.25, score: int = 0, **fields: Any) -> dict[str, Any]:
    """A kitchen at ``tick``: by default the agent top left and the person bottom right, a
    beef cooking in the left pan, a lettuce half chopped, a burger on a center counter, two
    orders and a fire in the right pan."""
    content: dict[str, Any] = {
        "layout": "counter_circuit", "grid": GRID, "legend": LEGEND,
        "tick": tick, "ticks": ticks, "tick_seconds": tick_seconds, "score": score,
        "done": False,
        "chefs": chefs if chefs is not None else [
            chef("agent", (1, 1), "up", macro='PREPARE(food="Beef", plate=false)'),
            chef("user", (10, 4), "down")],
        "items": [
            {"pos": [8, 0], "item": item("Beef", "In-progress", 0.4)},
            {"pos": [5, 5], "item": item("Lettuce", "Unchopped", 0.6)},
            {"pos": [4, 2], "item": item("BeefBurger", "", None,
                                         [item("Bread"), item("Beef", "Well-cooked")])},
            {"pos": [11, 1], "item": item("FireExtinguisher")},
        ],
        "orders": [
            {"id": 1, "dish": "BeefBurger", "remaining": max(0, 120 - tick), "total": 200,
             "reward": 20},
            {"id": 2, "dish": "BeefLettuceBurger", "remaining": max(0, 200 - tick),
             "total": 240, "reward": 25},
        ],
        "fires": [[10, 0]], "served": 0, "missed": 0, "wrong": 0, "result": None,
    }
    content.update(fields)
    return content


class KitchenSeat(OneComponentSeat):
    """Makes the frames of a seat whose view is one ``kitchen`` component, one per tick."""

    def __init__(self, role: str = "user") -> None:
        super().__init__("kitchen", session=SESSION, context=CONTEXT, role=role,
                         event_type="clock", actor="env", end_reason="time_up")


_PIXEL = """([x, y, dx, dy]) => {
    const canvas = document.querySelector('[data-testid=kitchen-canvas]');
    const tile = Number(canvas.dataset.tile);
    const ratio = canvas.width / canvas.clientWidth;
    const px = (Number(canvas.dataset.gridLeft) + (x + 0.5 + dx) * tile) * ratio;
    const py = (Number(canvas.dataset.gridTop) + (y + 0.5 + dy) * tile) * ratio;
    return [...canvas.getContext('2d').getImageData(Math.round(px), Math.round(py), 1, 1).data]
        .slice(0, 3);
}"""


def pixel(page: Page, x: int, y: int, dx: float = 0.0, dy: float = 0.0) -> tuple[int, ...]:
    """The colour the canvas has at tile (x, y), moved by (dx, dy) tiles from its centre."""
    return tuple(page.evaluate(_PIXEL, [x, y, dx, dy]))


def wait_for_chef(page: Page, pos: tuple[int, int], colour: tuple[int, int, int],
                  facing: str = "down") -> None:
    """Wait until tile ``pos`` shows a chef of ``colour`` (sampled away from the side it
    faces, where it holds things)."""
    away = {"up": (0, 0.2), "down": (0, -0.2), "left": (0.2, 0), "right": (-0.2, 0)}[facing]
    page.wait_for_function(f"""() => {{
        const colour = ({_PIXEL})({[pos[0], pos[1], away[0], away[1]]});
        return JSON.stringify(colour) === JSON.stringify({list(colour)});
    }}""", timeout=UI_TIMEOUT_MS)


def shown_tick(page: Page, tick: int) -> None:
    """Wait until the canvas shows ``tick`` (it draws on the next animation frame)."""
    page.wait_for_function(
        "(tick) => document.querySelector('[data-testid=kitchen-canvas]')"
        "?.dataset.shownTick === String(tick)", arg=tick, timeout=UI_TIMEOUT_MS)
