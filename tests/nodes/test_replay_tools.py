"""The tool slots of an env while a logged step is re-applied: a stand-in only for a step the
log says started deferred work, only in an empty slot, only while no LM is set up around, and
gone afterwards; asked anything, it fails at once."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from cogym_lab.core.messages import Event, EventType
from cogym_lab.lm import LMError
from cogym_lab.lm.config import ENV_BASE_URL, ENV_MODEL
from cogym_lab.nodes.replay_tools import ReplayStandInLM, tools_as_logged

pytestmark = pytest.mark.usefixtures("no_ambient_lm")


@dataclass
class ToolEnv:
    drafting_lm: object | None = None
    judge_lm: object | None = None


def _event(kind: EventType, **info: object) -> Event:
    return Event(seq=4, time=0.0, type=kind, actor="agent", action="LIBRARY_TO_DRAFT()",
                 info=info)


def test_a_step_that_started_work_sees_a_stand_in_in_each_empty_slot_while_it_replays():
    kept = object()
    env = ToolEnv(judge_lm=kept)
    with tools_as_logged(env, _event(EventType.ACTION, deferred="Drafting")):
        assert isinstance(env.drafting_lm, ReplayStandInLM) and env.judge_lm is kept
        with pytest.raises(LMError, match="not set up"):
            asyncio.run(env.drafting_lm.complete([{"role": "user", "content": "draft"}]))
    assert env.drafting_lm is None and env.judge_lm is kept


def test_a_refused_step_and_an_ambient_lm_get_no_stand_in(monkeypatch):
    env = ToolEnv()
    for event in (_event(EventType.ERROR), _event(EventType.ACTION)):
        with tools_as_logged(env, event):
            assert env.drafting_lm is None  # refused in the session: refused again
    monkeypatch.setenv(ENV_MODEL, "tool-lm")
    monkeypatch.setenv(ENV_BASE_URL, "http://127.0.0.1:9/v1")
    with tools_as_logged(env, _event(EventType.ACTION, deferred="Drafting")):
        assert env.drafting_lm is None  # the env falls back to the configured LM, as it did
