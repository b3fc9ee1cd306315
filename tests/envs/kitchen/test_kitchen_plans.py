"""Plans in the kitchen: a person co-plans the division of labour, and the rule-based chef works
the plan's agent steps as its task list (``plan_bridge`` reads a step's text as a kitchen job,
``policies.plan_follower`` works it), in whole sessions of the real env; the log replays to the
same game and the same plan."""

from __future__ import annotations

import functools
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cogym_lab.core.check_env import check_env
from cogym_lab.core.messages import EventType
from cogym_lab.envs import make_env
from cogym_lab.envs.kitchen.plan_bridge import KitchenJob, NotAKitchenJob, read_step
from cogym_lab.envs.kitchen.policies.fsm import KitchenFSM
from cogym_lab.envs.kitchen.policies.members import FSM, PolicyMember
from cogym_lab.errors import CogymError
from cogym_lab.nodes import Session, replay
from cogym_lab.nodes.results import read_events
from tests.support.hostile import hostile_text
from tests.support.teammates import Recorder

# -- the bridge: a step's text as a kitchen job ------------------------------------------------


@pytest.mark.parametrize(("text", "job"), [
    ("prepare lettuce", KitchenJob("PREPARE", "Lettuce")),
    ("Chop lettuce twice", KitchenJob("PREPARE", "Lettuce", 2)),
    ("chop beef", KitchenJob("PREPARE", "Beef")),
    ("Cook the beef", KitchenJob("PREPARE", "Beef")),
    ("get bread", KitchenJob("PREPARE", "Bread")),
    ("assemble", KitchenJob("ASSEMBLE")),
    ("assemble 2 lettuce burgers", KitchenJob("ASSEMBLE", "LettuceBurger", 2)),
    ("serve", KitchenJob("SERVE")),
    ("Serve the beef burgers", KitchenJob("SERVE", "BeefBurger")),
    ("make a beef and lettuce burger", KitchenJob("ORDER", "BeefLettuceBurger")),
    ("make a BeefLettuceBurger", KitchenJob("ORDER", "BeefLettuceBurger")),
    ("hand over the plates", KitchenJob("PASS_ON", "Plate")),
    ("pass the cooked beef over", KitchenJob("PASS_ON", "Beef")),
    ("pass the burgers over 2 times", KitchenJob("PASS_ON", "", 2)),
    ("put out the fire", KitchenJob("PUT_OUT_FIRE")),
    ("clean a counter", KitchenJob("CLEAN_A_COUNTER")),
    ("keep chopping lettuce", KitchenJob("PREPARE", "Lettuce", standing=True)),
])
def test_a_step_that_names_a_kitchen_job_becomes_that_job(text: str, job: KitchenJob) -> None:
    assert read_step(text) == job


@pytest.mark.parametrize("text", ["write the related work section", "search for papers",
                                  "get a plate", "", "   ", "the person handles everything"])
def test_a_step_that_names_no_kitchen_job_is_refused_saying_what_a_step_may_say(
        text: str) -> None:
    with pytest.raises(NotAKitchenJob, match="names no kitchen job") as refused:
        read_step(text)
    assert "prepare, cook or chop" in str(refused.value)
    assert isinstance(refused.value, CogymError)


@given(hostile_text)
def test_any_text_is_a_job_or_a_clear_refusal(text: str) -> None:
    try:
        job = read_step(text)
    except NotAKitchenJob as refused:
        assert "names no kitchen job" in str(refused)
    else:
        assert job.macro in ("PREPARE", "ASSEMBLE", "SERVE", "ORDER", "PASS_ON",
                             "PUT_OUT_FIRE", "CLEAN_A_COUNTER")
        assert 1 <= job.count <= 9


# -- a planned kitchen session -------------------------------------------------------------------

#: The person writes the plan (the chef gets only lettuce work; the rest is theirs), runs it,
#: and then never completes their own step: the chef must not take on the rest.
PLAN_SCRIPT = [
    'ADD_STEP(description="prepare lettuce", assignee="agent")',
    'ADD_STEP(description="chop lettuce twice", assignee="agent")',
    'ADD_STEP(description="cook the beef, assemble and serve the burgers", '
    'assignee="person")',
    "RUN_ALL()",
]


async def planned_session(tmp_path, script: list[str | None], ticks: int = 160
                          ) -> tuple[Any, Recorder]:
    env = make_env("kitchen", ticks=ticks, tick_seconds=0.01, plans=True)
    person = Recorder(list(script))
    session = Session(env, {"agent": PolicyMember(KitchenFSM, follows_plans=True),
                            "user": person},
                      kinds={"agent": "agent", "user": "user"}, results_dir=tmp_path,
                      session_id="kplan-" + uuid.uuid4().hex[:6])
    result = await session.run()
    assert result.end_reason == "time_up"
    return env, person


def agent_actions(tmp_path, since: str = "RUN_ALL(") -> list[str]:
    """The agent's actions after the person's first action starting with ``since`` (the chef
    plays by its own rules until there is a plan)."""
    actions, started = [], False
    for event in read_events(tmp_path):
        if event.type is not EventType.ACTION:
            continue
        started = started or (event.actor == "user" and str(event.action).startswith(since))
        if started and event.actor == "agent":
            actions.append(str(event.action))
    return actions


def steps_of(env: Any) -> dict[str, dict[str, Any]]:
    plan = env.plan_board.content()["plan"]
    return {step["id"]: step for step in plan["steps"]}


def test_the_kitchen_takes_a_plan() -> None:
    env = make_env("kitchen", 0, plans=True)
    assert env.env_args()["plans"] is True
    env.reset(seed=0)
    assert [c.name for c in env.public_components()] == ["kitchen", "interactive_plan"]
    assert "kitchen job" in env.plan_board.content()["guidance"]
    planned = functools.partial(make_env, "kitchen", plans=True)
    assert check_env(planned, instance=1, ticks=30) == []  # the CoEnv contract, replay included


@pytest.mark.timeout(120)
async def test_the_chef_works_only_its_plan_steps_and_completes_each_when_done(tmp_path) -> None:
    env, _ = await planned_session(tmp_path, PLAN_SCRIPT)
    steps = steps_of(env)
    assert steps["s1"]["status"] == "done" and steps["s1"]["completed_by"] == "agent"
    assert steps["s2"]["status"] == "done" and steps["s2"]["completed_by"] == "agent"
    assert steps["s3"]["status"] == "needs_input"  # the person's share, left to the person
    sent = agent_actions(tmp_path)
    macros = [a for a in sent if not a.startswith(("MOVE(", "COMPLETE_STEP("))]
    # lettuce work only: chopping it, and moving chopped lettuce off a full board
    assert 'PREPARE(food="Lettuce")' in macros and set(macros) <= {
        'PREPARE(food="Lettuce")', 'PASS_ON(thing="Lettuce", thing_status="Chopped")'}, sent
    assert len([a for a in sent if a.startswith("COMPLETE_STEP(")]) == 2
    # a step completes when its job is done: s1 after the first lettuce, s2 after two more
    events = read_events(tmp_path)
    done_ticks, tick, completed, run = [], 0, {}, False
    for event in events:
        run = run or str(getattr(event, "action", "")).startswith("RUN_ALL(")
        if event.type is EventType.CLOCK and run:
            tick = event.info["tick"]
            done_ticks += [tick for h in event.info.get("happened", [])
                           if h.get("kind") == "macro_done" and h.get("chef") == "agent"
                           and h.get("macro") == "PREPARE"]
        elif event.type is EventType.ACTION and str(event.action).startswith("COMPLETE_STEP("):
            completed[str(event.action).split('step="')[1].split('"')[0]] = tick
    assert len(done_ticks) >= 3
    assert done_ticks[0] <= completed["s1"] < done_ticks[1]
    assert done_ticks[2] <= completed["s2"]
    assert replay(tmp_path).final_state_checked  # the log replays to the same game and plan


@pytest.mark.timeout(120)
async def test_before_the_plan_runs_the_chef_waits(tmp_path) -> None:
    env, _ = await planned_session(tmp_path, PLAN_SCRIPT[:3], ticks=60)
    assert all(step["status"] == "not_run" for step in steps_of(env).values())
    sent = agent_actions(tmp_path, since="ADD_STEP(")
    assert not [a for a in sent if not a.startswith("MOVE(")], sent


@pytest.mark.timeout(120)
async def test_a_step_that_names_no_kitchen_job_is_failed_for_the_person(tmp_path) -> None:
    script = ['ADD_STEP(description="write a poem about burgers", assignee="agent")',
              'ADD_STEP(description="prepare lettuce", assignee="agent")', "RUN_ALL()"]
    env, _ = await planned_session(tmp_path, script, ticks=60)
    steps = steps_of(env)
    assert steps["s1"]["status"] == "failed"
    assert "names no kitchen job" in steps["s1"]["output"]["text"]
    assert steps["s2"]["status"] == "not_run"  # steps run in order: it waits for the person
    sent = agent_actions(tmp_path)
    assert [a for a in sent if a.startswith("FAIL_STEP(")] and not [
        a for a in sent if a.startswith(("PREPARE(", "ASSEMBLE(", "SERVE("))]


def test_the_fsm_member_type_follows_plans() -> None:
    from cogym_lab.core.member import MemberSetup, TaskDescription

    env = make_env("kitchen", plans=True)
    member = FSM.build(MemberSetup(role="agent", task=TaskDescription.of(env)))
    assert isinstance(member, PolicyMember) and member.follows_plans


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("no_ambient_lm")
async def test_dpt_agents_system_1_works_the_plan_and_its_prompts_show_it(tmp_path) -> None:
    from pydantic import SecretStr

    from cogym_lab.envs.kitchen.agents import DPTAgent
    from cogym_lab.lm import LMConfig, make_lm
    from cogym_lab.testing import Reply, ScriptedOpenAIServer

    def answer(body: dict[str, Any]) -> Reply:  # tasks the plan must override: beef
        return Reply('```text\nCook beef.\n```\n\n```json\n["BeefBurger"]\n```')

    with ScriptedOpenAIServer(responder=answer) as server:
        lm = make_lm(LMConfig(model="kitchen-lm", base_url=server.base_url,
                              api_key=SecretStr("sk-test"), backoff=0.01))
        env = make_env("kitchen", ticks=120, tick_seconds=0.01, plans=True)
        session = Session(env, {"agent": DPTAgent(lm, policy_every=10, belief_every=1000),
                                "user": Recorder(list(PLAN_SCRIPT))},
                          kinds={"agent": "agent", "user": "user"}, results_dir=tmp_path,
                          session_id="kplan-dpt-" + uuid.uuid4().hex[:6])
        await session.run()
    assert steps_of(env)["s1"]["status"] == "done"
    macros = [a for a in agent_actions(tmp_path) if not a.startswith(("MOVE(", "COMPLETE_STEP("))]
    assert macros and set(macros) <= {
        'PREPARE(food="Lettuce")', 'PASS_ON(thing="Lettuce", thing_status="Chopped")'}, macros
    later = server.chat_requests[-1]["messages"][-1]["content"]
    assert "## The plan" in later and "cook the beef, assemble and serve" in later


# -- any plan, played headless: the chef's actions are always the plan's, never refused ------

STEP_TEXTS = ["prepare lettuce", "cook beef", "chop lettuce twice", "assemble", "serve",
              "make a LettuceBurger", "pass the plates over", "clean a counter", "sing a song",
              "keep chopping lettuce"]


@settings(max_examples=12, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(STEP_TEXTS), st.sampled_from(["agent", "person"])),
                      min_size=1, max_size=5),
       person_every=st.integers(min_value=5, max_value=60), seed=st.integers(0, 3))
def test_any_plan_the_chef_works_only_its_steps_and_is_never_refused(
        steps: list[tuple[str, str]], person_every: int, seed: int) -> None:
    from cogym_lab.core.messages import TeamMember
    from cogym_lab.envs.kitchen.policies.plan_follower import PlanFollower

    env = make_env("kitchen", 0, ticks=90, plans=True)
    env.bind_team([TeamMember(role="agent"), TeamMember(role="user", kind="user")])
    env.reset(seed=seed)
    for text, side in steps:
        assert env.step("user", f'ADD_STEP(description="{text}", assignee="{side}")').error is None
    assert env.step("user", "RUN_ALL()").error is None
    follower = PlanFollower("agent")
    allowed = set()
    for text, side in steps:
        if side == "agent":
            try:
                job = read_step(text)
            except NotAKitchenJob:
                continue
            allowed.add(job.macro if job.macro != "ORDER" else "ANY")
    for tick in range(90):
        content = env.view("agent")["kitchen"].content
        plan = env.view("agent")["interactive_plan"].content
        action = follower.decide(content, plan)
        if action is not None:
            assert env.step("agent", action).error is None, action
            name = action.split("(", 1)[0]
            if name not in ("MOVE", "COMPLETE_STEP", "FAIL_STEP", "PUT_OUT_FIRE"):
                assert "ANY" in allowed or name in allowed or (
                    name == "PASS_ON" and "PREPARE" in allowed), (action, steps)
        if tick % person_every == 0:  # the person completes their step now and then
            waiting = [s for s in env.plan_board.steps if s.status == "needs_input"]
            for step in waiting:
                assert env.step("user", f'COMPLETE_STEP(step="{step.id}")').error is None
        info = {"tick": tick + 1, **env.advance().info}
        follower.note_tick(info)
    for step in env.plan_board.steps:  # agent steps were completed by the agent only
        if step.status == "done" and step.assignee == "agent":
            assert step.completed_by == "agent"
