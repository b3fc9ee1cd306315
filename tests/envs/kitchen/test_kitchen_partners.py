"""The kitchen's rule-based members: the three partners and the FSM, headless on the env and as
members of a session.

Games are played straight on a KitchenEnv (``headless.play``): whole 500-tick games on both
layouts, each partner with the FSM. Checked: the teams serve orders, the FSM with the assembler
scores above zero on counter_circuit, each partner keeps to its habit, assigned tasks change
what the FSM does, stuck chefs step aside, and (a property over seeds and pairings) every
action a rule-based member sends is one the env accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cogym_lab.core import Notification
from cogym_lab.core.messages import Event, EventType, SessionContext, TeamMember
from cogym_lab.envs.kitchen import KitchenEnv
from cogym_lab.envs.kitchen.policies.fsm import ActionTask, KitchenFSM, OrderTask, always
from cogym_lab.envs.kitchen.policies.headless import play
from cogym_lab.envs.kitchen.policies.members import PolicyMember
from cogym_lab.envs.kitchen.policies.partners import Assembler, BeefSpecialist, LettuceSpecialist
from cogym_lab.envs.kitchen.policies.situation import Situation, game_state
from cogym_lab.envs.kitchen.policies.watch import StuckWatch
from cogym_lab.members import member_type
from cogym_lab.teams import load_team

LAYOUTS = ("counter_circuit", "asymmetric_advantages")
PARTNERS = {"kitchen-beef": BeefSpecialist, "kitchen-lettuce": LettuceSpecialist,
            "kitchen-assembler": Assembler, "kitchen-fsm": KitchenFSM}


class Recorder:
    """Wraps a policy, keeping every action it chose and whether the env took it."""

    def __init__(self, policy: Any, env: KitchenEnv) -> None:
        self.policy = policy
        self.env = env
        self.actions: list[str] = []

    def decide(self, content: Mapping[str, Any]) -> str | None:
        action = self.policy.decide(content)
        if action is not None:
            self.actions.append(action)
        return action

    def note_tick(self, info: Mapping[str, Any]) -> None:
        self.policy.note_tick(info)


class Checked(Recorder):
    """A recorder that also steps the action itself, to see the env's answer."""

    def __init__(self, policy: Any, env: KitchenEnv, role: str) -> None:
        super().__init__(policy, env)
        self.role = role
        self.refused: list[tuple[str, str]] = []

    def decide(self, content: Mapping[str, Any]) -> str | None:
        action = super().decide(content)
        if action is not None:
            error = self.env.step(self.role, action).error
            if error:
                self.refused.append((action, error))
        return None  # already stepped


def team_game(partner: Any, layout: str, seed: int, ticks: int = 500
              ) -> tuple[dict[str, Any], Recorder, Recorder]:
    env = KitchenEnv(layout=layout, ticks=ticks)
    agent, user = Recorder(KitchenFSM("agent"), env), Recorder(partner("user"), env)
    return play(env, {"agent": agent, "user": user}, seed), agent, user


def fresh(seed: int = 0, layout: str = "counter_circuit") -> dict[str, Any]:
    env = KitchenEnv(layout=layout)
    env.bind_team([TeamMember(role="agent"), TeamMember(role="user")])
    env.reset(seed=seed)
    return env.view("agent")["kitchen"].content


# -- whole games ---------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("partner", sorted(PARTNERS))
def test_every_partner_plays_whole_games_with_the_fsm(layout: str, partner: str) -> None:
    final, agent, _ = team_game(PARTNERS[partner], layout, seed=7)
    assert final["done"] and final["tick"] == 500
    assert agent.actions and final["result"] is not None
    if layout == "counter_circuit" or partner in ("kitchen-lettuce", "kitchen-fsm"):
        assert final["served"] >= 3  # pairings that can make every kind of burger
    result = final["result"]
    assert result["score"] == final["score"]
    assert sum(result["contribution"].values()) == pytest.approx(1.0)


def test_the_fsm_and_the_assembler_score_on_counter_circuit() -> None:
    scores = [team_game(Assembler, "counter_circuit", seed)[0]["score"] for seed in range(4)]
    assert all(score > 0 for score in scores), scores


def test_the_fsm_alone_serves_orders_on_counter_circuit() -> None:
    env = KitchenEnv()
    final = play(env, {"agent": KitchenFSM("agent")}, seed=1)
    assert final["served"] >= 3 and final["score"] > 0


def test_each_partner_keeps_to_its_habit() -> None:
    _, _, beef = team_game(BeefSpecialist, "counter_circuit", seed=2)
    _, _, lettuce = team_game(LettuceSpecialist, "counter_circuit", seed=2)
    _, _, assembler = team_game(Assembler, "counter_circuit", seed=2)
    names = {who: {a.split("(", 1)[0] for a in rec.actions}
             for who, rec in (("beef", beef), ("lettuce", lettuce), ("assembler", assembler))}
    assert "PREPARE" in names["beef"] and not any('"Lettuce"' in a and a.startswith("PREPARE")
                                                  for a in beef.actions)
    assert "PREPARE" in names["lettuce"] and not any('"Beef"' in a and a.startswith("PREPARE")
                                                     for a in lettuce.actions)
    assert "PREPARE" not in names["assembler"]
    assert {"ASSEMBLE", "SERVE"} <= names["assembler"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), layout=st.sampled_from(LAYOUTS),
       partner=st.sampled_from(sorted(PARTNERS)))
def test_every_action_a_rule_based_member_sends_is_accepted(seed: int, layout: str,
                                                            partner: str) -> None:
    env = KitchenEnv(layout=layout, ticks=200)
    agent = Checked(KitchenFSM("agent"), env, "agent")
    user = Checked(PARTNERS[partner]("user"), env, "user")
    final = play(env, {"agent": agent, "user": user}, seed)
    assert final["done"]
    assert agent.refused == [] and user.refused == []


# -- the FSM's states and its assigned tasks ------------------------------------------------------

def test_the_fsm_prepares_for_the_most_urgent_order_first() -> None:
    content = fresh(seed=0)
    fsm = KitchenFSM("agent")
    action = fsm.decide(content)
    assert fsm.state == "prepare" and action is not None and action.startswith("PREPARE(")
    assert KitchenFSM("agent").decide(content) == action  # it decides from the view alone


def test_assigned_tasks_change_what_the_fsm_does() -> None:
    content = fresh(seed=0)
    default = KitchenFSM("agent").decide(content)
    fsm = KitchenFSM("agent", [ActionTask(always, 'PREPARE(food="Bread")')])
    assert fsm.decide(content) == 'PREPARE(food="Bread")' != default
    assert fsm.state == "assigned" and not fsm.assigned  # each task runs once


def test_a_task_whose_precondition_fails_or_breaks_is_skipped() -> None:
    content = fresh(seed=0)
    default = KitchenFSM("agent").decide(content)

    def broken(state: Mapping[str, Any]) -> bool:
        raise KeyError("no such thing")

    fsm = KitchenFSM("agent", [
        ActionTask(lambda state: state["objects"][("Fire", "")] > 0, "PUT_OUT_FIRE()"),
        ActionTask(broken, 'PREPARE(food="Bread")')])
    assert fsm.decide(content) == default
    assert not fsm.assigned


def test_an_order_task_steers_the_fsm_until_its_burger_is_served() -> None:
    content = fresh(seed=0)
    dishes = [order["dish"] for order in content["orders"]]
    wanted = "LettuceBurger" if "LettuceBurger" in dishes else dishes[-1]
    content = {**content, "orders": [*content["orders"], {
        "id": 99, "dish": "LettuceBurger", "remaining": 190, "total": 200, "reward": 15}]}
    fsm = KitchenFSM("agent", [OrderTask("LettuceBurger")])
    assert fsm.decide(content) == 'PREPARE(food="Lettuce")'
    assert list(fsm.assigned) == [OrderTask("LettuceBurger")]  # it stays until served
    gone = KitchenFSM("agent", [OrderTask("BeefLettuceBurger"), OrderTask(wanted)])
    content["orders"] = [o for o in content["orders"] if o["dish"] != "BeefLettuceBurger"]
    gone.decide(content)
    assert OrderTask("BeefLettuceBurger") not in gone.assigned  # no such order: dropped


def test_the_fsm_puts_out_a_fire_before_anything_assigned() -> None:
    content = fresh(seed=0)
    pan = next([x, y] for y, row in enumerate(content["grid"]) for x, char in enumerate(row)
               if content["legend"][char] == "pan")
    content = {**content, "fires": [pan]}
    # Both chefs free: only the one nearer the fire goes (the same on both sides).
    decisions = {role: KitchenFSM(role).decide(content) for role in ("agent", "user")}
    assert list(decisions.values()).count("PUT_OUT_FIRE()") == 1
    busy_partner = [content["chefs"][0], {**content["chefs"][1], "macro": "SERVE(food=\"x\")"}]
    content = {**content, "chefs": busy_partner}
    fsm = KitchenFSM("agent", [ActionTask(always, 'PREPARE(food="Bread")')])
    assert fsm.decide(content) == "PUT_OUT_FIRE()" and fsm.state == "fire"
    assert len(fsm.assigned) == 1  # the assigned task waits for the fire


def test_a_busy_chef_gets_no_new_macro() -> None:
    content = fresh(seed=0)
    chefs = [{**content["chefs"][0], "macro": 'SERVE(food="BeefBurger")'}, content["chefs"][1]]
    fsm = KitchenFSM("agent")
    assert fsm.decide({**content, "chefs": chefs}) is None and fsm.state == "busy"


def test_a_chef_whose_moves_go_nowhere_steps_aside() -> None:
    content = fresh(seed=0)
    watch = StuckWatch("agent")
    situation = Situation.read(content, "agent")
    assert watch.step_aside(situation) is None
    for _ in range(4):
        watch.note_tick({"atomic": {"agent": "down"}})
        aside = watch.step_aside(situation)
    assert aside is not None and aside.startswith("MOVE(")
    x, y = content["chefs"][0]["pos"]
    direction = aside.split('"')[1]
    dx, dy = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}[direction]
    assert content["legend"][content["grid"][y + dy][x + dx]] == "floor"


def test_the_game_state_has_every_count_and_the_partners_hands() -> None:
    state = game_state(fresh(seed=0), "agent")
    assert state["objects"][("Beef", "Well-cooked")] == 0
    assert state["objects"][("FireExtinguisher", "")] == 1
    assert state["inventory_other_player"] == {"user": None}
    assert [order["remain_time"] for order in state["orders"]] == sorted(
        order["remain_time"] for order in state["orders"])
    assert state["counters"]["Empty"] > 0 and state["time_left"] == 500


# -- as members ---------------------------------------------------------------------------------

def _notification(env: KitchenEnv, seq: int, infos: list[dict[str, Any]]) -> Notification:
    events = [Event(seq=seq, time=0.0, type=EventType.CLOCK, info=info) for info in infos]
    return Notification(session_id="s", seq=seq, prev_seq=None, recipient="user",
                        event=events[-1] if events else Event(seq=seq, time=0.0,
                                                              type=EventType.START),
                        pending_confirmations=[], step_counts={}, step_limits={}, paused=[],
                        started_at=0.0, time=0.0, view=env.view("user"), chat=[],
                        new_messages=[], merged_events=events)


async def test_a_rule_based_member_sends_at_most_one_action_per_tick() -> None:
    env = KitchenEnv()
    env.bind_team([TeamMember(role="agent"), TeamMember(role="user")])
    env.reset(seed=0)
    member = member_type("kitchen-fsm").build(_setup())
    assert isinstance(member, PolicyMember)
    member.start(SessionContext(session_id="s", task="kitchen", task_description="",
                                role="user", kind="agent", team=[], action_specs=[],
                                collaboration_specs=[]))
    first = await member.act(_notification(env, 1, []))
    assert first is not None and env.step("user", first).error is None
    assert await member.act(_notification(env, 2, [])) is None  # same tick: wait for it
    result = env.advance()
    info = {"tick": 1, **result.info}
    assert await member.act(_notification(env, 3, [info])) is None  # its macro runs
    assert member.policy is not None


def _setup() -> Any:
    from cogym_lab.core.member import MemberSetup, TaskDescription

    return MemberSetup(role="user", task=TaskDescription.of(KitchenEnv()))


@pytest.mark.parametrize("name", sorted(PARTNERS))
def test_the_rule_based_members_are_registered_without_an_lm(name: str) -> None:
    registered = member_type(name)
    assert registered.kind == "agent" and not registered.uses_lm
    assert isinstance(registered.build(_setup()), PolicyMember)


@pytest.mark.parametrize("team", ["kitchen-fsm", "kitchen-act", "kitchen-react",
                                  "kitchen-reflexion", "kitchen-dpt", "kitchen-dpt-no-tom"])
def test_the_kitchen_teams_pair_an_agent_with_a_rule_based_partner(team: str) -> None:
    config = load_team(team)
    assert config.plays("kitchen") and list(config.members) == ["agent", "user"]
    assert config.kinds() == {"agent": "agent", "user": "agent"}
    assert config.members["agent"].type == team
    assert not member_type(config.members["user"].type).uses_lm


def test_the_fsm_team_plays_a_whole_session(tmp_path) -> None:
    from cogym_lab.envs import make_env
    from cogym_lab.nodes import Session, SessionConfig
    from cogym_lab.nodes.results import read_events
    from cogym_lab.teams.build import build_team

    env = make_env("kitchen", ticks=60, tick_seconds=0.01)
    team = load_team("kitchen-fsm")
    members, kinds = build_team(team, env)
    result = Session(env, members, kinds=kinds, results_dir=tmp_path,
                     config=SessionConfig(**team.session)).run_sync()
    assert result.end_reason == "time_up"
    events = read_events(tmp_path)
    acted = {e.actor for e in events if e.type is EventType.ACTION}
    assert acted == {"agent", "user"}
    assert not [e for e in events if e.type is EventType.ERROR]
    assert sum(1 for e in events if e.type is EventType.CLOCK) == 60
