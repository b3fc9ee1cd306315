"""The kitchen's rules, tick by tick, on a tiny kitchen where every tile is a step or two away:
cooking to a fire and putting it out, chopping, plating each dish, serving right and wrong,
orders running out, key-event credits, and how two chefs' moves are resolved together."""

from __future__ import annotations

import pytest

from cogym_lab.envs.kitchen import items as it
from cogym_lab.envs.kitchen.game import (
    CHOPS_NEEDED,
    EXTINGUISH_SPRAYS,
    FIRE_AFTER,
    OVERCOOKED_AFTER,
    WELL_COOKED_AFTER,
    Game,
)
from cogym_lab.envs.kitchen.layout import LayoutError, load_layout, parse_layout

#: A tiny kitchen. Chef "a" starts at (1,1): up is the beef station, left the pan. Along the
#: top: beef, lettuce, bread, plates; right of (4,1) the board, of (4,2) the extinguisher's
#: counter, of (4,3) the trash; left of (1,2) a counter, of (1,3) the serving window; below
#: (2,3) a center counter. Chef "b" starts at (4,3).
TINY = """
title = "Tiny"
grid = '''
#BLRP#
O....K
X....X
S....T
#XCXX#
'''
chefs = [[1, 1], [4, 3]]
extinguisher = [5, 2]

[orders]
dishes = [{dishes}]
first = {first}
interval = {interval}
deadline = {deadline}
max_open = 4
"""


def tiny_game(dishes: tuple[str, ...] = ("BeefBurger",), first: int = 1, interval: int = 900,
              deadline: int = 900, roles: tuple[str, ...] = ("a", "b"), ticks: int = 1000,
              seed: int = 0) -> Game:
    text = TINY.format(dishes=", ".join(f'"{dish}"' for dish in dishes), first=first,
                       interval=interval, deadline=deadline)
    return Game(parse_layout("tiny", text), roles, ticks, seed)


def act(game: Game, role: str, *atomics: str) -> list[dict]:
    """Queue each atomic action for ``role`` and play a tick for it; the ticks' happenings."""
    happened: list[dict] = []
    chef = game.chef(role)
    assert chef is not None
    for atomic in atomics:
        game.queue(chef, atomic)
        happened += game.advance()[1]["happened"]
    return happened


def wait(game: Game, ticks: int) -> list[dict]:
    happened: list[dict] = []
    for _ in range(ticks):
        happened += game.advance()[1]["happened"]
    return happened


def held(game: Game, role: str) -> it.Item | None:
    chef = game.chef(role)
    assert chef is not None
    return chef.holding


def kinds(happened: list[dict]) -> list[str]:
    return [event["kind"] for event in happened]


# -- walking ------------------------------------------------------------------------------------


def test_a_move_towards_a_counter_only_turns_the_chef():
    game = tiny_game()
    act(game, "a", "up")
    chef = game.chef("a")
    assert chef is not None and chef.pos == (1, 1) and chef.facing == "up"
    act(game, "a", "right")
    assert chef.pos == (2, 1) and chef.facing == "right"


def test_of_two_chefs_stepping_onto_one_tile_the_first_gets_it():
    game = tiny_game()
    a, b = game.chef("a"), game.chef("b")
    assert a is not None and b is not None
    b.pos = (3, 1)
    game.queue(a, "right")  # a to (2,1)
    game.queue(b, "left")  # b to (2,1)
    info = game.advance()[1]
    assert (a.pos, b.pos) == ((2, 1), (3, 1))  # chef order decides; nobody waits for ever
    assert info["atomic"] == {"a": "right", "b": "left"}  # both tried
    assert (a.facing, b.facing) == ("right", "left")


def test_two_chefs_swapping_tiles_both_stay():
    game = tiny_game()
    a, b = game.chef("a"), game.chef("b")
    assert a is not None and b is not None
    b.pos = (2, 1)
    game.queue(a, "right")
    game.queue(b, "left")
    game.advance()
    assert (a.pos, b.pos) == ((1, 1), (2, 1))


def test_a_chef_may_step_where_the_other_is_leaving_but_not_where_it_stays():
    game = tiny_game()
    a, b = game.chef("a"), game.chef("b")
    assert a is not None and b is not None
    b.pos = (2, 1)
    game.queue(a, "right")
    game.queue(b, "right")  # b moves on to (3,1), a follows into (2,1)
    game.advance()
    assert (a.pos, b.pos) == ((2, 1), (3, 1))
    game.queue(a, "right")  # b stays put: a is blocked
    game.advance()
    assert a.pos == (2, 1) and a.facing == "right"


def test_a_chef_following_a_blocked_chef_is_blocked_too():
    game = tiny_game(roles=("a", "b"))
    a, b = game.chef("a"), game.chef("b")
    assert a is not None and b is not None
    a.pos, b.pos = (3, 2), (4, 2)
    game.queue(a, "right")  # into b's tile
    game.queue(b, "right")  # b walks into the counter: it only turns, so a cannot follow
    game.advance()
    assert (a.pos, b.pos) == ((3, 2), (4, 2))


# -- cooking, fire, extinguishing -------------------------------------------------------------


def test_beef_cooks_overcooks_and_catches_fire_in_the_pan():
    game = tiny_game()
    act(game, "a", "up", "interact")  # beef from the station
    beef = held(game, "a")
    assert beef is not None and (beef.name, beef.status) == ("Beef", "Fresh")
    act(game, "a", "left", "interact")  # into the pan: cooking starts at once
    assert held(game, "a") is None
    assert game.placed[(0, 1)].status == "In-progress"
    # the put happened on the second tick; the cook step of that tick already counted one
    wait(game, WELL_COOKED_AFTER - 2)
    assert game.placed[(0, 1)].status == "In-progress"
    wait(game, 1)
    assert game.placed[(0, 1)].status == "Well-cooked"
    wait(game, OVERCOOKED_AFTER - WELL_COOKED_AFTER - 1)
    assert game.placed[(0, 1)].status == "Well-cooked"
    wait(game, 1)
    assert game.placed[(0, 1)].status == "Overcooked"
    assert not game.fires
    happened = wait(game, FIRE_AFTER - OVERCOOKED_AFTER)
    assert happened == [{"kind": "fire", "pos": [0, 1]}]
    assert (0, 1) in game.fires


def test_a_burning_pan_is_blocked_until_the_extinguisher_puts_it_out():
    game = tiny_game()
    act(game, "a", "up", "interact", "left", "interact")
    wait(game, FIRE_AFTER)
    assert (0, 1) in game.fires
    act(game, "a", "interact")  # an empty hand cannot take the beef out of the fire
    assert held(game, "a") is None and (0, 1) in game.placed
    act(game, "a", "down", "right", "right", "right", "right", "interact")  # the extinguisher
    extinguisher = held(game, "a")
    assert extinguisher is not None and extinguisher.name == "FireExtinguisher"
    act(game, "a", "left", "left", "left", "up", "left")  # back beside the pan, facing it
    happened = act(game, "a", *["interact"] * (EXTINGUISH_SPRAYS - 1))
    assert (0, 1) in game.fires and not happened
    assert extinguisher.progress == pytest.approx((EXTINGUISH_SPRAYS - 1) / EXTINGUISH_SPRAYS)
    happened = act(game, "a", "interact")
    assert happened == [{"kind": "fire_out", "chef": "a", "pos": [0, 1]}]
    assert not game.fires and (0, 1) not in game.placed  # the burnt beef is gone
    assert game.ledger.removed and game.ledger.removed[0][1] == "burnt"


def test_taking_beef_out_stops_its_cooking():
    game = tiny_game()
    act(game, "a", "up", "interact", "left", "interact")
    wait(game, 5)
    act(game, "a", "interact")  # out with an empty hand
    beef = held(game, "a")
    assert beef is not None and beef.status == "In-progress"
    ticks = beef.ticks
    wait(game, 30)
    assert beef.ticks == ticks and beef.status == "In-progress"


def test_overcooked_beef_cannot_go_back_in_a_pan_or_on_a_plate():
    game = tiny_game()
    act(game, "a", "up", "interact", "left", "interact")
    wait(game, OVERCOOKED_AFTER)
    act(game, "a", "interact")
    beef = held(game, "a")
    assert beef is not None and beef.status == "Overcooked"
    act(game, "a", "interact")  # facing the empty pan: refused
    assert held(game, "a") is beef and (0, 1) not in game.placed


# -- chopping ---------------------------------------------------------------------------------


def test_lettuce_is_chopped_one_interact_at_a_time():
    game = tiny_game()
    act(game, "a", "right", "up", "interact")  # lettuce from its station at (2,0)
    act(game, "a", "right", "right", "right", "interact")  # at (4,1), facing the board
    lettuce = game.placed[(5, 1)]
    assert lettuce.status == "Unchopped"
    act(game, "a", *["interact"] * (CHOPS_NEEDED - 1))
    assert lettuce.status == "Unchopped"
    assert lettuce.progress == pytest.approx((CHOPS_NEEDED - 1) / CHOPS_NEEDED)
    act(game, "a", "interact")
    assert lettuce.status == "Chopped" and lettuce.credits == {"prepare_lettuce": "a"}
    act(game, "a", "interact")  # an empty hand picks the chopped lettuce up
    assert held(game, "a") is lettuce


def test_the_board_takes_only_lettuce():
    game = tiny_game()
    act(game, "a", "up", "interact", "right", "right", "right", "right", "interact")
    assert (5, 1) not in game.placed
    beef = held(game, "a")
    assert beef is not None and beef.name == "Beef"


# -- plates and dishes ------------------------------------------------------------------------


def make_beef_burger(game: Game, role: str = "a") -> None:
    """Cook a beef, take a plate, plate the beef, add bread from the station; ``role`` ends at
    (3,1) holding a BeefBurger."""
    act(game, role, "up", "interact", "left", "interact")
    wait(game, WELL_COOKED_AFTER)
    act(game, role, "right", "right", "right", "up", "interact")  # a plate at (4,1)
    act(game, role, "left", "left", "left", "left", "interact")  # plate the beef at (1,1)
    act(game, role, "right", "right", "up", "interact")  # bread onto the plate at (3,1)


def test_plating_well_cooked_beef_and_bread_makes_a_beef_burger():
    game = tiny_game()
    make_beef_burger(game)
    burger = held(game, "a")
    assert burger is not None and burger.name == "BeefBurger"
    assert [(item.name, item.status) for item in burger.contents] == [
        ("Bread", ""), ("Beef", "Well-cooked")]
    assert burger.to_view()["contents"][1]["name"] == "Beef"


@pytest.mark.parametrize(("ingredients", "dish"), [
    (("Bread", "Lettuce"), "LettuceBurger"),
    (("Bread", "Beef"), "BeefBurger"),
    (("Beef", "Lettuce"), "BeefLettuce"),
    (("Lettuce", "Beef", "Bread"), "BeefLettuceBurger"),
])
def test_a_plate_is_named_by_the_dish_its_ingredients_make(ingredients, dish):
    plate = it.Item(uid=1, name="Plate")
    for n, name in enumerate(ingredients):
        ingredient = it.Item(uid=10 + n, name=name, status=it.READY_STATUS[name])
        assert plate.accepts(ingredient)
        plate.add(ingredient)
        assert plate.name == (dish if n == len(ingredients) - 1 else plate.name)
    assert plate.name == dish
    assert not plate.accepts(it.Item(uid=99, name=ingredients[0],
                                     status=it.READY_STATUS[ingredients[0]]))


def test_a_plate_takes_only_ready_ingredients():
    plate = it.Item(uid=1, name="Plate")
    for name, status in [("Beef", "Fresh"), ("Beef", "In-progress"), ("Beef", "Overcooked"),
                         ("Lettuce", "Unchopped"), ("FireExtinguisher", ""), ("Plate", "")]:
        assert not plate.accepts(it.Item(uid=2, name=name, status=status))


def test_ingredients_join_plates_from_either_side_and_plates_merge():
    game = tiny_game()
    act(game, "a", "right", "right", "up", "interact")  # bread, at (3,1)
    act(game, "a", "left", "left", "down", "left", "interact")  # on the counter at (0,2)
    act(game, "a", "up", "right", "right", "right", "up", "interact")  # a plate at (4,1)
    act(game, "a", "left", "left", "left", "down", "left", "interact")  # plate takes the bread
    plate = held(game, "a")
    assert plate is not None and plate.ingredient_names == {"Bread"}
    act(game, "a", "interact")  # put the bread plate down on the counter
    act(game, "a", "up", "up", "interact", "left", "interact")  # beef into the pan
    wait(game, WELL_COOKED_AFTER)
    act(game, "a", "interact", "down", "left", "interact")  # beef in hand onto the counter plate
    assert held(game, "a") is None
    assert game.placed[(0, 2)].name == "BeefBurger"
    assert game.placed[(0, 2)].contents[1].credits == {"cook_beef": "a", "use_beef": "a"}


def test_a_held_plate_takes_everything_from_a_plate_on_a_counter():
    game = tiny_game()
    act(game, "a", "right", "right", "right", "up", "interact")  # plate at (4,1)
    act(game, "a", "left", "up", "interact")  # bread onto it at (3,1)
    act(game, "a", "left", "left", "down", "left", "interact")  # set the bread plate down
    act(game, "a", "up", "right", "right", "right", "up", "interact")  # a second plate
    act(game, "a", "left", "left", "left", "down", "left", "interact")  # takes the bread
    plate = held(game, "a")
    assert plate is not None and plate.ingredient_names == {"Bread"}
    assert game.placed[(0, 2)].name == "Plate" and not game.placed[(0, 2)].contents


# -- serving and orders -----------------------------------------------------------------------


def test_serving_an_ordered_dish_earns_its_reward_and_credits_each_key_event():
    game = tiny_game(dishes=("BeefBurger",), first=1)
    make_beef_burger(game)
    happened = act(game, "a", "down", "down", "left", "left", "left", "interact")  # to (1,3)
    served = next(event for event in happened if event["kind"] == "served")
    assert served == {"kind": "served", "chef": "a", "dish": "BeefBurger", "id": 1,
                      "reward": 20, "credits": {"a": 5}}
    assert (game.score, game.served) == (20, 1)
    assert [order.id for order in game.orders] == [2]  # order 1 is closed; a new one came
    assert game.result()["contribution"] == {"a": 1.0, "b": 0.0}


def test_credits_follow_whoever_did_each_key_event():
    game = tiny_game(dishes=("BeefBurger",))
    make_beef_burger(game, "a")
    act(game, "a", "down", "down", "interact", "up")  # burger on the counter (3,4); a steps away
    assert game.placed[(3, 4)].name == "BeefBurger"
    happened = act(game, "b", "left", "down", "interact",  # b takes it from (3,3) ...
                   "left", "left", "left", "interact")  # ... and serves it from (1,3)
    served = next(event for event in happened if event["kind"] == "served")
    assert served["credits"] == {"a": 4, "b": 1}  # cook, use beef, plate, bread; the serve
    assert game.result()["contribution"] == {"a": 0.8, "b": 0.2}


def test_serving_a_dish_no_order_asks_for_costs_ten_and_consumes_it():
    game = tiny_game(dishes=("LettuceBurger",), first=1)
    make_beef_burger(game)
    burger = held(game, "a")
    assert burger is not None
    happened = act(game, "a", "down", "down", "left", "left", "left", "interact")
    assert {"kind": "wrong_served", "chef": "a", "dish": "BeefBurger",
            "reward": -10} in happened
    assert (game.score, game.wrong, held(game, "a")) == (-10, 1, None)
    assert len(game.orders) == 1  # the LettuceBurger order is still open
    assert {uid for uid, why in game.ledger.removed if why == "wrong_served"} == {
        item.uid for item in burger.walk()}


def test_serving_something_that_is_not_a_burger_is_a_wrong_serve_too():
    game = tiny_game()
    act(game, "a", "up", "interact", "down", "down", "left", "interact")  # raw beef served
    assert game.wrong == 1 and game.score == -10


def test_the_extinguisher_cannot_be_served_or_thrown_away():
    game = tiny_game(roles=("a",))  # nobody in the way
    act(game, "a", "down", "right", "right", "right", "right", "interact")
    extinguisher = held(game, "a")
    assert extinguisher is not None and extinguisher.name == "FireExtinguisher"
    act(game, "a", "down", "right", "interact")  # facing the trash
    assert held(game, "a") is extinguisher
    act(game, "a", "left", "left", "left", "left", "interact")  # facing the window
    assert held(game, "a") is extinguisher and game.wrong == 0


def test_the_trash_destroys_what_is_held():
    game = tiny_game(roles=("a",))  # nobody in the way
    act(game, "a", "up", "interact")
    beef = held(game, "a")
    assert beef is not None
    act(game, "a", "down", "down", "right", "right", "right", "right", "interact")
    assert held(game, "a") is None
    assert game.ledger.removed == [(beef.uid, "trash")]


def test_an_order_left_too_long_is_missed():
    game = tiny_game(dishes=("LettuceBurger",), first=1, deadline=10)
    assert game.orders[0].remaining == 10
    happened = wait(game, 9)
    assert game.orders and game.orders[0].remaining == 1 and game.missed == 0
    happened = wait(game, 1)
    assert {"kind": "missed", "id": 1, "dish": "LettuceBurger", "reward": -10} in happened
    assert game.missed == 1 and game.score == -10
    # with no order open, a new one arrives at once
    assert next(event for event in happened if event["kind"] == "order")["id"] == 2


def test_the_first_orders_are_reported_with_the_first_tick_and_new_ones_keep_coming():
    game = tiny_game(dishes=("LettuceBurger", "BeefBurger"), first=2, interval=5)
    first = game.advance()[1]["happened"]
    assert kinds(first) == ["order", "order"]
    later = wait(game, 30)
    assert kinds(later).count("order") == 2  # up to max_open = 4
    assert len(game.orders) == 4


def test_orders_are_drawn_from_the_seed():
    dishes = ("LettuceBurger", "BeefBurger", "BeefLettuceBurger")
    one = [order.dish for order in tiny_game(dishes=dishes, first=4, seed=7).orders]
    two = [order.dish for order in tiny_game(dishes=dishes, first=4, seed=7).orders]
    assert one == two
    assert any([order.dish for order in tiny_game(dishes=dishes, first=4, seed=s).orders] != one
               for s in range(20))


def test_the_game_ends_after_its_ticks_with_a_result():
    game = tiny_game(ticks=3)
    wait(game, 3)
    assert game.over
    content = game.content(0.25)
    assert content["done"] is True and content["result"]["score"] == game.score
    with pytest.raises(RuntimeError):
        game.advance()


# -- layouts ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["counter_circuit", "asymmetric_advantages"])
def test_the_shipped_layouts_load_and_every_station_can_be_reached(name):
    layout = load_layout(name)
    start = layout.chef_starts[0]
    for kind in ("beef station", "pan", "plate station", "bread station", "trash can",
                 "center counter"):
        assert any(layout.distance_to_use(chef, tile) is not None
                   for chef in layout.chef_starts for tile in layout.tiles(kind)), kind
    assert layout.distances[start][start] == 0


def test_in_the_asymmetric_kitchen_each_side_lacks_what_the_other_has():
    layout = load_layout("asymmetric_advantages")
    left, right = layout.chef_starts

    def reaches(chef, kind):
        return any(layout.distance_to_use(chef, tile) is not None for tile in layout.tiles(kind))

    assert reaches(left, "pan") and not reaches(right, "pan")
    assert reaches(right, "serving window") and not reaches(left, "serving window")
    assert all(reaches(chef, "center counter") for chef in (left, right))


@pytest.mark.parametrize(("text", "complaint"), [
    ("grid = '''\n#X\n#\n'''\nchefs = [[1, 0]]", "same length"),
    ("grid = '''\n#?#\n'''", "legend does not define"),
    ("grid = '''\n#.#\n'''\nchefs = [[0, 0]]", "floor tile"),
    ("grid = '''\n#.O\n'''\nchefs = [[1, 0]]", "extinguisher"),
    ("grid = '''\n#.#\n'''\nchefs = [[1, 0]]\n[orders]\ndishes = ['Soup']", "orders.dishes"),
    ("grid = '''\n#.#\n'''\nchefs = [[1, 0]]\n[orders]\ninterval = 0", "orders.interval"),
    ("grid = '''\n#.#\n'''\nchefs = [[1, 0]]\n[legend]\n'#' = 'lava'", "legend entry"),
    ("grid = 3", "needs a grid"),
    ("this is = not toml =", "not valid TOML"),
])
def test_a_broken_layout_file_is_refused_with_a_reason(text, complaint):
    with pytest.raises(LayoutError, match=complaint):
        parse_layout("broken", text)


def test_a_legend_override_gives_a_character_a_new_meaning():
    layout = parse_layout("custom", "grid = '''\n#.H\n'''\nchefs = [[1, 0]]\n"
                                    "[legend]\n'H' = 'counter'")
    assert layout.kind((2, 0)) == "counter" and layout.view_legend() == {
        "#": "wall", ".": "floor", "H": "counter"}
