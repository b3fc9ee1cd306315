"""The policy reader against the forms the DPT-Agent paper's prompts make models write: each
form it accepts is evaluated on a real game state (and gives the value Python would), and each
form that reaches outside the state is refused, each case a test of its own."""

from __future__ import annotations

from typing import Any

import pytest

from cogym_lab.envs.kitchen.agents.policy_code import (
    PolicyRejected,
    PolicyRuntimeError,
    compile_precondition,
    parse_assigned_tasks,
)
from cogym_lab.envs.kitchen.policies.situation import game_state
from tests.envs.kitchen.test_kitchen_partners import fresh

#: A game state as the FSM hands it to preconditions (LettuceBurger orders only, nothing made).
STATE: dict[str, Any] = game_state(fresh(seed=0), "agent")

ACCEPTED = {
    "dict .get with a default": "s['objects'].get(('Beef', 'Fresh'), 0) == 0",
    "dict .get without a default": "s['objects'].get(('Fish', 'Raw')) is None",
    "chained .get": "s.get('counters', {}).get('Empty', 0) > 0",
    ".items in a generator": "sum(n for (name, status), n in s['objects'].items() "
                             "if name == 'Beef') == 0",
    ".keys": "('Beef', 'Fresh') in s['objects'].keys()",
    ".values": "max(s['objects'].values()) >= 0",
    "list comprehension": "len([o for o in s['orders'] if o['name'] == 'LettuceBurger']) == "
                          "len(s['orders'])",
    "set comprehension": "{o['name'] for o in s['orders']} == {'LettuceBurger'}",
    "dict comprehension": "{o['name']: o['remain_time'] for o in s['orders']}"
                          "['LettuceBurger'] == 200",
    "generator in any": "any(o['remain_time'] < 300 for o in s['orders'])",
    "generator in all": "all(o['remain_time'] > 0 for o in s['orders'])",
    "generator in min": "min(o['remain_time'] for o in s['orders']) == 200",
    "nested comprehension": "sum(1 for o in s['orders'] for c in o['name'] if c == 'L') == "
                            "len(s['orders'])",
    "conditional expression": "(1 if s['time_left'] > 100 else 0) == 1",
    "set display": "s['orders'][0]['name'] in {'LettuceBurger', 'BeefBurger'}",
}

REFUSED = {
    "import": ("__import__('os').system('id')", "__import__|attribute"),
    "dunder attribute": ("s.__class__", "attribute"),
    "dunder through .get": ("s.get.__self__", "attribute"),
    "string method": ("s['orders'][0]['name'].upper() == 'X'", "dictionary methods"),
    "format escape": ("'{0.__class__}'.format(s)", "dictionary methods"),
    "attribute not called": ("s.keys", "attribute"),
    "exec": ("exec('1')", "'exec'"),
    "eval": ("eval('1')", "'eval'"),
    "open": ("open('x')", "'open'"),
    "getattr": ("getattr(s, 'x')", "'getattr'"),
    "nested lambda": ("(lambda: 1)()", "lambda"),
    "lambda in a comprehension": ("[(lambda: o) for o in s]", "lambda"),
    "walrus": ("[y := 1]", ":="),
    "private loop variable": ("[1 for __x in s]", "cannot name"),
    "loop variable shadowing a function": ("[1 for len in s]", "cannot name"),
    "attribute loop target": ("[1 for s.x in s]", "name or a tuple"),
    "keyword to .get": ("s.get(key='x')", "keyword"),
    "starred into .get": ("s.get(*s)", "Starred|starred"),
}


@pytest.mark.parametrize("body", ACCEPTED.values(), ids=list(ACCEPTED))
def test_the_reader_accepts_the_papers_forms(body: str) -> None:
    precondition = compile_precondition(f"lambda s: {body}")
    assert precondition(STATE) is True  # and every case is written to hold on STATE
    tasks = parse_assigned_tasks(f'[("lambda s: {body}", ("prepare", {{"food": "Beef"}}))]')
    assert tasks[0].precondition(STATE) is True


def test_an_accepted_form_holds_only_when_the_state_says_so() -> None:
    precondition = compile_precondition(
        "lambda s: any(o['name'] == 'BeefBurger' for o in s['orders'])")
    assert precondition(STATE) is False
    changed = {**STATE, "orders": [{"name": "BeefBurger", "remain_time": 10}]}
    assert precondition(changed) is True


@pytest.mark.parametrize(("body", "why"), REFUSED.values(), ids=list(REFUSED))
def test_the_reader_refuses_what_reaches_outside_the_state(body: str, why: str) -> None:
    with pytest.raises(PolicyRejected, match=why):
        compile_precondition(f"lambda s: {body}")


def test_a_dictionary_method_on_something_else_fails_when_evaluated() -> None:
    precondition = compile_precondition("lambda s: s['orders'].get(0) is None")
    with pytest.raises(PolicyRuntimeError, match="dictionary method"):
        precondition(STATE)


def test_a_loop_variable_is_unknown_outside_its_comprehension() -> None:
    precondition = compile_precondition("lambda s: [o for o in s['orders']] and o")
    with pytest.raises(PolicyRuntimeError, match="unknown name 'o'"):
        precondition(STATE)
