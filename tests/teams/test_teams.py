"""Team files, building teams, and running LM teams from the command line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cogym_lab.agents import AutonomousAgent, CollaborativeAgent, PlanningAgent
from cogym_lab.cli.main import main
from cogym_lab.envs import make_env
from cogym_lab.envs.todo import ExampleAgent
from cogym_lab.lm import LMNotConfigured
from cogym_lab.members import (
    MEMBERS_GROUP,
    MemberSetup,
    MemberType,
    member_type_names,
    register_member,
    unregister_member,
)
from cogym_lab.teams import load_team, ready_teams
from cogym_lab.teams.build import build_team
from cogym_lab.testing import ScriptedOpenAIServer
from cogym_lab.users import SimulatedUser
from tests.support.lm_scripts import TodoRolePlay

pytestmark = pytest.mark.usefixtures("no_ambient_lm")


AGENT_CLASSES = {"autonomous": AutonomousAgent, "collaborative": CollaborativeAgent,
                 "collaborative-planning": PlanningAgent}


@pytest.mark.parametrize("name", ["collaborative", "collaborative-planning"])
def test_collaborative_teams_pair_the_agent_with_a_simulated_user_who_may_act(name):
    team = load_team(name)
    assert team.members["agent"].type == name and team.members["user"].type == "simulated"
    env = make_env("todo", instance=1)
    members, kinds = build_team(team, env, {"*": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}})
    assert isinstance(members["agent"], AGENT_CLASSES[name])
    assert isinstance(members["user"], SimulatedUser)
    assert members["user"].hidden_information == env.hidden_information()
    # As in the Co-Gym release, the simulated user may take task actions itself.
    assert members["user"].persona.lazy and members["user"].persona.proactive_action
    assert kinds == {"agent": "agent", "user": "user"}
    assert {"autonomous", "collaborative", "collaborative-planning", "example"} <= set(ready_teams())


def test_the_autonomous_team_is_the_agent_alone():
    team = load_team("autonomous")
    assert list(team.members) == ["agent"] and team.members["agent"].type == "autonomous"
    members, kinds = build_team(team, make_env("todo", instance=1),
                                {"*": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}})
    assert isinstance(members["agent"], AutonomousAgent) and kinds == {"agent": "agent"}


def test_each_member_can_use_a_different_model(tmp_path):
    path = tmp_path / "mixed.toml"
    path.write_text('''
name = "mixed"
[members.agent]
type = "collaborative"
[members.agent.lm]
model = "big-model"
base_url = "http://127.0.0.1:9/v1"
[members.user]
kind = "user"
type = "simulated"
[members.user.lm]
model = "small-model"
base_url = "http://127.0.0.1:9/v1"
temperature = 0.7
''')
    members, _ = build_team(load_team(path), make_env("todo"))
    assert members["agent"].lm.config.model == "big-model"
    assert members["user"].lm.config.model == "small-model"
    assert members["user"].lm.config.temperature == 0.7 and members["agent"].lm.config.temperature == 0
    # arguments beat the environment, which beats the file
    members, _ = build_team(load_team(path), make_env("todo"), {"user": {"model": "from-args"}})
    assert members["user"].lm.config.model == "from-args"


def test_environment_variables_configure_members(monkeypatch):
    monkeypatch.setenv("COGYM_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    members, _ = build_team(load_team("collaborative"), make_env("todo"))
    assert members["agent"].lm.config.model == "env-model"
    assert members["agent"].lm.config.api_key.get_secret_value() == "sk-env"


def test_without_an_lm_creating_an_agent_says_exactly_what_to_set():
    with pytest.raises(LMNotConfigured) as caught:
        build_team(load_team("collaborative-planning"), make_env("todo"))
    message = str(caught.value)
    for needed in ("COGYM_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "agent"):
        assert needed in message
    result = CliRunner().invoke(main, ["run", "--team", "collaborative", "--quiet"])
    assert result.exit_code == 1 and "COGYM_MODEL" in result.output


def test_the_example_team_needs_no_lm():
    members, _ = build_team(load_team("example"), make_env("todo"))
    assert isinstance(members["agent"], ExampleAgent)


def test_bad_team_files_get_clear_errors(tmp_path):
    runner = CliRunner()
    bad_type = tmp_path / "bad.toml"
    bad_type.write_text('name = "bad"\n[members.agent]\ntype = "genius"\n')
    result = runner.invoke(main, ["run", "--team", str(bad_type)])
    assert result.exit_code == 2 and "'genius' is not a registered member type" in result.output
    person = tmp_path / "person.toml"
    person.write_text('name = "p"\n[members.me]\nkind = "person"\n[members.agent]\n'
                      'type = "example-agent"\n')
    result = runner.invoke(main, ["run", "--team", str(person)])
    assert result.exit_code == 2 and "must be a person" in result.output
    broken = tmp_path / "broken.toml"
    broken.write_text("name = \n")
    assert "Cannot read team" in runner.invoke(main, ["run", "--team", str(broken)]).output
    assert runner.invoke(main, ["run", "--task", "todo", "--team", "example",
                                "--instance", "1", "--quiet"]).exit_code == 0


def test_run_an_lm_team_from_the_command_line(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cli-SECRET0123456789abcdef")
    with ScriptedOpenAIServer(responder=TodoRolePlay()) as server:
        result = CliRunner().invoke(main, [
            "run", "--task", "todo", "--instance", "0", "--team", "collaborative-planning",
            "--model", "agent=agent-lm", "--model", "user=user-lm", "--base-url", server.base_url,
            "--out", str(tmp_path), "--idle-seconds", "2"])
        models = {body["model"] for body in server.bodies}
    assert result.exit_code == 0, result.output
    assert "ended: finished" in result.output and "Delivered: True" in result.output
    assert models == {"agent-lm", "user-lm"}
    (session,) = tmp_path.iterdir()
    for role in ("agent", "user"):
        log = (session / role / "lm_calls.jsonl").read_text()
        assert log and "SECRET0123456789" not in log
        assert json.loads(log.splitlines()[0])["model"] == f"{role}-lm"
    meta = json.loads((session / "session.json").read_text())
    assert meta["env_args"]["must_have"] == ["rain jacket", "headlamp"]


def test_a_gguf_model_path_selects_the_local_provider():
    from cogym_lab.lm import LMConfig

    assert LMConfig(model="models/tiny.gguf").provider == "local"
    assert LMConfig.resolve(arguments={"model": "/m/x.GGUF"}).provider == "local"
    assert LMConfig(model="x.gguf", provider="openai").provider == "openai"
    assert LMConfig(model="gpt-4o").provider == "openai"


def test_the_tasks_tools_get_the_sessions_lm_settings(tmp_path, monkeypatch, use_shared_data):
    """Drafting assistants, judges and plan parsers use what the flags, the environment and the
    team file say, in that order; ``tools`` names them alone."""
    from cogym_lab.envs.related_work import RelatedWorkEnv
    from cogym_lab.teams.build import attach_tool_lms, tool_lm_config

    for name in ("COGYM_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    team = load_team("collaborative")
    assert tool_lm_config(team).model is None  # nothing set anywhere: no tool LM
    flags = {"*": {"model": "every-lm", "base_url": "http://127.0.0.1:9/v1"}}
    assert tool_lm_config(team, flags).model == "every-lm"
    assert tool_lm_config(team, {**flags, "tools": {"model": "judge-lm"}}).model == "judge-lm"
    monkeypatch.setenv("COGYM_MODEL", "env-lm")
    assert tool_lm_config(team, flags).model == "every-lm"  # flags win over the environment
    assert tool_lm_config(team).model == "env-lm"
    monkeypatch.delenv("COGYM_MODEL")

    path = tmp_path / "team.toml"
    path.write_text('name = "t"\n[members.agent]\ntype = "collaborative"\n'
                    '[members.agent.lm]\nmodel = "agent-lm"\nbase_url = "http://127.0.0.1:9/v1"\n')
    assert tool_lm_config(load_team(path)).model == "agent-lm"  # the team's main model
    path.write_text(path.read_text() + '[tools.lm]\nmodel = "tool-lm"\n'
                    'base_url = "http://127.0.0.1:9/v1"\n')
    assert tool_lm_config(load_team(path)).model == "tool-lm"

    env = make_env("related_work", instance=0, index_limit=50)
    attached = attach_tool_lms(env, tool_lm_config(load_team(path)))
    assert set(attached) == {"drafting_lm", "judge_lm"}
    assert env.drafting_lm.config.model == env.judge_lm.config.model == "tool-lm"
    assert env.drafting_lm is not env.judge_lm  # each tool meters its own calls
    assert isinstance(env, RelatedWorkEnv)


class Recorder:
    """A member of a test's own: records what its factory was given."""

    def __init__(self, setup: MemberSetup) -> None:
        self.setup = setup
        self.options = dict(setup.options)

    def start(self, context): pass

    async def act(self, notification): return None

    def end(self, final): pass


RECORDER = MemberType(name="recorder", kind="agent", uses_lm=False, build=Recorder)
RECORDING_USER = MemberType(name="recording-user", kind="user", uses_lm=False, build=Recorder)


def _team_naming(tmp_path, member_type: str, options: str = "", kind: str = "") -> object:
    path = tmp_path / "team.toml"
    kind_line = f'kind = "{kind}"\n' if kind else ""
    path.write_text(f'name = "t"\n[members.agent]\n{kind_line}type = "{member_type}"\n'
                    f'[members.agent.options]\n{options}')
    return load_team(path)


def test_a_team_file_cannot_name_code_that_nobody_registered(tmp_path):
    marker = tmp_path / "ran"
    for member_type in ("os:system", "subprocess:run", "builtins:eval",
                        f"{__name__}:Recorder", "cogym_lab.envs.todo:TodoEnv",
                        "cogym_lab.envs.todo:ExampleAgent"):
        team = _team_naming(tmp_path, member_type, f'args = ["touch", "{marker}"]\n')
        with pytest.raises(ValueError, match="is not a registered member type") as refused:
            build_team(team, make_env("todo"))
        assert "example-agent" in str(refused.value)  # the message lists what is allowed
    assert not marker.exists()
    members, _ = build_team(_team_naming(tmp_path, "example-agent"), make_env("todo"))
    assert isinstance(members["agent"], ExampleAgent)


def test_a_member_factory_gets_its_role_the_public_task_its_lm_and_hidden_info_if_a_user(
        tmp_path):
    env = make_env("todo", instance=1)
    register_member(RECORDER)
    register_member(RECORDING_USER)
    try:
        path = tmp_path / "team.toml"
        path.write_text('name = "t"\n[members.helper]\ntype = "recorder"\n'
                        '[members.helper.options]\nspeed = 3\n'
                        '[members.fan]\ntype = "recording-user"\n')
        members, kinds = build_team(load_team(path), env)
    finally:
        unregister_member("recorder")
        unregister_member("recording-user")
    helper, fan = members["helper"].setup, members["fan"].setup
    assert kinds == {"helper": "agent", "fan": "user"}  # declared once, by the registration
    assert (helper.role, dict(helper.options), helper.lm) == ("helper", {"speed": 3}, None)
    assert helper.task.description == env.task_description
    assert [s.name for s in helper.task.action_specs] == [s.name for s in env.action_specs()]
    assert helper.hidden_information is None  # an agent never gets the hidden information
    assert fan.hidden_information == env.hidden_information()
    assert not hasattr(helper, "env")  # nor the env itself


def test_a_kind_the_team_file_gives_must_agree_with_the_registration(tmp_path):
    with pytest.raises(ValueError, match="registered as 'agent'"):
        build_team(_team_naming(tmp_path, "collaborative", kind="user"), make_env("todo"))
    with pytest.raises(ValueError, match="registered type, or kind"):
        load_team(_write(tmp_path, 'name = "t"\n[members.agent]\nkind = "agent"\n'))
    with pytest.raises(ValueError, match="a person seat has no type"):
        load_team(_write(tmp_path, 'name = "t"\n[members.me]\nkind = "person"\n'
                                   'type = "collaborative"\n'))


def _write(tmp_path, text: str):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    return path


def test_member_types_are_registered_in_code_or_by_entry_points(tmp_path, monkeypatch):
    register_member(RECORDER)
    try:
        members, _ = build_team(_team_naming(tmp_path, "recorder", "speed = 3\n"),
                                make_env("todo"))
        assert isinstance(members["agent"], Recorder) and members["agent"].options == {
            "speed": 3}
    finally:
        unregister_member("recorder")
    with pytest.raises(ValueError, match="built-in member type"):
        register_member(MemberType(name="simulated", kind="user", build=Recorder))
    register_member(f"{__name__}:Recorder", name="not-a-type")
    try:
        with pytest.raises(TypeError, match="not a cogym_lab.core.member.MemberType"):
            build_team(_team_naming(tmp_path, "not-a-type"), make_env("todo"))
    finally:
        unregister_member("not-a-type")

    # An installed package's entry point: a real distribution's metadata on sys.path.
    info = tmp_path / "site" / "cogym_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cogym-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{MEMBERS_GROUP}]\nplugin-recorder = "
                                           f"{__name__}:RECORDER\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert "plugin-recorder" in member_type_names()
    members, _ = build_team(_team_naming(tmp_path, "plugin-recorder"), make_env("todo"))
    assert isinstance(members["agent"], Recorder)


def test_a_server_loads_registered_team_names_never_paths(tmp_path):
    from cogym_lab.teams.config import load_registered_team

    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\n[members.agent]\ntype = "example-agent"\n')
    assert load_registered_team("example").name == "example"
    assert load_registered_team("mine", {"mine": str(path)}).name == "mine"
    for name in (str(path), "../mine.toml", "example.toml", 3):
        with pytest.raises(FileNotFoundError, match="paths are not accepted"):
            load_registered_team(name, {"mine": str(path)})
    assert load_team(path).name == "mine"  # the command line still takes a path
