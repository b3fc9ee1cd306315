"""Options the ``cogym-lab`` commands share, and how they become a :class:`SessionSpec`.

``run``, ``node`` and ``eval run`` take the same task, team, LM and protocol options; this module
reads them into a spec, and turns a :class:`SessionBuildError` into an error that points at the
option at fault.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from pydantic import ValidationError

from cogym_lab.core.protocol import DEFAULT_PROTOCOL, PROTOCOLS
from cogym_lab.envs.registry import EXAMPLE_TASK
from cogym_lab.sessions import EVERY_LM, SessionBuildError, SessionSpec
from cogym_lab.teams.config import TeamConfig, load_team

#: What may stand before ``=`` in ``--model ROLE=MODEL``: a role's name (or ``tools``).
ROLE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
Command = TypeVar("Command", bound=Callable[..., Any])

#: The option that sets each spec field, for error messages.
OPTION_OF_FIELD = {"task": "--task", "instance": "--instance", "env_args": "--env-arg",
                   "team": "--team", "lm": "--model/--base-url", "protocol": "--protocol",
                   "limits": "--timeout/--idle-seconds", "people": "--team",
                   "notebook": "--spec"}


def parse_pairs(pairs: tuple[str, ...], what: str) -> dict[str, str]:
    """``KEY=VALUE`` pairs as a dict; a pair without ``=`` is an error naming ``what``."""
    parsed = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint=what)
        parsed[key] = value
    return parsed


def env_args(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``--env-arg k=v``: values are JSON when they parse as JSON, text otherwise."""
    args: dict[str, Any] = {}
    for key, value in parse_pairs(pairs, "--env-arg").items():
        try:
            args[key] = json.loads(value)
        except ValueError:
            args[key] = value
    return args


def lm_settings(models: tuple[str, ...], base_urls: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """``--model gpt-4o`` for every LM (members and the task's tools), ``--model
    user=gpt-4o-mini`` for one member, ``--model tools=gpt-4o`` for the task's tools only.
    What comes before ``=`` is a role only when it looks like one (a URL's query does not)."""
    settings: dict[str, dict[str, str]] = {}
    for key, values in (("model", models), ("base_url", base_urls)):
        for value in values:
            role, sep, rest = value.partition("=")
            named = sep and ROLE.fullmatch(role)
            target, setting = (role, rest) if named else (EVERY_LM, value)
            settings.setdefault(target, {})[key] = setting
    return settings


def make_spec(**fields: Any) -> SessionSpec:
    """A spec from options; a value the spec refuses is a usage error naming its option."""
    try:
        return SessionSpec.model_validate(fields)
    except ValidationError as error:
        problem = error.errors()[0]
        field = str(problem["loc"][0]) if problem["loc"] else "task"
        raise click.BadParameter(f"{problem['msg']} (got {problem.get('input')!r})",
                                 param_hint=OPTION_OF_FIELD.get(field, field)) from None


def read_spec(path: Path) -> SessionSpec:
    """The spec in a file: a bare spec, or a ``session.json`` that stores one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise click.BadParameter(f"cannot read {path}: {error}", param_hint="--spec") from None
    if isinstance(data, dict) and "session_id" in data:
        if "spec" not in data:
            raise click.BadParameter(f"{path} is a session.json from before sessions stored "
                                     "their spec; give the options instead", param_hint="--spec")
        data = data["spec"]
    try:
        return SessionSpec.model_validate(data)
    except ValidationError as error:
        raise click.BadParameter(f"{path} is not a session spec: {error}",
                                 param_hint="--spec") from None


def load_team_option(name: str) -> TeamConfig:
    """The team ``--team`` names (a ready team or a file), or a usage error saying why not."""
    try:
        return load_team(name)
    except FileNotFoundError as error:
        raise click.BadParameter(str(error), param_hint="--team") from None
    except ValueError as error:  # TOML or schema errors
        raise click.BadParameter(f"cannot read team {name!r}: {error}",
                                 param_hint="--team") from None


def build_failed(error: SessionBuildError) -> click.ClickException:
    """The CLI's form of a build error: a usage error on the option at fault, or, for an LM
    that is not configured (which no option of this command made wrong), a plain error."""
    if error.field == "lm":
        return click.ClickException(error.message)
    return click.BadParameter(error.message, param_hint=OPTION_OF_FIELD.get(error.field))


def task_options(func: Command) -> Command:
    func = click.option("--env-arg", multiple=True, metavar="KEY=VALUE",
                        help="Argument for the task, on top of the instance.")(func)
    func = click.option("--instance", type=click.IntRange(min=0), default=None,
                        help="Instance number of the task (default: the task's defaults).")(func)
    return click.option("--task", default=EXAMPLE_TASK, show_default=True,
                        help="Task to run (see `tasks`).")(func)


def lm_options_saying(model_help: str, base_url_help: str) -> Callable[[Command], Command]:
    """The ``--model [ROLE=]MODEL`` and ``--base-url [ROLE=]URL`` options (read by
    :func:`lm_settings`), with the command's own words for what they set."""

    def add(func: Command) -> Command:
        func = click.option("--base-url", "base_urls", multiple=True, metavar="[ROLE=]URL",
                            help=base_url_help)(func)
        return click.option("--model", "models", multiple=True, metavar="[ROLE=]MODEL",
                            help=model_help)(func)

    return add


#: The LM options of the commands that run sessions.
lm_options = lm_options_saying(
    "Model for every LM (members and the task's tools), or for ROLE (repeatable; 'tools' for "
    "the task's tools).",
    "OpenAI-compatible endpoint for every LM, or for ROLE ('tools': the task's drafting "
    "assistant, judges and parsers).")


def protocol_option(func: Command) -> Command:
    return click.option("--protocol", type=click.Choice(sorted(PROTOCOLS)),
                        default=DEFAULT_PROTOCOL, show_default=True,
                        help="Scoring protocol: 'cogym' counts and scores as the Co-Gym "
                             "release's code does (steps, delivery, controlled autonomy, task "
                             "scores; docs/evaluation.md names each rule and where it differs); "
                             "'cogym_lab' is this project's own.")(func)
