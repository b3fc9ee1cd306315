"""Hypothesis strategies for what members may send: hostile text, forged roles, every act.

Shared by the stateful property tests of the coordinator and of the env node.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from cogym_lab.core import Action

#: Texts that broke a log, a replay or a transport once: lone surrogates (as a JSON escape such
#: as ``\ud83d`` in an LM reply leaves them), a pair written as two escapes, Unicode line breaks
#: that ``str.splitlines`` splits on, NUL, markup, and long texts.
NASTY = ["\ud83d", "\udc00", "\ud83d\ude00", "a\ud800b", "\u2028", "\u2029", "\x85", "\x00",
         "\r", "\n", "<script>alert(1)</script>", "</div>", "\ufffd", "\x1b[31m", "'\"",
         "x" * 3000, "é" * 500, "🙂"]

def weighted(*options: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of ``options``, each drawn ``weight`` times as often as a weight of one (``one_of``
    flattens nested choices into equal ones, so repeating a strategy there weighs nothing)."""
    choices = [strategy for weight, strategy in options for _ in range(weight)]
    return st.integers(0, len(choices) - 1).flatmap(lambda index: choices[index])


hostile_text = st.one_of(
    st.sampled_from(NASTY),
    st.text(max_size=30),
    # Any code point, surrogates included (st.text leaves them out by default).
    st.text(st.characters(codec=None, exclude_categories=()), max_size=12),
    st.lists(st.sampled_from(NASTY), min_size=1, max_size=3).map("".join),
)


def forged_roles(team: list[str]) -> st.SearchStrategy[Any]:
    """A member's role most of the time; else something that is not one: an unknown name, a
    list, an int..."""
    forged = st.one_of(
        st.sampled_from(["intruder", "", "agent\ud83d", "USER", "user "]),
        st.lists(st.sampled_from(team), max_size=2),
        st.integers(-3, 3), st.none(), st.just({"role": team[0]}), st.just(("agent",)),
    )
    return weighted((4, st.sampled_from(team)), (1, forged))


def _call(name: str, **args: Any) -> str:
    inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    return f"{name}({inner})"


def task_actions(text: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """NotesEnv's actions in every form a member may send them."""
    note = st.one_of(text, text.map(lambda t: "!" + t))  # "!" asks for a confirmation
    prompt = st.one_of(text, text.map(lambda t: "wait " + t), text.map(lambda t: "fail " + t))
    return st.one_of(
        note.map(lambda n: _call("POST", note=n)),
        note.map(lambda n: {"name": "POST", "args": {"note": n}}),
        note.map(lambda n: Action(name="POST", args={"note": n})),
        text.map(lambda t: _call("WRITE", text=t)),
        text.map(lambda t: {"name": "WRITE", "args": {"text": t}}),
        text.map(lambda t: _call("JOT", note=t)),
        prompt.map(lambda p: _call("DRAFT", prompt=p)),
        text.map(lambda t: _call("RECORD", line=t)),  # internal: a member is refused
        text.map(lambda t: f"Thought: {t}\nAction: POST(note='{t}')"),  # an LM's loose reply
    )


def collaboration_acts(team: list[str], text: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """Messages, waits, confirmations (real and forged ids), pauses and resumes."""
    anyone = st.one_of(st.none(), st.sampled_from([*team, "intruder"]))
    request_id = st.sampled_from(["c1", "c2", "c3", "c9", ""])
    return st.one_of(
        st.tuples(text, anyone).map(lambda m: _call("SEND_TEAMMATE_MESSAGE", message=m[0],
                                                     **({"to": m[1]} if m[1] else {}))),
        st.just("WAIT_TEAMMATE_CONTINUE()"),
        text.map(lambda t: _call("REQUEST_TEAMMATE_CONFIRM", pending_action=_call("POST",
                                                                                  note=t))),
        request_id.map(lambda r: _call("ACCEPT_CONFIRMATION", request_id=r)),
        request_id.map(lambda r: _call("REJECT_CONFIRMATION", request_id=r)),
        anyone.map(lambda a: _call("PAUSE_AGENT", **({"agent": a} if a else {}))),
        anyone.map(lambda a: _call("RESUME_AGENT", **({"agent": a} if a else {}))),
    )


def malformed_actions(text: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """What is not an action at all, or only looks like one."""
    return st.one_of(
        text,
        # ``args`` as a string: OpenAI tool calls send JSON text; here it is an action string.
        text.map(lambda t: {"name": "POST", "args": _call("POST", note=t)}),
        text.map(lambda t: {"name": "POST", "args": json.dumps({"note": t})}),
        text.map(lambda t: {"name": "POST", "arguments": json.dumps({"note": t})}),
        text.map(lambda t: {"action": _call("POST", note=t)}),
        text.map(lambda t: [_call("POST", note=t)]),
        st.just({"name": "POST", "args": {"note": ("a", "b")}}),  # a tuple: not JSON as such
        st.just({"name": "POST", "args": {"note": {1, 2}}}),  # a set: JSON cannot hold it
        st.just({"name": ["POST"], "args": {}}),
        st.integers(), st.none(), st.floats(allow_nan=True),
        st.just({"name": "POST", "args": {"note": "x", "extra": 1}}),
        st.just("POST(note="), st.just("FINISH(now=true)"),
    )


def member_inputs(team: list[str]) -> st.SearchStrategy[Any]:
    text = hostile_text
    return weighted((4, task_actions(text)), (3, collaboration_acts(team, text)),
                    (1, malformed_actions(text)))
