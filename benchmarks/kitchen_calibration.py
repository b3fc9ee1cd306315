"""How hard the kitchen is, beside the DPT-Agent paper's figures: the rule-based chef (the FSM)
alone and with each rule-based partner, on both maps, over 20 seeds of 500-tick games.

Games are played straight on the env (``cogym_lab.envs.kitchen.policies.headless.play``): no
bus, no clock, no session, so a game takes no wall time per tick. Run against the installed
package::

    python benchmarks/kitchen_calibration.py [--games N] [--ticks T]

Each row gives the mean ± sd score, orders served and missed, and the paper's figure where it
gives one. The paper reports the FSM alone on Map 1 (New Counter Circuit, a one-chef game):
65 points with 3 orders missed (its Table 6, the inter-quartile mean of 20 games). It reports no
FSM-with-partner score; the best LM framework with a rule-based partner on Map 1 scores about 70.
The calibration (docs/real-time.md, "Calibration") aims at the first figure within 15%.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
from collections.abc import Callable, Sequence
from typing import Any

from cogym_lab.envs.kitchen import KitchenEnv
from cogym_lab.envs.kitchen.layout import available_layouts
from cogym_lab.envs.kitchen.policies.fsm import KitchenFSM
from cogym_lab.envs.kitchen.policies.headless import play
from cogym_lab.envs.kitchen.policies.partners import Assembler, BeefSpecialist, LettuceSpecialist

#: The paper's names for the shipped layouts.
MAPS = {"counter_circuit": "Map 1", "asymmetric_advantages": "Map 2"}
PARTNERS: dict[str, Callable[[str], Any] | None] = {
    "alone": None, "assembler": Assembler, "beef": BeefSpecialist, "lettuce": LettuceSpecialist,
    "fsm": KitchenFSM,
}
#: (layout, partner) -> the paper's figure for that row.
PAPER = {("counter_circuit", "alone"): "65 (3 missed)",
         ("counter_circuit", "assembler"): "~70 best LM+FSM",
         ("counter_circuit", "beef"): "~70 best LM+FSM",
         ("counter_circuit", "lettuce"): "~70 best LM+FSM"}
#: The paper's target for the FSM alone on Map 1, and the tolerance the calibration keeps to.
TARGET, TOLERANCE = 65.0, 0.15


def play_games(layout: str, partner: str, games: int, ticks: int) -> list[dict[str, Any]]:
    """The final view content of ``games`` games, seeds 0 to games-1."""
    finals = []
    for seed in range(games):
        policies: dict[str, Any] = {"agent": KitchenFSM("agent")}
        make_partner = PARTNERS[partner]
        if make_partner is not None:
            policies["user"] = make_partner("user")
        env = KitchenEnv(layout=layout, ticks=ticks)
        finals.append(play(env, policies, seed))
    return finals


def _mean_sd(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):6.1f} ± {sd:4.1f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=20, help="games (seeds) per row")
    parser.add_argument("--ticks", type=int, default=500, help="ticks per game (the paper: 500)")
    args = parser.parse_args(argv)
    print(f"python {platform.python_version()}; {args.games} games of {args.ticks} ticks per row")
    print(f"{'map':<30}{'partner':<11}{'score':>15}{'served':>8}{'missed':>8}  paper")
    alone_map1: float | None = None
    for layout in available_layouts():
        for partner in PARTNERS:
            finals = play_games(layout, partner, args.games, args.ticks)
            scores = [float(final["score"]) for final in finals]
            if (layout, partner) == ("counter_circuit", "alone"):
                alone_map1 = statistics.mean(scores)
            name = f"{MAPS.get(layout, '?')} {layout}"
            print(f"{name:<30}{partner:<11}{_mean_sd(scores):>15}"
                  f"{statistics.mean(f['served'] for f in finals):>8.1f}"
                  f"{statistics.mean(f['missed'] for f in finals):>8.1f}"
                  f"  {PAPER.get((layout, partner), '-')}")
    if alone_map1 is not None:
        low, high = TARGET * (1 - TOLERANCE), TARGET * (1 + TOLERANCE)
        verdict = "within" if low <= alone_map1 <= high else "OUTSIDE"
        print(f"FSM alone on Map 1: {alone_map1:.1f}, {verdict} {low:.2f}-{high:.2f} "
              f"(the paper's {TARGET:g} ± {TOLERANCE:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
