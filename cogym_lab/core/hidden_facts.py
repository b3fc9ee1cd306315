"""A task's hidden information in checkable form (:meth:`CoEnv.hidden_facts`).

The hidden information a simulated user gets is prose. Some of it states facts a program can
hold a user's messages to: an amount ("a budget of $1,900"), a count ("two people"), things
the person will not do without. A task that knows these facts declares them, and the
simulated-user audit (``cogym_lab.eval.users.checks``) reports a user who says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HiddenQuantity:
    """A number the hidden information fixes, and the words a sentence names it by.

    ``words`` are nouns such as ``("people", "travellers")``: a count is read where a number
    stands right before one of them ("2 people", "two adult travellers"). With ``money``, the
    quantity is an amount of money, read in any sentence that uses one of ``words`` ("my
    budget is $1,900").
    """

    name: str
    value: float
    words: tuple[str, ...]
    money: bool = False


@dataclass(frozen=True)
class HiddenFacts:
    """What the hidden information states in checkable form; empty by default."""

    quantities: tuple[HiddenQuantity, ...] = ()
    required: tuple[str, ...] = ()  # things the person insists on having, as the task names them

    def __bool__(self) -> bool:
        return bool(self.quantities or self.required)
