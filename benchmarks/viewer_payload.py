"""What the trajectory viewer sends for a long real-time game, and how fast it opens.

A kitchen game of ``--ticks`` ticks (default 3000; the FSM agent beside the assembler partner,
a real session on the in-process bus at ``--tick-seconds``, default 0.01 s) is written to a
temporary folder. The script prints:

* how long replaying the log and building the viewer's payload take;
* the payload's size, gzipped (what the widget's trait and the HTML export carry) and as JSON,
  per tick, beside what one whole view per member per tick would weigh;
* with Debian's Chromium (``/usr/bin/chromium``) and Playwright installed: the HTML export's
  load time (navigation to the first event drawn, and the viewer's own unpacking and parsing
  time), and the time per step of 300 arrow-key presses with the kitchen redrawn after each.

It checks nothing.

    python benchmarks/viewer_payload.py [--ticks 3000] [--tick-seconds 0.01] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

from cogym_lab.envs import make_env
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.replay import replay
from cogym_lab.records.viewer import build_trajectory
from cogym_lab.teams import load_team
from cogym_lab.teams.build import build_team
from cogym_lab.widgets.trajectory_export import export_html

CHROMIUM = Path("/usr/bin/chromium")
STEPS = 300


def play(folder: Path, ticks: int, tick_seconds: float) -> float:
    """A kitchen game written to ``folder``; the seconds it took."""
    env = make_env("kitchen", ticks=ticks, tick_seconds=tick_seconds)
    team = load_team("kitchen-fsm")
    members, kinds = build_team(team, env, {})
    started = time.perf_counter()
    Session(env, members, kinds=kinds, results_dir=folder,
            config=SessionConfig(**team.session)).run_sync()
    return time.perf_counter() - started


def browser_times(page_file: Path, events: int) -> dict[str, float] | None:
    """Open the export in Chromium: load time, and milliseconds per arrow-key step."""
    if not CHROMIUM.exists():
        return None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1600, "height": 1200})
        started = time.perf_counter()
        page.goto(page_file.as_uri())
        root = page.locator("[data-testid=trajectory-viewer][data-state=ready]")
        root.wait_for(timeout=120_000)
        page.locator("[data-testid=kitchen-canvas][data-shown-tick]").wait_for(timeout=120_000)
        load = time.perf_counter() - started
        unpack = float(root.get_attribute("data-load-ms") or "nan")
        root.focus()
        page.keyboard.press("End")  # from the end, back: each step decodes a frame anew
        steps = min(STEPS, events - 1)
        started = time.perf_counter()
        for _ in range(steps):
            page.keyboard.press("ArrowLeft")
        # the last frame drawn: the canvas shows the tick of the event reached
        page.wait_for_function(
            """() => {
                const kitchen = document.querySelector('[data-testid=kitchen]');
                const canvas = document.querySelector('[data-testid=kitchen-canvas]');
                return kitchen && canvas && canvas.dataset.shownTick === kitchen.dataset.tick;
            }""", timeout=120_000)
        scrub = time.perf_counter() - started
        browser.close()
    return {"load_s": load, "unpack_ms": unpack, "step_ms": scrub / steps * 1000}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ticks", type=int, default=3000)
    parser.add_argument("--tick-seconds", type=float, default=0.01)
    parser.add_argument("--keep", type=Path, default=None,
                        help="write the session and the export here instead of a temp folder")
    args = parser.parse_args(argv)
    print(f"python {platform.python_version()} on {platform.machine()}; a kitchen game of "
          f"{args.ticks} ticks")
    with tempfile.TemporaryDirectory() as scratch:
        root = args.keep or Path(scratch)
        folder = root / "kitchen"
        played = play(folder, args.ticks, args.tick_seconds)
        started = time.perf_counter()
        replayed = replay(folder)
        replay_s = time.perf_counter() - started
        started = time.perf_counter()
        trajectory = build_trajectory(folder)
        build_s = time.perf_counter() - started
        started = time.perf_counter()
        sent = trajectory.encoded()
        encode_s = time.perf_counter() - started
        payload = trajectory.payload
        as_json = len(json.dumps(payload.model_dump(mode="json"), ensure_ascii=False))
        ticks = sum(1 for event in payload.events if event.type == "clock")
        last = payload.events[-1].seq
        one_view = sum(len(json.dumps(trajectory.view(last, role), ensure_ascii=False))
                       for role in payload.roles)
        whole = sum("v" in entry for entry in payload.values)
        page_file = export_html(trajectory, root / "kitchen.html")
        print(f"events {len(payload.events)} ({ticks} ticks); played in {played:.1f} s")
        print(f"replay {replay_s:.2f} s; build (replay + states + diffs) {build_s:.2f} s; "
              f"gzip {encode_s:.2f} s")
        print(f"value table: {len(payload.values)} entries, {whole} whole, "
              f"{len(payload.values) - whole} patches")
        print(f"payload: {len(sent) / 1024:.0f} KiB gzipped ({len(sent) / max(ticks, 1):.0f} "
              f"bytes a tick), {as_json / 1024:.0f} KiB as JSON")
        print(f"one whole view per member per tick would be {one_view * ticks / 2**20:.1f} MiB "
              f"as JSON ({one_view} bytes a tick)")
        print(f"HTML export: {page_file.stat().st_size / 1024:.0f} KiB")
        times = browser_times(page_file, len(payload.events))
        if times is None:
            print("browser: Chromium or Playwright missing, load time not measured")
        else:
            print(f"browser: first event drawn {times['load_s']:.2f} s after navigation "
                  f"(unpack and parse {times['unpack_ms']:.0f} ms); "
                  f"{times['step_ms']:.1f} ms a step over {STEPS} arrow keys")
        if replayed.note:
            print(f"note: {replayed.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
