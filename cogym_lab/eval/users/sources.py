"""What a session's simulated user was given, read back from its results directory.

The audit of a simulated user needs three things besides the log: which members were simulated
users, the hidden information each was given, and the instructions it followed.

* **Hidden information.** Nothing in ``session.json`` holds it (it must never reach an agent).
  The surest source is what the user was actually shown: its LM call log
  (``<role>/lm_calls.jsonl``) holds each prompt, and the hidden information sits in the system
  prompt between the fixed headings of the user's context template
  (``cogym_lab/users/prompts/context.md``). Those headings are found by rendering the template
  itself, so a reworded template keeps working. A user without a call log (a rule-based user,
  or a log deleted) gets the task's ``hidden_information()``, with the env rebuilt from the
  session's task and arguments when this machine can build it (it may need the task's data).
* **Instructions.** Again from the call log: the first instruction of each kind the user was
  given (choosing a move, answering, giving feedback, taking an action), as sent.
* **Facts.** The task's structured hidden information (:meth:`CoEnv.hidden_facts`), from the
  rebuilt env; empty when the task declares none or cannot be built here.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from cogym_lab.core.env import CoEnv
from cogym_lab.core.hidden_facts import HiddenFacts
from cogym_lab.prompts import render
from cogym_lab.records.trajectory import SessionRecord

log = logging.getLogger(__name__)

#: The value in the user's context template that carries its hidden information.
HIDDEN_SLOT = "hidden_information"
_CONTEXT_SLOTS = ("role", "teammates", "task_description", HIDDEN_SLOT, "observation", "chat",
                  "own_history")
INSTRUCTION_CHARS = 6000  # all instructions together, for the reviewer's prompt


@dataclass(frozen=True)
class TaskFacts:
    """What the rebuilt env says: its description and structured hidden facts."""

    description: str = ""
    facts: HiddenFacts = field(default_factory=HiddenFacts)
    built: bool = False


def _env(task: str, env_args_json: str) -> CoEnv | None:
    """The task's env rebuilt from the session's arguments (not kept: only what is read from
    it is cached), or ``None`` when this machine cannot build it."""
    from cogym_lab.envs import make_env

    try:
        return make_env(task, **json.loads(env_args_json))
    except Exception as error:  # noqa: BLE001 - no data on this machine, an unknown task
        log.info("cannot rebuild %s to read its hidden information: %s", task, error)
        return None


@cache
def _task_facts(task: str, env_args_json: str) -> TaskFacts:
    env = _env(task, env_args_json)
    if env is None:
        return TaskFacts()
    try:
        return TaskFacts(env.task_description, env.hidden_facts(), built=True)
    except Exception as error:  # noqa: BLE001 - a task's own code: one session, not the audit
        log.info("%s: no hidden facts: %s", task, error)
        return TaskFacts()


def task_facts(record: SessionRecord) -> TaskFacts:
    """The session's task as this machine can rebuild it (empty when it cannot)."""
    return _task_facts(record.task, json.dumps(record.env_args, sort_keys=True))


@cache
def _task_hidden(task: str, env_args_json: str) -> str | None:
    """The rebuilt env's hidden information, asked only when no call log holds it (a task may
    need slow work for it, such as opening a search index)."""
    env = _env(task, env_args_json)
    try:
        return env.hidden_information() if env is not None else None
    except Exception as error:  # noqa: BLE001 - as above
        log.info("%s: no hidden information: %s", task, error)
        return None


def simulated_users(record: SessionRecord) -> list[str]:
    """The roles of the session's simulated users (kind ``user``), in team order."""
    return [member.role for member in record.team if member.kind == "user"]


@cache
def _context_markers() -> tuple[str, str]:
    """The fixed template text just before and just after the hidden information."""
    sentinels = {name: f"\x00{name}\x00" for name in _CONTEXT_SLOTS}
    text = render("cogym_lab.users", "context", **sentinels)
    start = text.index(sentinels[HIDDEN_SLOT])
    end = start + len(sentinels[HIDDEN_SLOT])
    before = max((text.index(s) + len(s) for s in sentinels.values()
                  if text.index(s) + len(s) <= start), default=0)
    after = min((text.index(s) for s in sentinels.values() if text.index(s) >= end),
                default=len(text))
    return text[before:start], text[end:after]


def _system_prompts(record: SessionRecord, role: str) -> list[str]:
    prompts = []
    for call in record.members.get(role, {}).get("calls", []):
        for message in call.get("messages") or []:
            if isinstance(message, dict) and message.get("role") == "system" \
                    and isinstance(message.get("content"), str):
                prompts.append(message["content"])
    return prompts


def logged_hidden_information(record: SessionRecord, role: str) -> str | None:
    """The hidden information in ``role``'s logged prompts, or ``None`` when none holds it."""
    before, after = _context_markers()
    for prompt in _system_prompts(record, role):
        start = prompt.find(before)
        if start < 0:
            continue
        start += len(before)
        end = prompt.find(after, start)
        return (prompt[start:end] if end >= 0 else prompt[start:]).strip()
    return None


def hidden_information(record: SessionRecord, role: str) -> tuple[str, str]:
    """``(text, source)``: what ``role`` was given as hidden information, and where it was read
    (``"call log"``, ``"task"`` or ``"unknown"``)."""
    logged = logged_hidden_information(record, role)
    if logged is not None:
        return logged, "call log"
    rebuilt = _task_hidden(record.task, json.dumps(record.env_args, sort_keys=True))
    if rebuilt is not None:
        return rebuilt, "task"
    return "", "unknown"


def instructions(record: SessionRecord, role: str) -> str:
    """The instructions ``role`` followed: the first prompt of each purpose in its call log."""
    seen: dict[str, str] = {}
    for call in record.members.get(role, {}).get("calls", []):
        purpose = str(call.get("purpose") or "")
        messages = [m for m in call.get("messages") or [] if isinstance(m, dict)]
        asked = [m.get("content") for m in messages if m.get("role") == "user"]
        if purpose and purpose not in seen and asked and isinstance(asked[0], str):
            seen[purpose] = asked[0]
    text = "\n\n".join(f"## When asked to {purpose}\n{body}" for purpose, body in seen.items())
    if len(text) > INSTRUCTION_CHARS:
        text = text[:INSTRUCTION_CHARS] + " … [cut]"
    return text


def user_model(record: SessionRecord, roles: list[str] | None = None) -> str:
    """The simulated users' LM (``-`` for rule-based ones), from their usage or call log."""
    models: list[str] = []
    for role in roles if roles is not None else simulated_users(record):
        files: dict[str, Any] = record.members.get(role, {})
        model = (files.get("usage") or {}).get("model") or next(
            (c.get("model") for c in files.get("calls", []) if c.get("model")), None)
        if model and str(model) not in models:
            models.append(str(model))
    return ",".join(models) or "-"
