"""Reading a numbered choice from an LM's reply (``Choice: 2``, ``Decision: 3``), strictly.

The whole number is read: ``42`` is forty-two, never 4. A reply is usable only when the first line
of the field holds exactly one whole number (repeated is fine: ``3 (option 3)``) and that number
is on the menu. Everything else, ``42`` on a menu of four, ``4 or 5``, ``five``, ``1.5`` or
nothing at all, raises :class:`UnusableChoice`, whose message says what was wrong in words the LM
can act on when it is asked once more.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cogym_lab.errors import CogymError

# A number standing on its own: not inside a word ("3rd", "v2"), a decimal ("1.5") or a range
# written "1-3" (read as 1 and 3, which are two numbers). A full stop after it ("3.") is fine.
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w)")


class UnusableChoice(CogymError, ValueError):
    """The reply named no option of the menu, or more than one."""


def menu_text(options: Sequence[int]) -> str:
    """``[1, 2, 3]`` -> "1, 2 or 3"."""
    names = [str(option) for option in options]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def read_choice(value: str | None, options: Sequence[int], field: str = "Choice") -> int:
    """The option that the first line of ``value`` (the text after ``field:``) names.

    Raises :class:`UnusableChoice` when it names none of ``options``, several, or a number that
    is not one of them.
    """
    allowed = menu_text(options)
    if value is None or not value.strip():
        raise UnusableChoice(f"there is no '{field}:' line with a number ({allowed})")
    line = value.strip().splitlines()[0].strip()
    found = _NUMBER.findall(line)
    if not found:
        raise UnusableChoice(f"'{field}: {line[:60]}' names no option; answer with one "
                             f"number: {allowed}")
    if any("." in number for number in found):
        raise UnusableChoice(f"'{field}: {line[:60]}' is not a whole number; answer with "
                             f"one number: {allowed}")
    numbers = {int(number) for number in found}
    if len(numbers) > 1:
        raise UnusableChoice(f"'{field}: {line[:60]}' names several options; choose exactly "
                             f"one: {allowed}")
    (number,) = numbers
    if number not in options:
        raise UnusableChoice(f"{number} is not an option; answer with one number: {allowed}")
    return number


__all__ = ["UnusableChoice", "menu_text", "read_choice"]
