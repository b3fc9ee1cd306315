"""The team file's options of an ``acp`` member, read and checked.

::

    [members.agent]
    type = "acp"
    [members.agent.options]
    command = "claude-code-acp"          # the agent's executable (on PATH, or a path)
    args = []                            # its arguments
    env = { CLAUDE_CODE_MAX_OUTPUT_TOKENS = "8000" }  # set in its environment, as given
    pass_env = ["ANTHROPIC_API_KEY"]     # copied from the session's environment, by name
    cwd = "/some/empty/folder"           # its working directory (default: a fresh empty one)
    permissions = "reject"               # its own file edits and commands: "reject" or "allow"
    mcp_transport = "auto"               # how it reaches the seat: "auto", "http" or "stdio"
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

#: What the agent's permission requests for anything but the seat's tools get.
PermissionPolicy = Literal["reject", "allow"]
#: How the agent reaches the seat's MCP server.
Transport = Literal["auto", "http", "stdio"]

_KNOWN = ("command", "args", "env", "pass_env", "cwd", "permissions", "mcp_transport",
          "start_timeout", "settle_seconds")


@dataclass(frozen=True)
class AcpOptions:
    """An ``acp`` member's options (see the module docstring). ``start_timeout``: seconds the
    agent has to answer ``initialize`` and ``session/new``; ``settle_seconds``: how long news is
    gathered after it first arrives before it is sent as one prompt."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    pass_env: tuple[str, ...] = ()
    cwd: str | None = None
    permissions: PermissionPolicy = "reject"
    mcp_transport: Transport = "auto"
    start_timeout: float = 120.0
    settle_seconds: float = 0.3

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> AcpOptions:
        """The options of a team file's table; ``ValueError`` saying which one is wrong."""
        unknown = sorted(set(options) - set(_KNOWN))
        if unknown:
            raise ValueError(f"An acp member has no option {', '.join(map(repr, unknown))}; its "
                             f"options are {', '.join(_KNOWN)}.")
        command = options.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ValueError('An acp member needs `command`, the agent\'s executable (e.g. '
                             'command = "claude-code-acp").')
        args = options.get("args", [])
        if not isinstance(args, list | tuple) or not all(isinstance(a, str) for a in args):
            raise ValueError("An acp member's `args` is a list of strings.")
        env = options.get("env", {})
        if not isinstance(env, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise ValueError("An acp member's `env` is a table of strings (NAME = \"value\").")
        pass_env = options.get("pass_env", [])
        if not isinstance(pass_env, list | tuple) or not all(isinstance(n, str) for n in pass_env):
            raise ValueError("An acp member's `pass_env` is a list of environment variable "
                             "names.")
        cwd = options.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ValueError("An acp member's `cwd` is a folder's path.")
        permissions = options.get("permissions", "reject")
        if permissions not in ("reject", "allow"):
            raise ValueError(f'An acp member\'s `permissions` is "reject" or "allow"; got '
                             f"{permissions!r}.")
        transport = options.get("mcp_transport", "auto")
        if transport not in ("auto", "http", "stdio"):
            raise ValueError(f'An acp member\'s `mcp_transport` is "auto", "http" or "stdio"; '
                             f"got {transport!r}.")
        numbers = {}
        for name in ("start_timeout", "settle_seconds"):
            value = options.get(name, getattr(cls, name))
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"An acp member's `{name}` is a number of seconds.")
            numbers[name] = float(value)
        return cls(command=command, args=tuple(args), env=dict(env), pass_env=tuple(pass_env),
                   cwd=cwd, permissions=cast(PermissionPolicy, permissions),
                   mcp_transport=cast(Transport, transport), **numbers)


__all__ = ["AcpOptions", "PermissionPolicy", "Transport"]
