"""The example task's rule-based agent and user as member types (no LM)."""

from __future__ import annotations

import re

from cogym_lab.core.member import MemberSetup, MemberType
from cogym_lab.envs.todo.example_team import ExampleAgent, ExampleUser


def _build_user(setup: MemberSetup) -> ExampleUser:
    """The user insists on what the task's hidden information names, and wants as many items
    as the task asks for (unless the team file's options say otherwise)."""
    options = dict(setup.options)
    hidden = setup.hidden_information or ""
    if "must_have" not in options and ":" in hidden:
        named = hidden.split(":", 1)[1].strip(" .")
        options["must_have"] = [item.strip() for item in named.split(",") if item.strip()]
    asked = re.search(r"at least (\d+) items", setup.task.description)
    if "min_items" not in options and asked:
        options["min_items"] = int(asked.group(1))
    return ExampleUser(**options)


EXAMPLE_AGENT = MemberType(
    name="example-agent", kind="agent", uses_lm=False,
    build=lambda setup: ExampleAgent(**setup.options),
    summary="Rule-based agent of the todo task: searches, fills the list, asks before extras.")
EXAMPLE_USER = MemberType(
    name="example-user", kind="user", uses_lm=False, build=_build_user, takes_traits=True,
    summary="Rule-based user of the todo task: states its must-haves, approves, finishes.")
