"""``build_session(spec)``: the one place where a session is assembled from its spec.

The env (task, instance, env args, protocol), the team (its file, the people's seats), each
member (built by its registered type, with its LM), the task's own LMs, and the limits: every
entry point builds a session here, so each rule is written once and every problem is reported
the same way, as a :class:`SessionBuildError` naming the spec field at fault.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any

from cogym_lab.bus import Bus
from cogym_lab.core import CoEnv
from cogym_lab.core.messages import MemberKind
from cogym_lab.core.protocol import get_protocol
from cogym_lab.core.turns import refuse_clocked
from cogym_lab.datasets import DataSample, DatasetError, announce_once, data_dir, reading_from
from cogym_lab.envs import make_env
from cogym_lab.envs.registry import task_class
from cogym_lab.envs.task_data import DataSource, data_files, missing_data_message, sample_in_use
from cogym_lab.errors import CogymError
from cogym_lab.lm import LM, LMConfig, LMNotConfigured
from cogym_lab.members import UnknownMemberType
from cogym_lab.nodes.env_node import EventObserver
from cogym_lab.nodes.session import Session, SessionConfig
from cogym_lab.sessions.provenance import session_record
from cogym_lab.sessions.setup_guide import SetupGuide, missing_lm_reason
from cogym_lab.sessions.spec import EVERY_LM, TOOLS, SessionSpec
from cogym_lab.teams.build import attach_tool_lms, build_member, tool_lm_config
from cogym_lab.teams.config import MemberConfig, TeamConfig, load_team

TeamLoader = Callable[[str], TeamConfig]


class SessionBuildError(CogymError, ValueError):
    """A spec that cannot be built. ``field`` names the spec field at fault (``task``,
    ``instance``, ``env_args``, ``team``, ``people``, ``lm``, ``protocol``, ``limits``,
    ``notebook`` or ``data_dir``), so that each entry point can point at its own option;
    ``status`` is the HTTP status that fits (400 for a bad spec, 409 when this host cannot do
    what it asks, such as task data it does not have)."""

    def __init__(self, message: str, field: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.status = status


def build_session(spec: SessionSpec, *, session_id: str | None = None,
                  results_dir: str | Path | None = None, bus: Bus | None = None,
                  observers: Iterable[EventObserver] = (), remote: bool = False,
                  guides: bool = False, notebook: Any = None,
                  load_team: TeamLoader = load_team, outside: Collection[str] = ()) -> Session:
    """The session ``spec`` describes, ready to ``run()``.

    ``remote``: every member joins from another process (``cogym-lab node``), so none is built
    here. ``outside`` (beside ``spec.outside``): roles whose seat is taken from outside the
    team (an agent driving the seat over MCP): their member is not built, and the seat keeps
    the kind the team gives it, so an outside agent is limited, asked for confirmations and
    scored as an agent.
    ``guides``: a member whose LM is not configured becomes a :class:`SetupGuide` that says
    in the chat what to set, instead of an error (a hosted session). ``notebook``: the
    live link to the notebook ``spec.notebook`` names, which only a server can make.
    ``load_team`` reads ``spec.team`` when it is a name (a server passes one that refuses
    paths). Raises :class:`SessionBuildError`.

    The returned session carries the spec it was built from, resolved (``session.spec``: the
    default team filled in), the LMs it uses (``session.lms``: members' by role, the task's
    tools' as ``env.<slot>``), the roles given a guide (``session.guided``) and which data its
    task reads (``session.data_source``: ``"full"``; ``"sample"``, with the sample as
    ``session.data_sample``; ``None`` for a task that reads no dataset).
    """
    env_class = _task(spec.task)
    protocol = _protocol(spec.protocol)
    team = _team(spec, env_class, load_team)
    kinds = _kinds(team)
    outside = [*spec.outside, *(role for role in outside if role not in spec.outside)]
    _check_outside(team, outside)
    _check_lm_keys(spec, team)
    env = _env(spec, env_class, protocol, notebook, plans=team.plans)
    data_source, sample = _data_source(spec, env)
    members, guided = _members(spec, team, kinds, env, remote=remote, guides=guides,
                               outside=outside)
    tools = attach_tool_lms(env, tool_lm_config(team, spec.lm_arguments()))
    config = session_config(team, spec)
    try:  # said here, naming the option at fault, rather than as a coordinator's error
        refuse_clocked(config.interaction, spec.task, env.tick_seconds)
    except ValueError as error:
        raise SessionBuildError(str(error), "limits" if spec.limits.interaction else "team"
                                ) from None
    try:
        session = Session(env, members, kinds=kinds, bus=bus, results_dir=results_dir,
                          session_id=session_id, config=config, task=spec.task,
                          observers=observers)
    except ValueError as error:  # a role the env does not have, say
        raise SessionBuildError(str(error), "team") from None
    session.spec = spec.model_copy(update={"team": spec.team or team.name,
                                           "protocol": protocol})
    session.lms = {**{role: lm for role, member in members.items()
                      if isinstance(lm := getattr(member, "lm", None), LM)},
                   **{f"env.{slot}": lm for slot, lm in tools.items()}}
    session.guided = guided
    session.data_source, session.data_sample = data_source, sample
    session.team_config = team
    session.provenance_of = session_record
    return session


def build_one_member(spec: SessionSpec, role: str, *,
                     load_team: TeamLoader = load_team) -> tuple[Any, MemberKind]:
    """The member that plays ``role`` in the session ``spec`` describes, and its kind: for a
    member that runs in a process of its own (``cogym-lab node agent``). The env is built to
    learn what the task tells its members (and, for a simulated user, what it hides)."""
    env_class = _task(spec.task)
    protocol = _protocol(spec.protocol)
    team = _team(spec, env_class, load_team)
    kinds = _kinds(team)
    if role not in team.members or kinds[role] == "person":
        runnable = ", ".join(r for r, kind in kinds.items() if kind != "person") or "none"
        raise SessionBuildError(f"Team {team.name!r} has no member {role!r} to run here; its "
                                f"members are {runnable}.", "team")
    env = _env(spec, env_class, protocol, None, plans=team.plans)
    members, _ = _members(spec, team.model_copy(update={"members": {role: team.members[role]}}),
                          kinds, env, remote=False, guides=False)
    return members[role], kinds[role]


def session_config(team: TeamConfig, spec: SessionSpec) -> SessionConfig:
    """The team's ``[session]`` settings with the spec's limits on top."""
    try:
        return SessionConfig(**{**team.session, **spec.limits.overrides()})
    except (TypeError, ValueError) as error:  # a [session] setting that does not exist, or
        # a value it cannot take (an interaction other than "notifications" or "turns")
        raise SessionBuildError(f"Team {team.name!r} has a bad [session] table: {error}",
                                "team") from None


# -- the parts, each with its own error ---------------------------------------------------------

def _task(task: str) -> type[CoEnv]:
    from cogym_lab.envs import available_envs

    factory = task_class(task)
    if factory is None:
        raise SessionBuildError(f"Unknown task {task!r}. Available: "
                                f"{', '.join(available_envs())}.", "task")
    # A factory that is not a CoEnv class (a function) has the base class's declarations.
    return factory if isinstance(factory, type) and issubclass(factory, CoEnv) else CoEnv


def _protocol(name: str | None) -> str:
    try:
        return get_protocol(name).name
    except ValueError as error:
        raise SessionBuildError(str(error), "protocol") from None


def _team(spec: SessionSpec, env_class: type[CoEnv], load_team: TeamLoader) -> TeamConfig:
    """The team file, checked against the task, with the people's seats in it."""
    if isinstance(spec.team, TeamConfig):
        team = spec.team
    else:
        name = spec.team or env_class.default_team
        try:
            team = load_team(name)
        except FileNotFoundError as error:
            raise SessionBuildError(str(error), "team") from None
        except ValueError as error:  # TOML or schema errors
            raise SessionBuildError(f"Cannot read team {name!r}: {error}", "team") from None
    try:
        team.check_plays(spec.task)
    except ValueError as error:
        raise SessionBuildError(str(error), "team") from None
    members = dict(team.members)
    for role in spec.people:
        members[role] = MemberConfig(kind="person")
    return team.model_copy(update={"members": members})


def _check_outside(team: TeamConfig, outside: Collection[str]) -> None:
    """Each seat taken from outside must be a member of the team."""
    unknown = [role for role in outside if role not in team.members]
    if unknown:
        raise SessionBuildError(f"Team {team.name!r} has no member {', '.join(map(repr, unknown))}"
                                f"; its members are {', '.join(team.members)}.", "team")


def _check_lm_keys(spec: SessionSpec, team: TeamConfig) -> None:
    """LM settings go to every LM, to the task's tools, or to a member: a key that is none of
    these is a typo that would otherwise be ignored."""
    unknown = sorted(set(spec.lm) - {EVERY_LM, TOOLS, *team.members})
    if unknown:
        raise SessionBuildError(f"LM settings for {', '.join(map(repr, unknown))}, which is not "
                                f"a member of team {team.name!r} (give them for '*', 'tools' "
                                f"or one of {', '.join(team.members)}).", "lm")


def _kinds(team: TeamConfig) -> dict[str, MemberKind]:
    try:
        return team.kinds()
    except ValueError as error:  # an unknown member type, a contradictory kind
        raise SessionBuildError(str(error), "team") from None


def _takes_data_dir(task: str) -> bool:
    """Whether the task's factory takes a ``data_dir`` (a task that reads data)."""
    factory = task_class(task)
    try:
        return factory is not None and "data_dir" in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin or C callable: it documents no data_dir
        return False


def _env(spec: SessionSpec, env_class: type[CoEnv], protocol: str, notebook: Any, *,
         plans: bool = False) -> CoEnv:
    env_args = dict(spec.env_args)
    if plans:  # the team works through an interactive plan
        env_args["plans"] = True
    if spec.data_dir is not None and "data_dir" not in env_args and _takes_data_dir(spec.task):
        env_args["data_dir"] = spec.data_dir
    folder = env_args.get("data_dir") if isinstance(env_args.get("data_dir"), str) else None
    if spec.notebook is not None:
        if not env_class.runs_in_notebook:
            raise SessionBuildError(f"Task {spec.task!r} does not run in a notebook's kernel.",
                                    "notebook")
        if notebook is None:
            raise SessionBuildError("A session in a notebook needs the cogym_lab server "
                                    "extension running in the notebook's Jupyter server.",
                                    "notebook", status=409)
        env_args["notebook"] = notebook
    if spec.origin == "notebook":
        _quiet_sample_notice(spec.task, folder)
    try:
        # The loaders a task's instance list uses look the data directory up themselves: they
        # must find the session's folder too, not the builder's default.
        with reading_from(folder):
            return make_env(spec.task, instance=spec.instance, protocol=protocol, **env_args)
    except DatasetError as error:
        where = "notebook" if spec.origin == "notebook" else "command line"
        raise SessionBuildError(missing_data_message(spec.task, data_dir(folder), str(error),
                                                     where=where), "data_dir",
                                status=409) from None
    except KeyError as error:
        raise SessionBuildError(str(error.args[0]) if error.args else str(error),
                                "task") from None
    except IndexError as error:
        raise SessionBuildError(str(error), "instance") from None
    except (TypeError, ValueError) as error:
        raise SessionBuildError(f"Task {spec.task!r} cannot be made with these arguments: "
                                f"{error}", "env_args") from None


def _quiet_sample_notice(task: str, folder: str | None) -> None:
    """A session from a notebook says in the notebook that it reads the task's sample (with
    the notebook's own command, ``%cogym data download``): the notice its loader prints on
    stderr is kept back, or a kernel hosting the session would show it too, in command-line
    words."""
    with contextlib.suppress(KeyError):
        sample = sample_in_use(task, folder)
        if sample is not None:
            announce_once(sample, told_elsewhere=True)


def _data_source(spec: SessionSpec, env: CoEnv) -> tuple[DataSource | None, DataSample | None]:
    """Which data the session's task reads, decided here, in the process that builds it (its
    data directory is the one that counts): the sample that comes with the package when
    nobody chose a data directory and the default one lacks the task's files, else the full
    data; nothing for a task (or a person's own task) that reads no dataset."""
    if not getattr(env, "reads_dataset", False) or not data_files(spec.task):
        return None, None
    folder = getattr(env, "data_dir", None)  # the spec's, or the env args'
    sample = sample_in_use(spec.task, folder if isinstance(folder, str | Path) else None)
    return ("sample", sample) if sample is not None else ("full", None)


def _members(spec: SessionSpec, team: TeamConfig, kinds: dict[str, MemberKind], env: CoEnv, *,
             remote: bool, guides: bool, outside: Collection[str] = ()
             ) -> tuple[dict[str, Any], list[str]]:
    """Each role's member object (``None`` for a seat filled from elsewhere), and the roles
    that got a :class:`SetupGuide`."""
    members: dict[str, Any] = {}
    guided: list[str] = []
    for role, member in team.members.items():
        if member.is_person or remote or role in outside:
            members[role] = None
            continue
        try:
            members[role] = build_member(role, member, env, spec.lm_for(role))
        except LMNotConfigured as error:
            if not guides:
                raise SessionBuildError(str(error), "lm") from None
            members[role] = _guide(spec, role, member, kinds[role], str(error))
            guided.append(role)
        except UnknownMemberType as error:
            raise SessionBuildError(str(error), "team") from None
        except (TypeError, ValueError) as error:  # options the member type does not take
            raise SessionBuildError(f"Member {role!r} of team {team.name!r} cannot be built: "
                                    f"{error}", "team") from None
    return members, guided


def _guide(spec: SessionSpec, role: str, member: MemberConfig, kind: MemberKind,
           error: str) -> SetupGuide:
    """The guide that stands in for ``role``, whose LM is not configured: its advice fits
    where the spec came from (``%cogym config`` for a notebook)."""
    if spec.origin != "notebook":
        return SetupGuide(error, kind=kind)
    try:
        config = LMConfig.resolve(arguments=spec.lm_for(role), toml=member.lm)
    except ValueError:  # settings that do not even validate: the error's own words
        return SetupGuide(error, kind=kind)
    return SetupGuide(missing_lm_reason(role, config, error, spec.origin), kind=kind, hint="")


__all__ = ["TOOLS", "SessionBuildError", "build_one_member", "build_session", "session_config"]
