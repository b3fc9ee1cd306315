"""Simulated users' traits: each reaches the LM simulated user's prompt, changes the todo task's
rule-based user, and an unknown one is a clear error."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.core.messages import EventType
from cogym_lab.nodes.results import read_events
from cogym_lab.sessions import SessionBuildError, SessionSpec, build_session
from cogym_lab.teams.build import with_traits
from cogym_lab.teams.config import MemberConfig, load_team
from cogym_lab.users.traits import TRAITS, UnknownTrait, check_traits, traits_prompt
from tests.support.lm_scripts import classify, user_choice

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

#: Words of each trait's paragraph, to find it in a prompt.
MARKS = {"impatient": "You are impatient", "terse": "You are terse",
         "confused": "You are a little confused", "sceptical": "You are sceptical",
         "forgetful": "You are forgetful"}


def test_the_traits_are_known_and_an_unknown_one_lists_them():
    assert set(TRAITS) == set(MARKS)
    assert check_traits("Impatient, terse,impatient") == ("impatient", "terse")
    with pytest.raises(UnknownTrait) as raised:
        check_traits(["impatient", "grumpy"])
    assert "'grumpy'" in str(raised.value)
    assert all(name in str(raised.value) for name in TRAITS)
    assert traits_prompt([]) == ""


@pytest.mark.parametrize("trait", sorted(MARKS))
def test_each_trait_reaches_the_simulated_users_prompt(server, tmp_path, trait):
    # the LM user finishes on its first turn: one decide call, whose context holds the trait
    server.responder = lambda body: "Thought: done.\n" + user_choice(body, "finish")
    team = load_team("example")
    team = team.model_copy(update={"members": {**team.members, "user": MemberConfig(
        type="simulated", options={"proactive_action": True, "traits": [trait]})}})
    spec = SessionSpec.model_validate({"task": "todo", "instance": 0, "team": team,
                                       "lm": {"user": {"model": "user-lm",
                                                       "base_url": server.base_url}},
                                       "limits": {"timeout": 30}})
    build_session(spec, results_dir=tmp_path / "s").run_sync()
    decides = [b for b in server.bodies if classify(b) == "user-decide"]
    assert decides
    system = decides[0]["messages"][0]["content"]
    assert MARKS[trait] in system
    assert all(MARKS[other] not in system for other in MARKS if other != trait)


def test_an_unknown_trait_in_a_team_file_is_a_build_error(tmp_path):
    team = load_team("example")
    team = team.model_copy(update={"members": {**team.members, "user": MemberConfig(
        type="example-user", options={"traits": ["grumpy"]})}})
    with pytest.raises(SessionBuildError) as raised:
        build_session(SessionSpec(task="todo", team=team, instance=0))
    assert "grumpy" in raised.value.message and "impatient" in raised.value.message


def test_a_member_type_without_traits_refuses_them():
    team = load_team("kitchen-fsm")
    team = team.model_copy(update={"members": {**team.members, "user": MemberConfig(
        type="kitchen-assembler", options={"traits": ["impatient"]})}})
    with pytest.raises(SessionBuildError) as raised:
        build_session(SessionSpec(task="kitchen", team=team, instance=0))
    assert "takes no traits" in raised.value.message


def _play(tmp_path, *traits):
    folder = tmp_path / ("-".join(traits) or "plain")
    result = build_session(SessionSpec(task="todo", instance=0,
                                       team=with_traits(load_team("example"), traits)),
                           results_dir=folder).run_sync()
    return result, read_events(folder)


def _user_messages(events):
    return [e.action for e in events if e.actor == "user" and e.type is EventType.MESSAGE]


def test_scripted_user_traits_change_what_it_does(tmp_path):
    plain, plain_events = _play(tmp_path)
    assert plain.end_reason == "finished" and len(plain.outcome) >= 6

    impatient, _ = _play(tmp_path, "impatient")
    assert impatient.end_reason == "finished"
    assert len(impatient.outcome) < len(plain.outcome)  # finished before the list was long
    assert impatient.scores["performance"] < plain.scores["performance"]

    _, terse_events = _play(tmp_path, "terse")
    assert len(_user_messages(terse_events)[0]) < len(_user_messages(plain_events)[0])

    _, confused_events = _play(tmp_path, "confused")
    assert "what do you need from me" in _user_messages(confused_events)[0]

    _, sceptical_events = _play(tmp_path, "sceptical")
    assert [e.actor for e in sceptical_events if e.type is EventType.CONFIRM_REJECT] == ["user"]
    assert not any(e.type is EventType.CONFIRM_REJECT for e in plain_events)

    forgetful, forgetful_events = _play(tmp_path, "forgetful")
    assert "I will add the headlamp myself" in _user_messages(forgetful_events)[0]
    assert not [e for e in forgetful_events if e.actor == "user" and e.type is EventType.ACTION]
    assert forgetful.end_reason == "finished"


def test_eval_run_gives_a_batch_user_traits(tmp_path):
    runner = CliRunner()
    out = tmp_path / "run"
    result = runner.invoke(main, ["eval", "run", "--task", "todo", "--team", "example",
                                  "--instances", "0", "--out", str(out), "--no-progress",
                                  "--user-traits", "impatient"])
    assert result.exit_code == 0, result.output
    bad = runner.invoke(main, ["eval", "run", "--task", "todo", "--team", "example",
                               "--instances", "0", "--out", str(tmp_path / "r2"),
                               "--no-progress", "--user-traits", "grumpy"])
    assert bad.exit_code != 0 and "known traits" in bad.output
    session = json.loads(next(out.rglob("session.json")).read_text())
    assert session["scores"]["performance"] < 1.0  # the impatient user finished early
