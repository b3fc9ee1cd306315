"""Traits of a simulated user: named ways a simulated person departs from the cooperative
default, so a study (or an evaluation) can ask how a team copes with harder people.

Each trait adds a short paragraph to the LM simulated user's prompt (``prompts/trait_*.md``, in
the context every one of its calls sees), and rule-based users that implement it change their
behaviour (the todo task's ``example-user``: see its docstring). A team file picks traits per
member (``traits = ["impatient", "terse"]`` in the member's options), ``cogym-lab eval run
--user-traits`` for a whole batch, and a study design per condition (``simulated_traits``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cogym_lab.errors import CogymError
from cogym_lab.prompts import render


@dataclass(frozen=True)
class Trait:
    """A named trait and what it means, in one line (``prompts/trait_NAME.md`` holds the
    paragraph the LM simulated user is given)."""

    name: str
    summary: str


TRAITS: dict[str, Trait] = {trait.name: trait for trait in (
    Trait("impatient", "wants it over soon: finishes or stops the agent sooner than it should"),
    Trait("terse", "writes as little as it can: short messages, no explanations"),
    Trait("confused", "is unsure what the agent needs from it and asks what is going on"),
    Trait("sceptical", "doubts the agent: turns down its first request for approval"),
    Trait("forgetful", "says it will do something itself, then does not"),
)}


class UnknownTrait(CogymError, ValueError):
    """A trait nobody defined; the message lists the known ones."""


def check_traits(names: Iterable[str] | str | None) -> tuple[str, ...]:
    """``names`` as known trait names, in order, each once. A string is split on commas
    (``"impatient,terse"``); an unknown name raises :class:`UnknownTrait` listing the known."""
    if names is None:
        return ()
    if isinstance(names, str):
        names = names.split(",")
    if not isinstance(names, Iterable):
        raise UnknownTrait(f"traits must be a list of names, not {type(names).__name__}")
    found: list[str] = []
    for raw in names:
        if not isinstance(raw, str):
            raise UnknownTrait(f"a trait is a name, not {raw!r}; known traits: {known()}")
        name = raw.strip().lower()
        if not name:
            continue
        if name not in TRAITS:
            raise UnknownTrait(f"unknown trait {raw.strip()!r}; known traits: {known()}")
        if name not in found:
            found.append(name)
    return tuple(found)


def known() -> str:
    """The known traits, comma-separated, for messages."""
    return ", ".join(TRAITS)


def traits_prompt(traits: Iterable[str]) -> str:
    """The paragraphs the LM simulated user is given for ``traits`` ("" for none)."""
    names = check_traits(list(traits))
    if not names:
        return ""
    paragraphs = [render("cogym_lab.users", f"trait_{name}") for name in names]
    return "# How you behave in this session\n" + "\n\n".join(paragraphs)


__all__ = ["TRAITS", "Trait", "UnknownTrait", "check_traits", "known", "traits_prompt"]
