"""Co-planning the kitchen: the rule-based chef proposes divisions of labour
(``plan_proposals``), the person picks one and edits it, and the chef works only its agent
steps; every proposal on both maps is a plan the bridge reads and that serves two orders when
each side works its share; with a person in the team, co-planning does not start the clock and
the chef makes no move before it starts; a job of the chef's own that the picked plan gives
the person is dropped at once; the logs replay to the same game and plan."""

from __future__ import annotations

import asyncio
import copy
import json
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import SecretStr

from cogym_lab.core import CoEnv, Notification
from cogym_lab.core.member import Member
from cogym_lab.core.messages import EventType, MemberKind, TeamMember
from cogym_lab.envs import make_env
from cogym_lab.envs.kitchen.agents import ActAgent, DPTAgent
from cogym_lab.envs.kitchen.plan_bridge import read_step
from cogym_lab.envs.kitchen.plan_proposals import checked_proposals, propose
from cogym_lab.envs.kitchen.policies.fsm import KitchenFSM
from cogym_lab.envs.kitchen.policies.members import PolicyMember
from cogym_lab.envs.kitchen.policies.plan_follower import PlanFollower
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.nodes import Session, replay
from cogym_lab.nodes.results import read_events
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.support.hostile import hostile_text
from tests.support.teammates import Quiet

MAPS = (0, 1)  # Map 1 (New Counter Circuit) and Map 2 (New Asymmetric Advantages)


def planned_kitchen(instance: int, ticks: int = 400) -> Any:
    """A planned kitchen with the agent and a person whose macros are allowed (the simulated
    person here works its share with the chef's own job macros)."""
    env = make_env("kitchen", instance, ticks=ticks, plans=True, person_macros=True)
    env.bind_team([TeamMember(role="agent"), TeamMember(role="user", kind="user")])
    env.reset(seed=0)
    return env


def proposals_of(instance: int) -> list[dict[str, Any]]:
    env = planned_kitchen(instance)
    return propose(env.view("agent")["kitchen"].content, "agent")


def kitchen_session(env: CoEnv, chef: Member, person: Member, results: Path, name: str, *,
                    kind: MemberKind) -> Session:
    """The chef and a person (``kind``: "user" simulated, "person" a person the clock waits
    for) in a session of ``env``, logged to ``results``."""
    return Session(env, {"agent": chef, "user": person}, kinds={"agent": "agent", "user": kind},
                   results_dir=results, session_id=f"{name}-{uuid.uuid4().hex[:6]}")


def dpt_chef(base_url: str) -> DPTAgent:
    """DPT on the scripted LM at ``base_url``: System 2 every ten ticks, its belief all but
    never."""
    lm = make_lm(LMConfig(model="kitchen-lm", base_url=base_url, api_key=SecretStr("sk-test"),
                          backoff=0.01))
    return DPTAgent(lm, policy_every=10, belief_every=1000)


@pytest.mark.parametrize("instance", MAPS)
def test_every_proposal_is_a_division_of_labour_the_bridge_reads(instance: int) -> None:
    plans = proposals_of(instance)
    assert 1 <= len(plans) <= 3
    for plan in plans:
        sides = {step["assignee"] for step in plan["steps"]}
        assert sides == {"agent", "person"}, plan  # both sides have a share
        jobs = [read_step(step["description"]) for step in plan["steps"]]  # none refused
        macros = {job.macro for job in jobs}
        assert {"PREPARE", "ASSEMBLE", "SERVE"} <= macros
        assert {job.food for job in jobs if job.macro == "PREPARE"} == {"Beef", "Lettuce"}
        assert plan["title"]


def test_a_split_kitchen_passes_things_over_and_gives_each_job_to_the_side_that_reaches_it(
        ) -> None:
    (plan,) = proposals_of(1)  # Map 2: the agent's left side has the beef and the plates
    who = {step["description"]: step["assignee"] for step in plan["steps"]}
    assert who["cook beef 2 times"] == "agent" and who["chop lettuce 2 times"] == "person"
    assert who["serve 2 burgers"] == "person"  # the windows are on the right
    assert who["pass the chopped lettuce over 2 times"] == "person"
    assert who["pass the burgers over 2 times"] == "agent"


def test_no_partner_no_proposal() -> None:
    env = make_env("kitchen", 0, plans=True)
    env.bind_team([TeamMember(role="agent")])
    env.reset(seed=0)
    assert propose(env.view("agent")["kitchen"].content, "agent") == []


FLIP = {"agent": "person", "person": "agent"}


def as_the_person_sees_it(plan: Mapping[str, Any]) -> dict[str, Any]:
    """The plan with its sides swapped, so a second plan follower works the person's share
    (a person step that waits for its person counts as running for it)."""
    flipped = copy.deepcopy(dict(plan))
    for step in flipped["plan"]["steps"]:
        step["assignee"] = FLIP[step["assignee"]]
        step["status"] = {"needs_input": "running", "running": "needs_input"}.get(
            step["status"], step["status"])
    return flipped


@pytest.mark.timeout(300)
@pytest.mark.parametrize("instance", MAPS)
def test_each_proposal_serves_two_orders_when_each_side_works_its_share(instance: int) -> None:
    for index in range(len(proposals_of(instance))):
        env = planned_kitchen(instance)
        agent, person = PlanFollower("agent"), PlanFollower("user")
        offer = agent.propose(env.view("agent")["kitchen"].content,
                              env.view("agent")["interactive_plan"].content)
        assert offer is not None and env.step("agent", offer).error is None
        assert agent.propose(env.view("agent")["kitchen"].content,
                             env.view("agent")["interactive_plan"].content) is None  # once
        assert env.step("user", f"SELECT_PLAN(index={index})").error is None
        assert env.step("user", "RUN_ALL()").error is None
        served: list[str] = []
        for tick in range(400):
            for role, follower in (("agent", agent), ("user", person)):
                view = env.view(role)
                plan = view["interactive_plan"].content
                action = follower.decide(view["kitchen"].content, plan if role == "agent"
                                         else as_the_person_sees_it(plan))
                if action is not None:
                    assert env.step(role, action).error is None, (role, action)
            info = {"tick": tick + 1, **env.advance().info}
            agent.note_tick(info)
            person.note_tick(info)
            served += [h["dish"] for h in info.get("happened", []) if h.get("kind") == "served"]
        # every proposal makes two burgers, and both are served: an assembler that holds the
        # last one while the other side serves hands it over
        assert len(served) >= 2, (instance, index, served)
        for step in env.plan_board.steps:  # each side completed only its own steps
            if step.status == "done":
                assert step.completed_by == ("agent" if step.assignee == "agent" else "user")


class Coplanner(Quiet):
    """A simulated person who waits for the chef's proposals, picks one, gives themselves one
    of its agent steps, and runs the plan; then leaves their own steps waiting."""

    def __init__(self, pick: int, take: str) -> None:
        self.pick, self.take = pick, take
        self.script: list[str] = []
        self.seen_proposals: list[Any] = []

    async def act(self, notification: Notification) -> str | None:
        plan = notification.view["interactive_plan"].content
        if not self.seen_proposals and plan.get("proposals"):
            self.seen_proposals = list(plan["proposals"])
            self.script = [f"SELECT_PLAN(index={self.pick})",
                           f'ASSIGN_STEP(step="{self.take}", assignee="person")', "RUN_ALL()"]
        return self.script.pop(0) if self.script else None


@pytest.mark.timeout(180)
async def test_the_chef_proposes_the_person_picks_and_edits_and_the_chef_works_its_rest(
        tmp_path) -> None:
    env = make_env("kitchen", 0, ticks=200, tick_seconds=0.01, plans=True)
    person = Coplanner(pick=1, take="s2")  # "I prepare the beef and lettuce; ...": the
    # person takes the lettuce (s2) for themselves
    session = kitchen_session(env, PolicyMember(KitchenFSM, follows_plans=True), person,
                              tmp_path, "kcoplan", kind="user")
    assert (await session.run()).end_reason == "time_up"
    assert [p["title"] for p in person.seen_proposals][1] == \
        "I prepare the beef and lettuce; you assemble and serve"
    steps = {step.id: step for step in env.plan_board.steps}
    assert steps["s1"].description == "cook beef 2 times" and steps["s1"].status == "done"
    assert steps["s1"].completed_by == "agent"
    assert steps["s2"].assignee == "person" and steps["s2"].status == "needs_input"
    assert all(step.status != "done" for step in list(steps.values())[1:])
    events = [e for e in read_events(tmp_path) if e.type is EventType.ACTION]
    proposed = [e for e in events if str(e.action).startswith("PROPOSE_PLANS(")]
    assert len(proposed) == 1 and proposed[0].actor == "agent"
    run_at = next(n for n, e in enumerate(events) if str(e.action).startswith("RUN_ALL("))
    after = [str(e.action) for e in events[run_at:] if e.actor == "agent"]
    macros = [a for a in after if not a.startswith(("MOVE(", "COMPLETE_STEP("))]
    # beef work only: no lettuce once the person took it, no assembling or serving
    assert 'PREPARE(food="Beef")' in macros and all(
        "Lettuce" not in a and not a.startswith(("ASSEMBLE(", "SERVE(")) for a in macros), after
    assert [a for a in after if a.startswith("COMPLETE_STEP(")] == [
        'COMPLETE_STEP(step="s1", text="The chef did it: prepare Beef x2.")']
    assert replay(tmp_path).final_state_checked  # the log replays to the same game and plan


#: A chat line that reads like game actions: chat is not playing, whatever it says.
SAID = 'MOVE(direction="up") WAIT_TEAMMATE_CONTINUE() \u202e Start!'


def game_actions(events: list[Any], role: str) -> list[Any]:
    """``role``'s logged actions that play the game (not plan actions, not chat)."""
    return [e for e in events if e.type is EventType.ACTION and e.actor == role
            and str(e.action).startswith(("MOVE(", "INTERACT(", "PREPARE(", "ASSEMBLE(",
                                          "SERVE(", "PASS_ON(", "PUT_OUT_FIRE(",
                                          "CLEAN_A_COUNTER("))]


class PlansThenPlays(Quiet):
    """A person (the clock waits for them) who co-plans before playing: once the chef has
    proposed, picks a proposal, edits a step, chats and runs the plan; then takes a moment
    and presses their first key."""

    def __init__(self, pause: float) -> None:
        self.pause = pause
        self.script: list[Any] | None = None
        self.played = False

    async def act(self, notification: Notification) -> str | None:
        plan = notification.view["interactive_plan"].content
        if self.script is None and plan.get("proposals"):
            self.script = ["SELECT_PLAN(index=1)",
                           'EDIT_STEP(step="s2", description="chop lettuce 3 times")',
                           {"name": "SEND_TEAMMATE_MESSAGE", "args": {"message": SAID}},
                           "RUN_ALL()"]
        if self.script:
            return self.script.pop(0)
        if self.script is not None and not self.played:
            self.played = True
            await asyncio.sleep(self.pause)
            return 'MOVE(direction="right")'  # towards a counter: the chef only turns
        return None


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("no_ambient_lm")
@pytest.mark.parametrize("chef", ["kitchen-fsm", "kitchen-dpt"])
async def test_co_planning_does_not_start_the_clock_and_the_first_key_does(
        tmp_path, chef: str) -> None:
    env = make_env("kitchen", 0, ticks=80, tick_seconds=0.01, plans=True)
    pause = 0.4  # 40 ticks, had the clock started
    # DPT's LM writes no usable proposals and no tasks: its System 1 proposes the rule's
    with ScriptedOpenAIServer(responder=lambda body: Reply("```json\n[]\n```")) as server:
        agent: Any = PolicyMember(KitchenFSM, follows_plans=True) if chef == "kitchen-fsm" \
            else dpt_chef(server.base_url)
        session = kitchen_session(env, agent, PlansThenPlays(pause), tmp_path, "kclock",
                                  kind="person")
        assert (await session.run()).end_reason == "time_up"
    events = read_events(tmp_path)
    ticks = [e for e in events if e.type is EventType.CLOCK]
    assert [e.info["tick"] for e in ticks] == list(range(1, 81))  # none lost to co-planning
    person = [e for e in events if e.actor == "user"
              and e.type in (EventType.ACTION, EventType.MESSAGE)]
    [key] = game_actions(events, "user")
    planned = [e for e in person if e.seq < key.seq]
    assert [e.type for e in planned] == [EventType.ACTION, EventType.ACTION,
                                         EventType.MESSAGE, EventType.ACTION]
    assert [str(e.action).split("(")[0] for e in planned if e.type is EventType.ACTION] == [
        "SELECT_PLAN", "EDIT_STEP", "RUN_ALL"]
    assert env.plan_board.steps[1].description == "chop lettuce 3 times"
    assert ticks[0].seq > key.seq  # the clock stayed at tick 0 until the first key
    assert key.time - planned[-1].time >= pause * 0.9
    chef = game_actions(events, "agent")
    assert chef and chef[0].seq > ticks[0].seq  # the chef made no move before the clock
    assert str(chef[0].action) == 'PREPARE(food="Beef")'  # its first plan step, at once
    assert replay(tmp_path).final_state_checked


class PlaysThenPlans(Quiet):
    """A person who presses a key first (the clock starts, and the chef starts a job of its
    own: on Map 1, chopping lettuce for the first order), then, once the chef is on that job,
    picks the proposal that gives the lettuce to them, and runs it ``wait`` ticks later; notes
    the chef's macro at every tick from the pick on."""

    def __init__(self, wait: int) -> None:
        self.wait = wait
        self.picked_at: int | None = None
        self.ran = False
        self.played = False
        self.after: list[tuple[int, str]] = []  # (tick, the chef's macro) from the pick on

    async def act(self, notification: Notification) -> str | None:
        kitchen = notification.view["kitchen"].content
        chef = next(c for c in kitchen["chefs"] if c["role"] == "agent")
        if not self.played:
            self.played = True
            return 'MOVE(direction="right")'  # towards a counter: the chef only turns
        if self.picked_at is None:
            if str(chef.get("macro")).startswith('PREPARE(food="Lettuce"'):
                self.picked_at = kitchen["tick"]
                return "SELECT_PLAN(index=0)"
            return None
        self.after.append((kitchen["tick"], str(chef.get("macro"))))
        if not self.ran and kitchen["tick"] >= self.picked_at + self.wait:
            self.ran = True
            return "RUN_ALL()"
        return None


@pytest.mark.timeout(120)
async def test_a_job_of_its_own_that_the_picked_plan_gives_the_person_is_dropped_at_once(
        tmp_path) -> None:
    env = make_env("kitchen", 0, ticks=120, tick_seconds=0.01, plans=True)
    person = PlaysThenPlans(wait=10)
    session = kitchen_session(env, PolicyMember(KitchenFSM, follows_plans=True), person,
                              tmp_path, "kdrop", kind="person")
    assert (await session.run()).end_reason == "time_up"
    assert [s.description for s in env.plan_board.steps][:2] == [
        "cook beef 2 times", "chop lettuce 2 times"]  # "I cook the beef and assemble; ..."
    assert env.plan_board.steps[1].assignee == "person"
    events = read_events(tmp_path)
    pick = next(e for e in events if str(e.action or "").startswith("SELECT_PLAN("))
    run = next(e for e in events if str(e.action or "").startswith("RUN_ALL("))
    chef = game_actions(events, "agent")
    assert str(chef[0].action) == 'PREPARE(food="Lettuce")' and chef[0].seq < pick.seq
    # picked: the lettuce job is dropped at once, though the plan does not run yet
    dropped = next(e for e in chef if e.seq > pick.seq)
    assert dropped.seq < run.seq and str(dropped.action).startswith("MOVE(")
    assert sum(e.type is EventType.CLOCK for e in events if pick.seq < e.seq < dropped.seq) <= 1
    picked_at = sum(e.type is EventType.CLOCK for e in events if e.seq < pick.seq)
    later = [macro for tick, macro in person.after if tick >= picked_at + 2]
    assert later and not [m for m in later if "Lettuce" in m], person.after
    # run: the chef goes to its first own step
    ran = [e for e in chef if e.seq > run.seq]
    assert str(ran[0].action) == 'PREPARE(food="Beef")'
    assert not [e for e in chef if e.seq > pick.seq and "Lettuce" in str(e.action)]
    assert replay(tmp_path).final_state_checked  # the log replays to the same game and plan


async def dpt_session(tmp_path: Path, respond: Callable[[dict[str, Any]], Reply], *,
                      instance: int = 0, ticks: int = 80,
                      take: str = "s4") -> tuple[Any, Coplanner, ScriptedOpenAIServer]:
    """DPT and a :class:`Coplanner` who picks the first proposal and takes step ``take``, run
    to the end on a kitchen map, DPT's LM answering with ``respond``."""
    with ScriptedOpenAIServer(responder=respond) as server:
        env = make_env("kitchen", instance, ticks=ticks, tick_seconds=0.01, plans=True)
        person = Coplanner(pick=0, take=take)
        await kitchen_session(env, dpt_chef(server.base_url), person, tmp_path, "kcoplan-dpt",
                              kind="user").run()
    return env, person, server


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("no_ambient_lm")
async def test_dpt_agents_rule_based_half_proposes_too(tmp_path) -> None:
    env, person, _ = await dpt_session(tmp_path, lambda body: Reply("```json\n[]\n```"),
                                       instance=1, ticks=120, take="s1")
    assert person.seen_proposals  # Map 2's division of labour, from System 1's rule
    assert env.plan_board.steps[0].assignee == "person"  # the person took the beef
    assert replay(tmp_path).final_state_checked


# -- DPT's LM writes the proposals; an unusable answer gives the rule's ------------------------

WRITTEN = [{"title": "You do the beef, I do the rest", "steps": [
    {"description": "cook beef 2 times", "assignee": "person"},
    {"description": "chop lettuce 2 times", "assignee": "agent"},
    {"description": "assemble 2 burgers", "assignee": "agent"},
    {"description": "serve 2 burgers", "assignee": "agent"}]}]


@pytest.mark.parametrize("plans", [
    [], [{"title": "x", "steps": [{"description": "write a poem", "assignee": "agent"},
                                  {"description": "serve", "assignee": "person"}]}],
    [{"title": "one side", "steps": [{"description": "serve", "assignee": "agent"}]}],
    [{"title": "", "steps": WRITTEN[0]["steps"]}], "not a list", WRITTEN * 4,
    [{"title": "bad side", "steps": [{"description": "serve", "assignee": "chef"},
                                     {"description": "assemble", "assignee": "person"}]}],
])
def test_written_proposals_that_are_not_kitchen_divisions_are_refused(plans: Any) -> None:
    assert checked_proposals(plans) is None


def test_written_proposals_that_are_kitchen_divisions_are_kept() -> None:
    assert checked_proposals(WRITTEN) == WRITTEN


@given(st.recursive(st.none() | st.booleans() | st.integers() | hostile_text,
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.sampled_from(["title", "steps", "description",
                                                       "assignee"]) | hostile_text, inner,
                                      max_size=4), max_leaves=20))
def test_any_answer_is_usable_proposals_or_none(plans: Any) -> None:
    checked = checked_proposals(plans)
    if checked is not None:
        for plan in checked:
            assert {s["assignee"] for s in plan["steps"]} == {"agent", "person"}
            for step in plan["steps"]:
                read_step(step["description"])


def answering(answer: str) -> Callable[[dict[str, Any]], Reply]:
    """DPT's LM: ``answer`` to the proposals prompt; to any other, keep cooking."""
    def respond(body: dict[str, Any]) -> Reply:
        prompt = str(body["messages"][-1]["content"])
        return Reply(answer if "# Propose a division of labour" in prompt
                     else "```text\nKeep cooking.\n```\n\n```json\n[]\n```")

    return respond


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("no_ambient_lm")
async def test_dpts_lm_writes_the_proposals_from_the_maps_reach(tmp_path) -> None:
    env, person, server = await dpt_session(
        tmp_path, answering(f"```json\n{json.dumps(WRITTEN)}\n```"))
    assert [p["title"] for p in person.seen_proposals] == [WRITTEN[0]["title"]]
    asked = [str(b["messages"][-1]["content"]) for b in server.chat_requests
             if "# Propose a division of labour" in str(b["messages"][-1]["content"])]
    assert len(asked) == 1 and "- agent: can beef, lettuce, assemble, serve" in asked[0]
    assert env.plan_board.steps[3].assignee == "person"  # the person took the serving
    assert replay(tmp_path).final_state_checked


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("no_ambient_lm")
async def test_an_unusable_answer_gives_the_rules_proposals(tmp_path) -> None:
    _, person, _ = await dpt_session(tmp_path, answering(
        "```json\n[{\"title\": \"poems\", \"steps\": [\"write a poem\"]}]\n```"))
    assert [p["title"] for p in person.seen_proposals] == [
        p["title"] for p in proposals_of(0)]
    rejected = (tmp_path / "kcoplan").parent  # the agent's records hold the refusal
    assert any("proposals" in line for path in rejected.rglob("policy_rejections.jsonl")
               for line in path.read_text().splitlines())


# -- no agent moves before the clock; DPT's proposals never hold it ----------------------------

#: What an LM-only chef answers at once, every time: a game move.
MACRO_REPLY = '```json\n{"action": "prepare", "args": {"food": "Beef", "plate": false}}\n```'


class KeyAfterAPause(Quiet):
    """A person (the clock waits for them) who looks at the kitchen for ``pause`` seconds,
    notes then what the world and the agent's chef are like, and presses a key."""

    def __init__(self, env: Any, pause: float) -> None:
        self.env = env
        self.pause = pause
        self.before_key: dict[str, Any] | None = None

    async def act(self, notification: Notification) -> str | None:
        if self.before_key is not None:
            return None
        await asyncio.sleep(self.pause)
        chef = self.env.game.chef("agent")
        self.before_key = {"tick": self.env.game.tick, "pos": chef.pos,
                           "queue": list(chef.queue), "macro": chef.macro}
        return 'MOVE(direction="right")'  # towards a counter: the chef only turns


def scripted_lm(server: Any) -> Any:
    return make_lm(LMConfig(model="kitchen-lm", base_url=server.base_url,
                            api_key=SecretStr("sk-test"), backoff=0.01))


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("no_ambient_lm")
async def test_the_lm_only_chef_makes_no_move_before_the_persons_first_play(tmp_path) -> None:

    env = make_env("kitchen", 0, ticks=40, tick_seconds=0.01, plans=True)
    start = env.layout.chef_starts[0]
    pause = 0.4  # 40 ticks, had the clock started
    with ScriptedOpenAIServer(responder=lambda body: Reply(MACRO_REPLY)) as server:
        person = KeyAfterAPause(env, pause)
        session = Session(env, {"agent": ActAgent(scripted_lm(server)), "user": person},
                          kinds={"agent": "agent", "user": "person"}, results_dir=tmp_path,
                          session_id="kact-" + uuid.uuid4().hex[:6])
        assert (await session.run()).end_reason == "time_up"
    # the LM answers a move at once, yet the world stood still until the person's key
    assert person.before_key == {"tick": 0, "pos": start, "queue": [], "macro": None}
    events = read_events(tmp_path)
    [key] = game_actions(events, "user")
    ticks = [e for e in events if e.type is EventType.CLOCK]
    assert [e.info["tick"] for e in ticks] == list(range(1, 41))
    assert ticks[0].seq > key.seq
    moves = game_actions(events, "agent")
    assert moves and moves[0].seq > ticks[0].seq  # its first move came after the clock started
    assert str(moves[0].action) == 'PREPARE(food="Beef")'
    assert replay(tmp_path).final_state_checked


class StartsAtOnce(Quiet):
    """A person who presses Start (a wait, as the panel's button sends) right after the
    session starts, while the agent's proposals are still being written, then watches."""

    def __init__(self) -> None:
        self.pressed = False

    async def act(self, notification: Notification) -> str | None:
        if self.pressed:
            return None
        self.pressed = True
        await asyncio.sleep(0.1)  # DPT's proposals call is under way by now
        return "WAIT_TEAMMATE_CONTINUE()"


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("no_ambient_lm")
async def test_start_starts_the_clock_at_once_while_dpts_proposals_are_written(
        tmp_path) -> None:
    held = 1.5  # the proposals' LM reply comes this late
    period = 0.02

    def respond(body: dict[str, Any]) -> Reply:
        prompt = str(body["messages"][-1]["content"])
        if "# Propose a division of labour" in prompt:
            return Reply(f"```json\n{json.dumps(WRITTEN)}\n```", delay=held)
        return Reply("```text\nKeep cooking.\n```\n\n```json\n[]\n```")

    env = make_env("kitchen", 0, ticks=120, tick_seconds=period, plans=True)
    with ScriptedOpenAIServer(responder=respond) as server:
        session = Session(env, {"agent": DPTAgent(scripted_lm(server), policy_every=10,
                                                  belief_every=1000),
                                "user": StartsAtOnce()},
                          kinds={"agent": "agent", "user": "person"}, results_dir=tmp_path,
                          session_id="kdptstart-" + uuid.uuid4().hex[:6])
        assert (await session.run()).end_reason == "time_up"  # nothing deadlocked
        asked = next(r for r in server.chat_requests
                     if "# Propose a division of labour" in str(r.body["messages"][-1]["content"]))
    events = read_events(tmp_path)
    pressed = next(e for e in events if e.type is EventType.WAIT and e.actor == "user")
    ticks = [e for e in events if e.type is EventType.CLOCK]
    assert [e.info["tick"] for e in ticks] == list(range(1, 121))
    assert asked.received_at < pressed.time  # the proposals were being written when Start came
    # the clock started within a tick of Start, and the chef played on meanwhile
    assert ticks[0].seq > pressed.seq and ticks[0].time - pressed.time < 2 * period + 0.05
    moves = game_actions(events, "agent")
    proposed = next(e for e in events if str(e.action or "").startswith("PROPOSE_PLANS("))
    assert moves and moves[0].time < asked.received_at + held * 0.8 < proposed.time
    assert moves[0].seq < proposed.seq
    # the proposals came whenever they were written: the LM's, though the game was on
    assert WRITTEN[0]["title"] in str(proposed.action)
    assert replay(tmp_path).final_state_checked
