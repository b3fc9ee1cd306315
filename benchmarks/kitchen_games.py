"""Headless kitchen games per second: the FSM agent with each rule-based partner, 500-tick games
played straight on the env (``cogym_lab.envs.kitchen.policies.headless.play``: no bus, no clock, no
session), on both layouts. Run from the repository root::

    python benchmarks/kitchen_games.py [--games N] [--ticks T]

It prints one row per layout and partner: games per second, ticks per second, and the mean
score and orders served and missed (so a change that makes the members faster but worse shows
too). It checks nothing. Every game has its own seed (0 to N-1), so two runs play the same
games.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from cogym_lab.envs.kitchen import KitchenEnv
from cogym_lab.envs.kitchen.policies.fsm import KitchenFSM
from cogym_lab.envs.kitchen.policies.headless import play
from cogym_lab.envs.kitchen.layout import available_layouts
from cogym_lab.envs.kitchen.policies.partners import Assembler, BeefSpecialist, LettuceSpecialist

PARTNERS: dict[str, Callable[[str], Any]] = {
    "assembler": Assembler, "beef": BeefSpecialist, "lettuce": LettuceSpecialist,
    "fsm": KitchenFSM,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=20, help="games per layout and partner")
    parser.add_argument("--ticks", type=int, default=500, help="ticks per game")
    args = parser.parse_args(argv)
    print(f"python {platform.python_version()} on {platform.machine()}; {args.games} games "
          f"of {args.ticks} ticks per row")
    print(f"{'layout':<24}{'partner':<11}{'games/s':>9}{'ticks/s':>10}{'score':>8}"
          f"{'served':>8}{'missed':>8}")
    for layout in available_layouts():
        for name, partner in PARTNERS.items():
            finals = []
            started = time.perf_counter()
            for seed in range(args.games):
                env = KitchenEnv(layout=layout, ticks=args.ticks)
                finals.append(play(env, {"agent": KitchenFSM("agent"),
                                         "user": partner("user")}, seed))
            seconds = time.perf_counter() - started
            ticks = sum(final["tick"] for final in finals)
            print(f"{layout:<24}{name:<11}{args.games / seconds:>9.1f}{ticks / seconds:>10.0f}"
                  f"{statistics.mean(f['score'] for f in finals):>8.1f}"
                  f"{statistics.mean(f['served'] for f in finals):>8.1f}"
                  f"{statistics.mean(f['missed'] for f in finals):>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
