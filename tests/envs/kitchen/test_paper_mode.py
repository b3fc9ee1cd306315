"""The kitchen in the DPT-Agent paper's mode: instances numbered as the paper's maps, a ready
team that can make every order on each map (Map 2's partner chops the lettuce the agent's side
has none of), and people who play with moves and interact only unless the kitchen is started
with ``person_macros=true``."""

from __future__ import annotations

import pytest

from cogym_lab.core.messages import EventType, TeamMember
from cogym_lab.envs import make_env
from cogym_lab.envs.kitchen import KitchenEnv
from cogym_lab.envs.kitchen.layout import load_layout
from cogym_lab.envs.kitchen.policies.partners import LettuceSpecialist, MapPartner
from cogym_lab.nodes import Session, SessionConfig
from cogym_lab.nodes.results import read_events
from cogym_lab.teams import load_team
from cogym_lab.teams.build import build_team

MAP_2 = 1  # the instance number of the paper's Map 2


def test_the_instances_are_the_papers_maps_in_its_order() -> None:
    assert KitchenEnv.instances() == [{"layout": "counter_circuit"},
                                      {"layout": "asymmetric_advantages"}]
    assert KitchenEnv.instance_titles() == ["Map 1 - New Counter Circuit",
                                            "Map 2 - New Asymmetric Advantages"]
    env = make_env("kitchen", MAP_2)
    assert "Map 2 - New Asymmetric Advantages" in env.task_description


def test_each_map_names_its_partner_in_its_layout_file() -> None:
    assert load_layout("counter_circuit").partner == "assembler"
    assert load_layout("asymmetric_advantages").partner == "lettuce"
    partner = MapPartner("user")
    env = make_env("kitchen", MAP_2)
    env.bind_team([TeamMember(role="agent"), TeamMember(role="user")])
    env.reset(seed=0)
    partner.decide(env.view("user")["kitchen"].content)
    assert isinstance(partner.chosen, LettuceSpecialist)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_map_2_ready_team_serves_orders_on_every_seed(tmp_path, seed: int) -> None:
    env = make_env("kitchen", MAP_2, ticks=150, tick_seconds=0.01)
    team = load_team("kitchen-fsm")
    members, kinds = build_team(team, env)
    result = Session(env, members, kinds=kinds, results_dir=tmp_path,
                     config=SessionConfig(**{**team.session, "seed": seed})).run_sync()
    assert result.end_reason == "time_up"
    clocks = [e for e in read_events(tmp_path) if e.type is EventType.CLOCK]
    served = sum(1 for event in clocks for happened in event.info.get("happened", [])
                 if happened.get("kind") == "served")
    assert served >= 1, f"seed {seed}: the ready team served nothing on Map 2"


# -- people play with moves and interact ---------------------------------------------------------

def _kitchen_with_a_person(**env_args: object) -> KitchenEnv:
    env = KitchenEnv(**env_args)  # type: ignore[arg-type]
    env.bind_team([TeamMember(role="agent"), TeamMember(role="person", kind="person")])
    env.reset(seed=0)
    return env


@pytest.mark.parametrize("macro", ['PREPARE(food="Beef")', 'ASSEMBLE(food="BeefBurger")',
                                   'SERVE(food="BeefBurger")', 'PASS_ON(thing="Plate")',
                                   "PUT_OUT_FIRE()", "CLEAN_A_COUNTER()"])
def test_a_persons_macro_is_refused_in_paper_mode(macro: str) -> None:
    env = _kitchen_with_a_person()
    error = env.step("person", macro).error
    assert error is not None and "MOVE and INTERACT" in error and "person_macros" in error
    assert env.step("person", 'MOVE(direction="right")').error is None
    assert env.step("person", "INTERACT()").error is None
    assert env.step("agent", macro).error is None  # agents keep their macros
    assert env.view("person")["kitchen"].content["moves_only"] == ["person"]


def test_with_person_macros_a_person_may_run_a_macro() -> None:
    env = _kitchen_with_a_person(person_macros=True)
    assert env.step("person", 'PREPARE(food="Beef")').error is None
    assert env.view("person")["kitchen"].content["moves_only"] == []
    assert env.env_args()["person_macros"] is True  # a replay starts the same kitchen
    assert "person_macros" not in _kitchen_with_a_person().env_args()


def test_person_macros_must_be_true_or_false() -> None:
    with pytest.raises(ValueError, match="person_macros"):
        KitchenEnv(person_macros="yes")  # type: ignore[arg-type]


def test_a_simulated_persons_macro_is_refused_as_a_persons_is() -> None:
    env = KitchenEnv()
    env.bind_team([TeamMember(role="agent"), TeamMember(role="sim", kind="user")])
    env.reset(seed=0)
    assert "MOVE and INTERACT" in (env.step("sim", 'PREPARE(food="Beef")').error or "")
    assert env.view("sim")["kitchen"].content["moves_only"] == ["sim"]
    assert env.step("sim", "INTERACT()").error is None
