"""A task's tool LMs while a logged action is re-applied.

An action that starts slow work with a tool LM (``LIBRARY_TO_DRAFT`` asks the drafting
assistant) first checks that the tool has an LM, and refuses at once when it has none. The
session may have had one that the process replaying its log has not: given with ``--model
tools=...``, say, and not in the environment. Replay never calls the tool (the work's result is
applied from the log), so the answer to "was there an LM?" is the log's: an action logged as
having started deferred work had one. For that step only, an empty tool slot holds a stand-in
that never answers, and the step replays as it ran. An action logged as refused gets no
stand-in, so it is refused again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cogym_lab.core.messages import Event, EventType
from cogym_lab.lm import LM, LMConfig
from cogym_lab.lm.base import AttemptFailed, Messages, Usage

#: Suffix of an env's tool LM slots (``drafting_lm``, ``judge_lm``, ``parser_lm``).
SLOT_SUFFIX = "_lm"


class ReplayStandInLM(LM):
    """Fills a tool slot while a logged step is re-applied; asked anything, it fails at once
    (work left unfinished by the log, run again on resume, then fails in plain words)."""

    def __init__(self) -> None:
        super().__init__(LMConfig(model="the session's tool model (not available on replay)",
                                  max_retries=0))

    async def _attempt(self, messages: Messages, max_tokens: int | None,
                       stop: list[str] | None) -> tuple[str, Usage]:
        raise AttemptFailed("the session's tool model is not set up in this process",
                            "it is not set up here", final=True, kind="not_configured")


def _ambient_lm_set() -> bool:
    """Whether the environment configures an LM (``COGYM_MODEL`` ...): the tool then uses it,
    as it would have in the session."""
    try:
        config = LMConfig.resolve()
    except ValueError:
        return False
    return bool(config.model)


@contextmanager
def tools_as_logged(env: Any, event: Event) -> Iterator[None]:
    """While ``event`` is re-applied to ``env``: stand-ins in its empty tool slots when the log
    says the action started deferred work, else nothing changes."""
    started_work = event.type is EventType.ACTION and bool(event.info.get("deferred"))
    empty = [slot for slot, value in vars(env).items()
             if slot.endswith(SLOT_SUFFIX) and value is None] if started_work else []
    if not empty or _ambient_lm_set():
        yield
        return
    stand_in = ReplayStandInLM()
    for slot in empty:
        setattr(env, slot, stand_in)
    try:
        yield
    finally:
        for slot in empty:
            setattr(env, slot, None)


__all__ = ["ReplayStandInLM", "tools_as_logged"]
