"""What a person writes to the Co-Gym persona, read into one command.

    start TASK [INSTANCE] [team NAME] [as ROLE] [outside ROLE[,ROLE...]]
    join SESSION_ID [as ROLE]
    list
    help

Words are split as a shell would (quotes keep spaces); ``@Name`` mentions are dropped.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from cogym_lab.errors import CogymError

#: What ``help`` (and a message the persona cannot read) answers with.
USAGE = """\
I start and join Co-Gym sessions hosted by this Jupyter server. Write:

- `start TASK [INSTANCE] [team NAME] [as ROLE] [outside ROLE]`: a new session; you take the \
`ROLE` seat (default `user`), and an `outside` seat is left for an agent you connect over MCP
- `join SESSION_ID [as ROLE]`: how to open a session you created or hold a seat of
- `list`: your sessions
- `help`: this
"""


def usage() -> str:
    """:data:`USAGE` with this installation's tasks, the first of them as the example."""
    from cogym_lab.envs.registry import available_envs

    tasks = sorted(available_envs())
    if not tasks:
        return USAGE
    first = tasks[0]
    return (f"{USAGE}\nTasks here: {', '.join(tasks)}. For example `start {first}`, "
            f"`start {first} 3`, `start {first} outside agent`.")

_MENTION = re.compile(r"(?<!\S)@\S+")
_ROLE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")  # RoleName's pattern


class CommandError(CogymError, ValueError):
    """A message the persona cannot read as a command; its text says what was wrong."""


@dataclass(frozen=True)
class Start:
    task: str
    instance: int | None = None
    team: str | None = None
    seat: str = "user"
    outside: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Join:
    session_id: str
    seat: str | None = None


@dataclass(frozen=True)
class ListSessions:
    pass


@dataclass(frozen=True)
class Help:
    pass


Command = Start | Join | ListSessions | Help


def read_command(text: str) -> Command:
    """The command ``text`` asks for; :class:`CommandError` when it asks for none."""
    try:
        words = shlex.split(_MENTION.sub(" ", text))
    except ValueError as error:  # an unclosed quote
        raise CommandError(f"I could not read that ({error}).") from None
    if not words:
        return Help()
    verb, rest = words[0].lower(), words[1:]
    if verb in ("help", "?"):
        return Help()
    if verb in ("list", "sessions"):
        return ListSessions()
    if verb in ("start", "new"):
        return _start(rest)
    if verb in ("join", "attach", "open"):
        return _join(rest)
    raise CommandError(f"I do not know {words[0]!r}.")


def _start(words: list[str]) -> Start:
    if not words:
        raise CommandError("`start` needs a task: `start TASK` (`help` lists the tasks).")
    task, rest = words[0], words[1:]
    instance: int | None = None
    if rest and rest[0].isdigit():
        instance, rest = int(rest[0]), rest[1:]
    options = _options(rest, ("team", "as", "outside"))
    outside = tuple(role for part in options.get("outside", "").split(",")
                    for role in [part.strip()] if role)
    seat = _role(options.get("as", "user"))
    for role in outside:
        _role(role)
    if seat in outside:
        raise CommandError(f"Seat {seat!r} cannot be both yours and an outside agent's.")
    return Start(task=task, instance=instance, team=options.get("team"), seat=seat,
                 outside=outside)


def _join(words: list[str]) -> Join:
    if not words:
        raise CommandError("`join` needs a session id (`list` shows yours).")
    options = _options(words[1:], ("as",))
    seat = options.get("as")
    return Join(session_id=words[0], seat=_role(seat) if seat is not None else None)


def _options(words: list[str], names: tuple[str, ...]) -> dict[str, str]:
    """``NAME VALUE`` pairs, each name at most once."""
    found: dict[str, str] = {}
    index = 0
    while index < len(words):
        name = words[index].lower()
        if name not in names:
            raise CommandError(f"I did not expect {words[index]!r} there.")
        if index + 1 >= len(words):
            raise CommandError(f"`{name}` needs a value.")
        if name in found:
            raise CommandError(f"`{name}` is given twice.")
        found[name] = words[index + 1]
        index += 2
    return found


def _role(role: str) -> str:
    if not _ROLE.match(role):
        raise CommandError(f"{role!r} is not a seat's name (letters, digits, _, . and -).")
    return role
