"""KitchenEnv as sessions use it: the CoEnv contract (check_env, registry, env_args), actions
that only queue until the clock ticks, bad input refused with a clear error and no change, the
view members read through KitchenView, each macro doing its job, and both shipped kitchens
played by scripted macros until an order is served."""

from __future__ import annotations

import functools
import json

import pytest

from cogym_lab.core.check_env import check_env
from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import EventType, TeamMember
from cogym_lab.envs import available_envs, make_env
from cogym_lab.envs.kitchen import KitchenEnv, KitchenView
from cogym_lab.envs.kitchen import env as kitchen_env
from cogym_lab.envs.kitchen.game import FIRE_AFTER, MAX_QUEUED, OVERCOOKED_AFTER
from cogym_lab.envs.kitchen.layout import parse_layout
from cogym_lab.envs.kitchen.view import COUNT_KEYS
from cogym_lab.nodes.restore import replay_events

LAYOUTS = ("counter_circuit", "asymmetric_advantages")


def content(env: KitchenEnv, role: str = "agent") -> dict:
    return env.view(role)["kitchen"].content


def view(env: KitchenEnv) -> KitchenView:
    return KitchenView.from_content(content(env))


def new_env(**args) -> KitchenEnv:
    env = KitchenEnv(**args)
    env.reset(seed=5)
    return env


def tick(env: KitchenEnv, times: int = 1) -> list[dict]:
    happened: list[dict] = []
    for _ in range(times):
        happened += env.advance().info["happened"]
    return happened


# -- the CoEnv contract -----------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_check_env_passes_for_each_layout(layout):
    assert check_env(KitchenEnv, layout=layout) == []


def test_check_env_passes_when_built_from_the_registry():
    assert "kitchen" in available_envs()
    assert check_env(functools.partial(make_env, "kitchen"), instance=1) == []


def test_instances_are_the_layouts_and_env_args_rebuild_the_env():
    # in the DPT-Agent paper's order: Map 1, then Map 2
    assert [args["layout"] for args in KitchenEnv.instances()] == ["counter_circuit",
                                                                   "asymmetric_advantages"]
    env = make_env("kitchen", layout="asymmetric_advantages", ticks=40, tick_seconds=0.5)
    assert env.tick_seconds == 0.5
    args = json.loads(json.dumps(env.env_args()))
    assert args == {"layout": "asymmetric_advantages", "ticks": 40, "tick_seconds": 0.5}
    assert make_env("kitchen", **args).env_args() == args


@pytest.mark.parametrize(("args", "complaint"), [
    ({"layout": "moon_base"}, "Unknown kitchen layout"),
    ({"ticks": 0}, "ticks"),
    ({"tick_seconds": -1}, "tick_seconds"),
    ({"tick_seconds": float("nan")}, "tick_seconds"),
    ({"tick_seconds": 0.001}, "at least 0.01"),  # a clock that would starve the server
])
def test_bad_env_arguments_are_refused(args, complaint):
    with pytest.raises(ValueError, match=complaint):
        KitchenEnv(**args)


def test_the_view_is_the_contract_content():
    env = new_env(ticks=50)
    shown = content(env)
    assert env.view("agent")["kitchen"].render_type == "kitchen"
    assert set(shown) == {"layout", "grid", "legend", "tick", "ticks", "tick_seconds", "score",
                          "done", "chefs", "items", "orders", "fires", "served", "missed",
                          "wrong", "result", "moves_only"}
    assert set(shown["legend"]) == {char for row in shown["grid"] for char in row}
    assert [chef["role"] for chef in shown["chefs"]] == ["agent", "user"]
    assert shown["chefs"][0] == {"role": "agent", "pos": [1, 1], "facing": "down",
                                 "holding": None, "macro": None, "queued": 0}
    assert shown["items"] == [{"pos": [11, 1], "item": {"id": 1, "name": "FireExtinguisher",
                                                        "status": "", "progress": 0.0}}]
    assert [set(order) for order in shown["orders"]] == [
        {"id", "dish", "remaining", "total", "reward"}] * env.layout.orders.first
    assert (shown["tick"], shown["ticks"], shown["tick_seconds"], shown["result"]) == (
        0, 50, 0.25, None)
    assert json.loads(json.dumps(shown)) == shown


def test_the_first_two_team_members_get_the_chefs_in_team_order():
    env = KitchenEnv()
    env.bind_team([TeamMember(role="pat", kind="person"), TeamMember(role="bot"),
                   TeamMember(role="observer")])
    env.reset(seed=1)
    assert [chef["role"] for chef in content(env, "pat")["chefs"]] == ["pat", "bot"]
    refused = env.step("observer", 'MOVE(direction="up")')
    assert refused.error and "'observer' has no chef in this game" in refused.error


# -- the clock --------------------------------------------------------------------------------


def test_actions_only_queue_and_the_world_moves_on_the_tick():
    env = new_env()
    result = env.step("agent", 'MOVE(direction="right")')
    assert result.error is None and result.private
    assert result.info["action"] == 'MOVE(direction="right")'
    shown = content(env)
    assert shown["chefs"][0]["pos"] == [1, 1] and shown["chefs"][0]["queued"] == 1
    ticked = env.advance()
    assert ticked.info["atomic"] == {"agent": "right"}
    assert ticked.info["score"] == 0 and not ticked.done
    assert content(env)["chefs"][0]["pos"] == [2, 1]
    assert content(env)["tick"] == 1


def test_the_last_tick_is_done_and_the_result_is_set():
    env = new_env(ticks=3)
    assert [env.advance().done for _ in range(3)] == [False, False, True]
    shown = content(env)
    assert shown["done"] is True and shown["result"] == {
        "score": 0, "served": 0, "missed": 0, "wrong": 0,
        "contribution": {"agent": 0.0, "user": 0.0}}
    assert env.delivered() and env.outcome()["ticks_played"] == 3
    after = env.advance()  # a late tick changes nothing
    assert after.done and after.info["happened"] == [] and content(env) == shown


def test_reward_is_the_score_change_of_the_tick():
    env = new_env(ticks=400)
    total = sum(env.advance().reward for _ in range(400))
    assert total == content(env)["score"] < 0  # nobody cooked: every order was missed
    scores = env.evaluate()
    assert scores["score"] == total and scores["missed"] > 0 and scores["performance"] == 0.0
    assert {report.name for report in env.explain_scores(scores)} == set(scores)


# -- bad input ----------------------------------------------------------------------------------

#: A kitchen with a wall beside the floor, to walk into.
WALLED = """
grid = '''
#BRP#
O...#
S.KTX
'''
chefs = [[1, 1], [3, 1]]
extinguisher = [4, 2]
"""


@pytest.fixture
def walled(monkeypatch) -> KitchenEnv:
    layout = parse_layout("walled", WALLED)
    monkeypatch.setattr(kitchen_env, "load_layout", lambda name: layout)
    return new_env(layout="walled")


@pytest.mark.parametrize(("action", "complaint"), [
    ('MOVE(direction="north")', "Unknown direction 'north'"),
    ('MOVE(direction="")', "Unknown direction"),
    ('MOVE(direction="up\\u0000")', "Unknown direction"),
    ({"name": "MOVE", "args": {"direction": "x" * 100_000}}, "Unknown direction"),
    ('PREPARE(food="Soup")', "Unknown food to prepare 'Soup'"),
    ('ASSEMBLE(food="Pizza")', "Unknown dish to assemble"),
    ('SERVE(food="BeefLettuce")', "Unknown burger to serve"),
    ('PASS_ON(thing="Spoon")', "Unknown thing to pass on"),
    ('PASS_ON(thing="Beef", thing_status="Raw")', "Unknown status of Beef"),
    ('PASS_ON(thing="Bread", thing_status="Toasted")', "has no status"),
    ("MOVE()", "missing param"),
    ('INTERACT(now="yes")', "no param"),
])
def test_bad_actions_are_refused_clearly_and_change_nothing(action, complaint):
    env = new_env()
    before = content(env)
    result = env.step("agent", action)
    assert result.error and complaint in result.error
    assert content(env) == before


def test_walking_into_a_wall_is_refused_and_changes_nothing(walled):
    before = content(walled)
    result = walled.step("user", 'MOVE(direction="right")')  # (3,1) -> the wall at (4,1)
    assert result.error == "Moving right from 3,1 walks into a wall."
    assert content(walled) == before
    assert walled.step("agent", 'MOVE(direction="left")').error is None  # a pan: just turns


def test_a_queued_move_is_checked_from_where_the_queue_leaves_the_chef(walled):
    assert walled.step("agent", 'MOVE(direction="right")').error is None  # to (2,1)
    assert walled.step("agent", 'MOVE(direction="right")').error is None  # (3,1): user there
    result = walled.step("agent", 'MOVE(direction="right")')  # from (3,1): the wall
    assert result.error and "from 3,1" in result.error


def test_the_move_queue_is_bounded():
    env = new_env()
    for _ in range(MAX_QUEUED):
        assert env.step("agent", 'MOVE(direction="down")').error is None
    before = content(env)
    result = env.step("agent", "INTERACT()")
    assert result.error and "already waiting" in result.error
    assert content(env) == before


def test_nothing_is_accepted_after_the_game(monkeypatch):
    env = new_env(ticks=2)
    env.advance()
    env.advance()
    before = content(env)
    for action in ('MOVE(direction="up")', "INTERACT()", 'PREPARE(food="Beef")',
                   "PUT_OUT_FIRE()"):
        result = env.step("agent", action)
        assert result.error == "The game is over: no more kitchen actions."
    assert content(env) == before


def test_an_unknown_role_has_no_chef():
    env = new_env()
    before = content(env)
    result = env.step("nobody\u2028here", 'PREPARE(food="Beef")')
    assert result.error and "has no chef in this game" in result.error
    assert content(env) == before


# -- macros -------------------------------------------------------------------------------------


def run_until(env: KitchenEnv, kind: str, role: str = "agent", limit: int = 300) -> list[dict]:
    """Tick until ``role``'s macro reports ``kind`` (macro_done / macro_failed)."""
    happened: list[dict] = []
    for _ in range(limit):
        happened += env.advance().info["happened"]
        if any(event["kind"].startswith("macro_") and event["chef"] == role
               for event in happened):
            break
    ends = [event for event in happened
            if event["kind"].startswith("macro_") and event["chef"] == role]
    assert ends and ends[-1]["kind"] == kind, ends
    return happened


def test_a_macro_shows_in_the_view_and_move_cancels_it():
    env = new_env()
    assert env.step("agent", 'PREPARE(food="Beef", plate=true)').error is None
    assert content(env)["chefs"][0]["macro"] == 'PREPARE(food="Beef", plate=true)'
    env.advance()
    env.step("agent", "INTERACT()")
    assert content(env)["chefs"][0]["macro"] is None


def test_a_new_macro_replaces_the_running_one():
    env = new_env()
    env.step("agent", 'PREPARE(food="Beef")')
    env.step("agent", 'PREPARE(food="lettuce")')  # names are read without regard to case
    assert content(env)["chefs"][0]["macro"] == 'PREPARE(food="Lettuce")'


def test_prepare_beef_on_a_plate_ends_with_the_plated_beef_on_a_counter():
    env = new_env()
    env.step("agent", 'PREPARE(food="Beef", plate=true)')
    happened = run_until(env, "macro_done")
    assert {"kind": "macro_done", "chef": "agent", "macro": "PREPARE"} in happened
    shown = view(env)
    me = shown.chef("agent")
    assert me is not None and me.holding is None
    plated = [item for item in shown.items.values() if item.ingredients == {"Beef"}]
    assert len(plated) == 1 and plated[0].contents[0].status == "Well-cooked"
    assert shown.where("Beef", "Well-cooked") == []  # not loose ...
    assert len(shown.where("Beef", "Well-cooked", on_plates=True)) == 1  # ... but plated
    assert shown.counts()[("Beef", "Well-cooked")] == 1


def test_prepare_lettuce_chops_it_on_a_board():
    env = new_env()
    env.step("user", 'PREPARE(food="Lettuce")')
    run_until(env, "macro_done", role="user")
    shown = view(env)
    [board] = [pos for pos in shown.tiles("chopping board") if pos in shown.items]
    assert shown.items[board].key == ("Lettuce", "Chopped")


def test_assemble_fails_at_once_when_an_ingredient_is_not_ready():
    env = new_env()
    env.step("agent", 'ASSEMBLE(food="BeefBurger")')
    happened = run_until(env, "macro_failed")
    failure = happened[-1]
    assert failure["macro"] == "ASSEMBLE" and "Well-cooked Beef" in failure["reason"]
    me = view(env).chef("agent")
    assert me is not None and me.pos == (1, 1)  # it did not set off


def test_serve_with_nothing_ready_fails_with_a_reason():
    env = new_env()
    env.step("agent", 'SERVE(food="LettuceBurger")')
    happened = run_until(env, "macro_failed")
    assert happened[-1]["reason"] == "no LettuceBurger ready to serve within reach"


def test_prepare_assemble_and_serve_a_lettuce_burger():
    env = new_env()
    served = []
    for macro in ('PREPARE(food="Lettuce")', 'ASSEMBLE(food="LettuceBurger")',
                  'SERVE(food="LettuceBurger")'):
        assert env.step("agent", macro).error is None
        served += [event for event in run_until(env, "macro_done")
                   if event["kind"] in ("served", "wrong_served")]
    assert len(served) == 1 and served[0]["dish"] == "LettuceBurger"
    assert view(env).counts()[("Plate", "Empty")] == 0


def test_a_fire_is_put_out_by_the_macro_and_overcooked_beef_is_cleaned_away():
    env = new_env(ticks=400)
    env.step("agent", 'PREPARE(food="Beef")')
    run_until(env, "macro_done")
    env.step("agent", 'MOVE(direction="left")')  # out of the way: the pan has one side free
    env.step("agent", 'MOVE(direction="left")')
    happened = tick(env, FIRE_AFTER)
    assert any(event["kind"] == "fire" for event in happened)
    assert view(env).counts()[("Fire", "")] == 1
    env.step("user", "PUT_OUT_FIRE()")
    happened = run_until(env, "macro_done", role="user")
    assert any(event["kind"] == "fire_out" and event["chef"] == "user" for event in happened)
    assert view(env).fires == ()
    # a second beef left to overcook is taken to the trash before it burns
    env.step("agent", 'PREPARE(food="Beef")')
    run_until(env, "macro_done")
    tick(env, (OVERCOOKED_AFTER + FIRE_AFTER) // 2)  # overcooked, not yet on fire
    assert view(env).counts()[("Beef", "Overcooked")] == 1
    env.step("agent", "CLEAN_A_COUNTER()")
    run_until(env, "macro_done")
    assert view(env).counts()[("Beef", "Overcooked")] == 0 and view(env).fires == ()


def test_put_out_fire_without_a_fire_fails():
    env = new_env()
    env.step("agent", "PUT_OUT_FIRE()")
    assert run_until(env, "macro_failed")[-1]["reason"] == "there is no fire"


def test_pass_on_puts_a_plate_on_a_center_counter():
    env = new_env(layout="asymmetric_advantages")
    env.step("agent", 'PASS_ON(thing="Plate")')
    run_until(env, "macro_done")
    shown = view(env)
    assert [pos for pos in shown.where("Plate", "Empty")
            if shown.kind(pos) == "center counter"]


# -- whole games --------------------------------------------------------------------------------


def cook(shown: KitchenView, role: str, makes: tuple[str, ...] = ("Beef", "Lettuce"),
         serves: bool = True) -> str | None:
    """A plain scripted cook: the next macro for the oldest order, or ``None`` to wait."""
    counts = shown.counts()
    if counts[("Fire", "")]:
        return "PUT_OUT_FIRE()"
    if not shown.orders:
        return None
    dish = shown.orders[0].dish
    if serves and counts[(dish, "")]:
        return f'SERVE(food="{dish}")'
    if "Beef" in dish and "Beef" in makes and not counts[("Beef", "Well-cooked")]:
        return None if counts[("Beef", "In-progress")] else 'PREPARE(food="Beef", plate=true)'
    if "Lettuce" in dish and "Lettuce" in makes and not counts[("Lettuce", "Chopped")]:
        return 'PREPARE(food="Lettuce")'
    return f'ASSEMBLE(food="{dish}")' if serves else None


def lettuce_side(shown: KitchenView, role: str) -> str | None:
    """A cook who only chops lettuce, and then steps away from the board for the partner."""
    macro = cook(shown, role, makes=("Lettuce",), serves=False)
    me = shown.chef(role)
    if macro is None and me is not None and shown.kind(me.faced) == "chopping board":
        return next(f'MOVE(direction="{direction}")' for direction, (dx, dy)
                    in (("left", (-1, 0)), ("right", (1, 0)))
                    if shown.walkable((me.pos[0] + dx, me.pos[1] + dy)))
    return macro


def beef_side(shown: KitchenView, role: str) -> str | None:
    """The left of the asymmetric kitchen: cook beef onto plates and pass plates over."""
    counts = shown.counts()
    if counts[("Fire", "")]:
        return "PUT_OUT_FIRE()"
    wanted = any("Beef" in order.dish for order in shown.orders)
    if wanted and not counts[("Beef", "Well-cooked")] + counts[("Beef", "In-progress")]:
        return 'PREPARE(food="Beef", plate=true)'
    center = shown.center_counters()
    beef_here = [pos for pos in shown.where("Plate") if pos not in center
                 and shown.items[pos].ingredients == {"Beef"}]
    if beef_here:
        return 'PASS_ON(thing="Beef", thing_status="Well-cooked")'
    if not [pos for pos in shown.where("Plate", "Empty") if pos in center]:
        return 'PASS_ON(thing="Plate")'
    return None


def play(layout: str, cooks: dict, ticks: int = 500, seed: int = 3) -> KitchenEnv:
    env = KitchenEnv(layout=layout, ticks=ticks)
    env.reset(seed=seed)
    while not content(env)["done"]:
        shown = view(env)
        for role, choose in cooks.items():
            chef = shown.chef(role)
            if chef is not None and chef.macro is None and not chef.queued:
                macro = choose(shown, role)
                if macro is not None:
                    assert env.step(role, macro).error is None
        env.advance()
    return env


def test_one_scripted_cook_serves_orders_in_the_counter_circuit():
    env = play("counter_circuit", {"agent": cook})
    assert env.evaluate()["served"] >= 2
    assert content(env)["result"]["contribution"]["agent"] == 1.0


def test_two_scripted_cooks_serve_orders_in_the_counter_circuit():
    env = play("counter_circuit", {"agent": cook, "user": lettuce_side})
    result = content(env)["result"]
    assert result["served"] >= 2 and result["contribution"]["user"] > 0


def test_two_scripted_cooks_serve_orders_in_the_asymmetric_kitchen():
    env = play("asymmetric_advantages", {
        "agent": beef_side, "user": functools.partial(cook, makes=("Lettuce",))})
    result = content(env)["result"]
    assert result["served"] >= 1
    assert result["contribution"]["agent"] > 0 and result["contribution"]["user"] > 0


# -- the view reader ------------------------------------------------------------------------------


def test_kitchen_view_reads_what_is_where():
    env = new_env()
    shown = view(env)
    assert shown.layout == "counter_circuit" and shown.remaining_ticks == 500
    assert shown.tiles("pan") == [(8, 0), (10, 0)]
    assert set(shown.stations()) >= {"beef station", "pan", "serving window", "trash can"}
    assert shown.where("FireExtinguisher") == [(11, 1)]
    assert (11, 1) not in shown.free_counters() and len(shown.free_counters()) == len(
        shown.counters()) - 1
    assert shown.counter_counts() == {"Empty": len(shown.free_counters())}
    assert list(shown.counts()) == list(COUNT_KEYS)
    me = shown.chef("agent")
    assert me is not None and me.faced == (1, 2) and shown.partners("agent")[0].role == "user"


@pytest.mark.parametrize("bad", [None, [], "kitchen", {"grid": ["#"]},
                                 {"grid": ["#?"], "legend": {"#": "wall"}, "tick": 0,
                                  "ticks": 1},
                                 {"grid": ["#"], "legend": {"#": "wall"}, "tick": "soon",
                                  "ticks": 1},
                                 {"grid": ["#"], "legend": {"#": "wall"}, "tick": 0, "ticks": 1,
                                  "items": [{"pos": [0], "item": {"name": "Beef"}}]}])
def test_kitchen_view_refuses_content_that_is_not_a_kitchen(bad):
    with pytest.raises(ValueError):
        KitchenView.from_content(bad)


# -- inside a session ---------------------------------------------------------------------------


def test_the_coordinator_clock_drives_the_kitchen_and_its_log_replays():
    team = [TeamMember(role="agent"), TeamMember(role="user", kind="person")]
    live = Coordinator(KitchenEnv(ticks=60), team, session_id="kitchen", step_limits={})
    events = list(live.start(0.0).events)
    events += live.handle("agent", 'PREPARE(food="Lettuce")', 0.1).events
    [refused] = live.handle("user", 'MOVE(direction="north")', 0.1).events
    assert refused.type is EventType.ERROR
    events.append(refused)
    for n in range(60):
        if n == 30:
            events += live.handle("user", 'MOVE(direction="up")', 30.0).events
        events += live.clock(n + 0.5).events
    assert live.done and live.end_reason == "time_up"
    clocks = [event for event in events if event.type is EventType.CLOCK]
    assert [event.info["tick"] for event in clocks] == list(range(1, 61))
    assert clocks[0].info["atomic"] == {"agent": "right"}
    assert any(happening["kind"] == "macro_done"
               for clock in clocks for happening in clock.info["happened"])
    replica = Coordinator(KitchenEnv(ticks=60), team, session_id="kitchen", step_limits={})
    for _ in replay_events(replica, events):
        pass
    assert replica.env.view("agent") == live.env.view("agent")
