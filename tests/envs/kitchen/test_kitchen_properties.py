"""Properties of the kitchen under random play: two chefs sent random atomic and macro actions
between random runs of ticks, with the invariants checked after every tick.

* Items are conserved: each item is in exactly one place; new ones come only from dispensers,
  and one goes only by being served, thrown away or burnt (joining a plate keeps it, inside).
* A fire starts only in a pan that held overcooked beef.
* The score is the sum of the rewards of the order happenings (served, wrong_served, missed),
  and the sum of the ticks' rewards.
* Chefs stand on distinct floor tiles; plates hold ingredients that may share a plate and are
  named by their dish; the view is plain JSON that KitchenView reads.
* The same seed and the same actions give the same views, tick after tick.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from cogym_lab.envs.kitchen import KitchenEnv, KitchenView
from cogym_lab.envs.kitchen import items as it
from cogym_lab.envs.kitchen.game import INTERACT, Game
from cogym_lab.envs.kitchen.layout import (
    BEEF_STATION,
    BREAD_STATION,
    DIRECTIONS,
    LETTUCE_STATION,
    PAN,
    PLATE_STATION,
    parse_layout,
)
from tests.envs.kitchen.test_kitchen_env import cook
from tests.envs.kitchen.test_kitchen_game import TINY

ROLES = ("agent", "user")
#: A crowded copy of the tiny kitchen: orders come fast and expire fast.
TINY_BUSY = TINY.format(dishes='"BeefBurger", "LettuceBurger", "BeefLettuceBurger"', first=2,
                        interval=15, deadline=60)
MACROS = [
    *(f'PREPARE(food="{food}", plate={plate})' for food in ("Beef", "Lettuce", "Bread")
      for plate in ("true", "false")),
    *(f'ASSEMBLE(food="{dish}")' for dish in it.RECIPES),
    *(f'SERVE(food="{dish}")' for dish in it.BURGER_REWARDS),
    'PASS_ON(thing="Plate")', 'PASS_ON(thing="Beef", thing_status="Well-cooked")',
    'PASS_ON(thing="Lettuce")', 'PASS_ON(thing="FireExtinguisher")',
    "PUT_OUT_FIRE()", "CLEAN_A_COUNTER()",
]
ATOMIC = [*(f'MOVE(direction="{direction}")' for direction in DIRECTIONS), "INTERACT()"]
_DISPENSED = {BEEF_STATION: ("Beef", "Fresh"), LETTUCE_STATION: ("Lettuce", "Unchopped"),
              BREAD_STATION: ("Bread", ""), PLATE_STATION: ("Plate", "")}
_ORDER_KINDS = ("served", "wrong_served", "missed")


def build(layout: str, seed: int) -> KitchenEnv:
    if layout == "tiny":
        env = KitchenEnv()
        env.layout = parse_layout("tiny", TINY_BUSY)  # a kitchen the shipped set lacks
    else:
        env = KitchenEnv(layout=layout)
    env.reset(seed=seed)
    return env


def game_of(env: KitchenEnv) -> Game:
    assert env.game is not None
    return env.game


def uids(game: Game) -> list[int]:
    return [item.uid for _, item in game.all_items()]


class KitchenMachine(RuleBasedStateMachine):
    """Random play, checked tick by tick; replayed at the end to check determinism."""

    @initialize(layout=st.sampled_from(["tiny", "counter_circuit", "asymmetric_advantages"]),
                seed=st.integers(0, 2**16))
    def start(self, layout: str, seed: int) -> None:
        self.layout, self.seed = layout, seed
        self.env = build(layout, seed)
        self.log: list[tuple[str, Any]] = []  # ("step", (role, action)) or ("tick", None)
        self.contents: list[dict] = [self.content()]
        self.order_rewards = 0
        self.tick_rewards = 0.0

    def content(self) -> dict:
        return self.env.view("agent")["kitchen"].content

    # -- what members do ------------------------------------------------------------------------

    @rule(role=st.sampled_from(ROLES), action=st.sampled_from(ATOMIC))
    def atomic(self, role: str, action: str) -> None:
        self.step(role, action)

    @rule(role=st.sampled_from(ROLES), action=st.sampled_from(MACROS))
    def macro(self, role: str, action: str) -> None:
        self.step(role, action)

    @rule(role=st.sampled_from(ROLES), action=st.sampled_from(MACROS),
          ticks=st.integers(5, 60))
    def macro_then_wait(self, role: str, action: str, ticks: int) -> None:
        """Give a macro time to finish: random play rarely lets one run long otherwise."""
        self.step(role, action)
        self.run(ticks)

    @rule(role=st.sampled_from(ROLES), ticks=st.integers(10, 120))
    def play_well(self, role: str, ticks: int) -> None:
        """Let the scripted cook of the env tests choose ``role``'s macros for a while, so
        that dishes get served (and burnt, and served wrong) among the random actions."""
        for _ in range(ticks):
            view = KitchenView.from_content(self.content())
            chef = view.chef(role)
            if chef is not None and chef.macro is None and not chef.queued:
                macro = cook(view, role)
                if macro is not None:
                    self.step(role, macro)
            self.tick()

    def step(self, role: str, action: str) -> None:
        before = self.content()
        result = self.env.step(role, action)
        self.log.append(("step", (role, action)))
        if result.error:  # refused: a full queue, a wall, the game over
            assert self.content() == before
        else:
            assert result.private

    @rule(ticks=st.integers(1, 25))
    def run(self, ticks: int) -> None:
        for _ in range(ticks):
            self.tick()

    def tick(self) -> None:
        game = game_of(self.env)
        if game.over:
            return
        before = set(uids(game))
        smouldering = {pos for pos in game.layout.tiles(PAN)
                       if (item := game.placed.get(pos)) is not None
                       and item.status == it.OVERCOOKED and pos not in game.fires}
        fires_before = set(game.fires)
        facing = {chef.role: game.layout.kind(chef.faced) for chef in game.chefs}
        result = self.env.advance()
        self.log.append(("tick", None))
        self.contents.append(self.content())
        self.tick_rewards += result.reward
        info = result.info
        for happening in info["happened"]:
            event(happening["kind"])  # --hypothesis-show-statistics: what random play reached
        self.order_rewards += sum(event["reward"] for event in info["happened"]
                                  if event["kind"] in _ORDER_KINDS)
        self.check_items(game, before, info, facing)
        new_fires = set(game.fires) - fires_before
        assert new_fires <= smouldering, (new_fires, smouldering)
        assert len([e for e in info["happened"] if e["kind"] == "fire"]) == len(new_fires)
        assert json.loads(json.dumps(info)) == info

    def check_items(self, game: Game, before: set[int], info: dict,
                    facing: dict[str, str]) -> None:
        now = uids(game)
        assert len(now) == len(set(now)), "an item is in two places"
        created, removed = game.ledger.created, dict(game.ledger.removed)
        assert set(now) - before == set(created)
        assert before - set(now) == set(removed)
        assert set(removed.values()) <= {"served", "wrong_served", "trash", "burnt"}
        by_uid = {item.uid: item for _, item in game.all_items()}
        for uid in created:  # made by a chef interacting with a dispenser of its kind
            made = (by_uid[uid].name, by_uid[uid].status)
            assert any(info["atomic"].get(role) == INTERACT
                       and _DISPENSED.get(kind) == made for role, kind in facing.items()), made

    # -- what must always hold -------------------------------------------------------------------

    @invariant()
    def score_is_the_sum_of_order_rewards(self) -> None:
        game = game_of(self.env)
        assert game.score == self.order_rewards == self.tick_rewards

    @invariant()
    def chefs_stand_apart_on_floor(self) -> None:
        game = game_of(self.env)
        spots = [chef.pos for chef in game.chefs]
        assert len(set(spots)) == len(spots)
        assert all(game.layout.walkable(pos) for pos in spots)

    @invariant()
    def plates_hold_what_may_share_a_plate(self) -> None:
        for _, item in game_of(self.env).all_items():
            if item.is_plate:
                names = [inner.name for inner in item.contents]
                assert len(names) == len(set(names))
                assert it.can_share_plate(frozenset(names))
                assert all(inner.is_ready_ingredient for inner in item.contents)
                assert item.name == (it.dish_of(frozenset(names)) or it.PLATE)
            else:
                assert not item.contents

    @invariant()
    def the_view_reads_back(self) -> None:
        content = self.content()
        assert json.loads(json.dumps(content)) == content
        view = KitchenView.from_content(content)
        assert view.counts()[("FireExtinguisher", "")] == 1
        assert view.counts()[("Fire", "")] == len(view.fires)

    def teardown(self) -> None:
        if not hasattr(self, "env"):
            return
        again = build(self.layout, self.seed)
        contents = [again.view("agent")["kitchen"].content]
        for kind, payload in self.log:
            if kind == "step":
                again.step(*payload)
            elif not game_of(again).over:
                again.advance()
                contents.append(again.view("agent")["kitchen"].content)
        assert contents == self.contents


KitchenMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
test_random_play_keeps_the_rules = KitchenMachine.TestCase
