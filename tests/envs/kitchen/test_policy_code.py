"""The restricted code-as-policy reader: LM text becomes FSM tasks without ever being run.

Hostile text (imports, attribute access, dunders, huge and deep expressions, NUL, lone
surrogates, U+2028, a megabyte) is refused with a reason; preconditions are evaluated by walking
their tree with a step budget; and, for any text or any expression hypothesis makes up,
reading and evaluating either works or fails with the module's own errors, never another.
"""

from __future__ import annotations

import contextlib
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cogym_lab.envs.kitchen.agents.policy_code import (
    MAX_TASKS,
    STEP_BUDGET,
    PolicyRejected,
    PolicyRuntimeError,
    compile_precondition,
    extract_tasks_text,
    parse_assigned_tasks,
    read_macro,
)
from cogym_lab.envs.kitchen.policies.fsm import ActionTask, OrderTask

STATE: dict[str, Any] = {
    "objects": {("Beef", "Well-cooked"): 1, ("Beef", "In-progress"): 2,
                ("Lettuce", "Chopped"): 0, ("Plate", "Empty"): 3},
    "counters": {"Empty": 20},
    "orders": [{"name": "BeefBurger", "remain_time": 30},
               {"name": "LettuceBurger", "remain_time": 90}],
    "inventory_other_player": {"user": ("Plate", "Empty")},
    "inventory_self": None,
    "score": 15,
    "time_left": 300,
}


def holds(body: str, state: dict[str, Any] = STATE) -> bool:
    return compile_precondition(f"lambda json_state: {body}")(state)


# -- what a policy may say ----------------------------------------------------------------------

def test_the_papers_form_reads_as_tasks() -> None:
    text = """[
        ("lambda json_state: json_state['objects'][('Beef', 'Well-cooked')] + "
         "json_state['objects'][('Beef', 'In-progress')] < 4",
         ("prepare", {"food": "Beef", "plate": True})),
        (lambda s: len(s['orders']) > 1 and s['orders'][0]['name'] == 'BeefBurger',
         ("serve", {"food": "BeefBurger"})),
        ("lambda json_state: True", ("putout_fire", {})),
        "LettuceBurger",
    ]"""
    tasks = parse_assigned_tasks(text)
    assert [type(t) for t in tasks] == [ActionTask, ActionTask, ActionTask, OrderTask]
    first, second, third, order = tasks
    assert isinstance(first, ActionTask) and isinstance(second, ActionTask)
    assert isinstance(third, ActionTask) and isinstance(order, OrderTask)
    assert first.action == 'PREPARE(food="Beef", plate=true)'
    assert first.precondition(STATE) is True
    assert second.action == 'SERVE(food="BeefBurger")' and second.precondition(STATE) is True
    assert third.action == "PUT_OUT_FIRE()"
    assert order.dish == "LettuceBurger"


@pytest.mark.parametrize(("action", "expected"), [
    ('("pass_on", {"thing": "Plate", "thing_status": "Empty"})', 'PASS_ON(thing="Plate", '
                                                                 'thing_status="")'),
    ('{"action": "assemble", "args": {"food": "BeefLettuceBurger"}}',
     'ASSEMBLE(food="BeefLettuceBurger")'),
    ('"clean_a_counter"', "CLEAN_A_COUNTER()"),
    ("'PREPARE(food=\"Lettuce\", plate=false)'", 'PREPARE(food="Lettuce", plate=false)'),
    ('("prepare", {"food": "Bread", "plate": true})', 'PREPARE(food="Bread", plate=true)'),
])
def test_actions_are_read_in_every_usual_spelling(action: str, expected: str) -> None:
    (task,) = parse_assigned_tasks(f"[(lambda s: True, {action})]")
    assert isinstance(task, ActionTask) and task.action == expected


def test_a_task_may_be_a_dict_and_an_empty_list_assigns_nothing() -> None:
    (task,) = parse_assigned_tasks('[{"precondition": "lambda s: s[\'score\'] >= 0", '
                                   '"action": ("serve", {"food": "LettuceBurger"})}]')
    assert isinstance(task, ActionTask) and task.precondition(STATE)
    assert parse_assigned_tasks("[]") == []


def test_the_tasks_are_found_in_a_reply() -> None:
    reply = "```text\nServe first.\n```\nThen:\n```json\n[\"BeefBurger\"]\n```"
    assert extract_tasks_text(reply) == '["BeefBurger"]'
    assert extract_tasks_text('Tasks: ["BeefBurger"] done') == '["BeefBurger"]'
    with pytest.raises(PolicyRejected, match="no list"):
        extract_tasks_text("Things are going well")


@pytest.mark.parametrize(("body", "expected"), [
    ("json_state['objects'][('Beef', 'Well-cooked')] >= 1", True),
    ("json_state['objects'][('Plate', 'Empty')] * 2 - 1 == 5", True),
    ("not json_state['inventory_self'] is None", False),
    ("json_state['inventory_other_player']['user'] == ('Plate', 'Empty')", True),
    ("'BeefBurger' in [json_state['orders'][0]['name'], json_state['orders'][1]['name']]", True),
    ("min(json_state['orders'][0]['remain_time'], 100) // 7 % 4 == 0", True),
    ("max([1, 2, 3]) == 3 and sum((1, 2)) == 3 and abs(-2) == 2", True),
    ("any([False, json_state['score'] > 10]) and not all([True, False])", True),
    ("len(json_state['orders']) == 2 and len({'a': 1}) == 1", True),
    ("1 if json_state['time_left'] > 100 else 0", True),
    ("json_state['score'] / 2 > 7.4 and -json_state['score'] < 0 and +1", True),
    ("false or null or true", True),
    ("1 < 2 < 3 > 2", True),
])
def test_preconditions_are_evaluated_by_walking_the_tree(body: str, expected: bool) -> None:
    assert holds(body) is expected


@pytest.mark.parametrize("body", [
    "json_state['objects'][('Fish', 'Raw')] > 0",  # a key that is not there
    "json_state['orders'][7]",  # past the end
    "json_state['score'] / 0",
    "'a' < 1",
    "json_state['orders'] * 3",  # no list repetition
    "'ab' * 99999",  # no string repetition
    "len(3)",
    "sum(json_state['objects'])",
    "min([])",
    "999999999999 * 999999999999 > 0",  # grows past the bound
    "{[1]: 2}",  # an unhashable key
    "json_state['score'][0]",
])
def test_a_precondition_that_cannot_be_evaluated_raises_its_own_error(body: str) -> None:
    precondition = compile_precondition(f"lambda json_state: {body}")
    with pytest.raises(PolicyRuntimeError):
        precondition(STATE)


def test_the_step_budget_stops_a_long_evaluation() -> None:
    items = ", ".join(["1"] * 900)
    precondition = compile_precondition(f"lambda s: sum([{items}]) + sum([{items}]) > 0")
    with pytest.raises(PolicyRuntimeError, match=str(STEP_BUDGET)):
        precondition(STATE)


# -- what a policy may not say ------------------------------------------------------------------

HOSTILE = [
    ("[(lambda s: __import__('os').system('id'), ('putout_fire', {}))]", "__import__|attribute"),
    ("[(lambda s: s.__class__, ('putout_fire', {}))]", "attribute"),
    ("[(lambda s: open('/etc/passwd'), ('putout_fire', {}))]", "'open'"),
    ("[(lambda s: eval('1'), ('putout_fire', {}))]", "'eval'"),
    ("[(lambda s: __builtins__, ('putout_fire', {}))]", "__builtins__"),
    ("[(lambda s: (lambda: 1)(), ('putout_fire', {}))]", "lambda|calls"),
    ("[(lambda s: 2 ** 99999999, ('putout_fire', {}))]", r"\*\*"),
    ("[(lambda s: s[1:2], ('putout_fire', {}))]", "slice"),
    ("[(lambda s: f'{s}', ('putout_fire', {}))]", "f-string"),
    ("[(lambda s: len(*s), ('putout_fire', {}))]", "Starred"),
    ("[(lambda s: max(s, key=len), ('putout_fire', {}))]", "keyword"),
    ("[(lambda s, t: True, ('putout_fire', {}))]", "one parameter"),
    ("[(lambda __x: True, ('putout_fire', {}))]", "cannot name"),
    ("[(lambda s: 10**100 > 1, ('putout_fire', {}))]", r"\*\*"),
    ("[(lambda s: 99999999999999999999, ('putout_fire', {}))]", "larger"),
    ("[(lambda s: True, ('__import__', {'name': 'os'}))]", "not a macro"),
    ("[(lambda s: True, ('prepare', {'food': 'Fish'}))]", "not a valid food"),
    ("[(lambda s: True, ('prepare', {'food': 'Beef', 'plate': 'yes'}))]", "True or False"),
    ("[(lambda s: True, ('serve', {}))]", "needs 'food'"),
    ("[(lambda s: True, ('serve', {'food': 'BeefBurger', 'x': 1}))]", "takes no 'x'"),
    ("[(lambda s: True, ('prepare', {'food': __import__('os')}))]", "plain value"),
    ("['Pizza']", "not an order name"),
    ("['lambda s: True']", "not an order name"),
    ("[(1, 2, 3)]", "expected an order name"),
    ("import os", "not valid syntax"),
    ("__import__('os').system('id')", "must be a list"),
    ("{'a': 1}", "must be a list"),
    ("[('lambda s: True; import os', ('putout_fire', {}))]", "not valid syntax"),
    ("[('lambda s: __import__(\"os\")', ('putout_fire', {}))]", "'__import__'"),
    ("[(lambda s: True, 'PREPARE(**{\"food\": \"Beef\"})')]", r"\*\*|NAME"),
]


@pytest.mark.parametrize(("text", "reason"), HOSTILE)
def test_hostile_policies_are_refused_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(PolicyRejected, match=reason):
        parse_assigned_tasks(text)


@pytest.mark.parametrize(("text", "reason"), [
    ("[" * 500 + "]" * 500, "nests"),
    ("[(lambda s: " + "(" * 200 + "1" + ")" * 200 + ", ('putout_fire', {}))]", "nests"),
    ("[(lambda s: " + "not " * 2000 + "True, ('putout_fire', {}))]", "nests|parsed"),
    ("[(lambda s: " + " + ".join(["1"] * 3000) + " > 0, ('putout_fire', {}))]",
     "large|nests|deep|parsed|characters"),
    ("[" + ", ".join(['"BeefBurger"'] * (MAX_TASKS + 1)) + "]", "tasks"),
    ("['" + "x" * 1_000_000 + "']", "characters long"),
    ("['BeefBurger\x00']", "NUL"),
    ("['Beef\ud800Burger']", "Unicode"),
    ("[\u2028'BeefBurger']", "syntax"),
    ("[(lambda s: '" + "y" * 500 + "' == 'y', ('putout_fire', {}))]", "string of 500"),
])
def test_oversized_and_malformed_text_is_refused(text: str, reason: str) -> None:
    with pytest.raises(PolicyRejected, match=reason):
        parse_assigned_tasks(text)


def test_a_line_separator_inside_a_string_is_just_a_character() -> None:
    (task,) = parse_assigned_tasks("[(lambda s: s['score'] != 'a\u2028b', ('putout_fire', {}))]")
    assert isinstance(task, ActionTask) and task.precondition(STATE)


def test_text_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(PolicyRejected, match="text"):
        parse_assigned_tasks(b"['BeefBurger']")  # type: ignore[arg-type]


# -- the act agent's macro --------------------------------------------------------------------

@pytest.mark.parametrize(("reply", "expected"), [
    ('```json\n{"action": "prepare", "args": {"food": "Beef", "plate": false}}\n```',
     'PREPARE(food="Beef", plate=false)'),
    ('I will serve. {"action": "serve", "args": {"food": "LettuceBurger"}}',
     'SERVE(food="LettuceBurger")'),
    ('```\n("putout_fire", {})\n```', "PUT_OUT_FIRE()"),
    ('PASS_ON(thing="Plate")', 'PASS_ON(thing="Plate")'),
])
def test_the_act_agents_reply_gives_one_macro(reply: str, expected: str) -> None:
    assert read_macro(reply) == expected


@pytest.mark.parametrize("reply", [
    "I am not sure.", '{"action": "__import__"}', '{"action": "prepare", "args": {"food": 1}}',
    '(__import__("os"), {})', "```json\n" + "[" * 100 + "\n```"])
def test_a_reply_without_a_usable_macro_is_refused(reply: str) -> None:
    with pytest.raises(PolicyRejected):
        read_macro(reply)


# -- properties ----------------------------------------------------------------------------------

POLICY_ALPHABET = string.printable + "\x00\u2028\ufffd\ud800é"


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=POLICY_ALPHABET, max_size=300))
def test_any_text_reads_or_is_refused_never_anything_else(text: str) -> None:
    try:
        tasks = parse_assigned_tasks(text)
    except PolicyRejected as problem:
        assert problem.reason
        return
    for task in tasks:
        if isinstance(task, ActionTask):
            with contextlib.suppress(PolicyRuntimeError):
                task.precondition(STATE)


NAMES = st.sampled_from(["s", "s['score']", "s['orders']", "s['objects']", "s['counters']",
                         "s['objects'][('Beef', 'Well-cooked')]", "s['orders'][0]",
                         "s['orders'][0]['remain_time']", "s['inventory_self']"])
LEAVES = st.one_of(NAMES, st.integers(-1000, 1000).map(str), st.sampled_from(
    ["True", "False", "None", "'BeefBurger'", "('Plate', 'Empty')", "[]", "[1, 2]", "{}",
     "2.5"]))


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.tuples(children, st.sampled_from(
        ["+", "-", "*", "/", "//", "%", "<", "<=", "==", "!=", ">", "in", "not in", "and",
         "or"]), children).map(lambda t: f"({t[0]} {t[1]} {t[2]})")
    unary = st.tuples(st.sampled_from(["not ", "-"]), children).map(lambda t: f"({t[0]}{t[1]})")
    calls = st.tuples(st.sampled_from(["len", "min", "max", "sum", "any", "all", "abs"]),
                      children).map(lambda t: f"{t[0]}({t[1]})")
    lists = st.lists(children, max_size=3).map(lambda items: "[" + ", ".join(items) + "]")
    pick = st.tuples(children, children, children).map(lambda t: f"({t[0]} if {t[1]} else "
                                                                  f"{t[2]})")
    index = st.tuples(children, children).map(lambda t: f"{t[0]}[{t[1]}]")
    return st.one_of(binary, unary, calls, lists, pick, index)


EXPRESSIONS = st.recursive(LEAVES, _combine, max_leaves=25)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(EXPRESSIONS)
def test_any_whitelisted_expression_evaluates_or_fails_cleanly(body: str) -> None:
    try:
        precondition = compile_precondition(f"lambda s: {body}")
    except PolicyRejected:
        return  # too deep or too large for the bounds: refused before evaluation
    try:
        result = precondition(STATE)
    except PolicyRuntimeError:
        return
    assert isinstance(result, bool)
