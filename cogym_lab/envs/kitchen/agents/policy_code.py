"""Code-as-policy, read safely: an LM's assigned tasks turned into FSM tasks without running
its text.

An LM writes a list of assigned tasks in Python-literal syntax::

    [("lambda json_state: json_state['objects'][('Beef', 'Well-cooked')] < 1",
      ("prepare", {"food": "Beef", "plate": False})),
     "BeefBurger"]

Nothing of it is ever given to ``eval``, ``exec`` or ``compile``. The text is parsed with
``ast.parse(mode="eval")`` and every node is checked against a small whitelist; a precondition
is evaluated by walking its tree here, with a step budget. Allowed in a precondition's body:

* constants (strings up to :data:`MAX_STRING` characters, numbers up to :data:`MAX_NUMBER`,
  booleans, ``None``; ``true``/``false``/``null`` are read as JSON's);
* the lambda's one parameter, by name; subscripts (``x[...]``);
* comparisons (``== != < <= > >= in not in is is not``), ``and``/``or``/``not``, ``x if c else
  y``, and arithmetic on numbers (``+ - * / // %``, unary ``-``/``+``);
* tuple, list, set and dict displays;
* calls of ``len``, ``min``, ``max``, ``sum``, ``any``, ``all``, ``abs``, positional arguments
  only;
* the dictionary methods the paper's policies use, ``.get(key)``, ``.get(key, default)``,
  ``.items()``, ``.keys()``, ``.values()``, on a dictionary of the state only (checked when
  evaluated);
* list, set and dict comprehensions and generator expressions (``any(n > 0 for n in ...)``),
  whose loop variables (plain names, or tuples of names) are known inside them only.

Everything else is refused: any other attribute (``__class__``, ``.format``, a method of a
string or list), any other name (``__import__``, ``open``, ``exec``, ``eval``, dunders), calls
of anything else, lambdas inside the body (nothing a policy needs, and a way to make
callables), ``**``, slices, f-strings, starred arguments, keyword arguments, walrus, async
comprehensions. The text, the node count and the nesting depth are bounded
before and after parsing. A refused policy raises :class:`PolicyRejected` saying why.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cogym_lab.core.actions import ActionError, ActionSpec
from cogym_lab.core.grammar import format_action, parse_action
from cogym_lab.core.text import is_clean
from cogym_lab.envs.kitchen.policies.fsm import ActionTask, AssignedTask, OrderTask, always
from cogym_lab.envs.kitchen.policies.situation import (
    BURGERS,
    FOODS,
    MACROS,
    STATUSES,
    THINGS,
    macro,
)
from cogym_lab.errors import CogymError

#: Characters of policy text read at most (a policy is a short list).
MAX_TEXT = 12_000
#: Nodes in the parsed policy, all tasks together.
MAX_NODES = 2_000
#: Nesting depth of the parsed tree, and of brackets before parsing.
MAX_DEPTH = 32
#: Tasks in one policy.
MAX_TASKS = 16
#: Characters of a string constant.
MAX_STRING = 200
#: Largest magnitude of a number, written or computed.
MAX_NUMBER = 10**12
#: Nodes one evaluation of a precondition may visit (builtins count their items).
STEP_BUDGET = 2_000


class PolicyRejected(CogymError, ValueError):
    """The policy text cannot be used; ``reason`` says why, in a line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PolicyRuntimeError(CogymError, RuntimeError):
    """A precondition could not be evaluated on this state (a missing key, a type mismatch,
    the step budget spent). The FSM treats it as a precondition that does not hold."""


# -- the whitelist --------------------------------------------------------------------------------

_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
_ARITHMETIC: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}
_JSON_NAMES = {"true": True, "false": False, "null": None}
_SAFE_CALLS = ("len", "min", "max", "sum", "any", "all", "abs")
#: Methods a precondition may call, on a dictionary (Mapping) of the state only.
_DICT_METHODS = ("get", "items", "keys", "values")
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: The node types a precondition may contain; anything else is refused.
_ALLOWED: tuple[type[ast.AST], ...] = (
    ast.Expression, ast.Lambda, ast.arguments, ast.arg, ast.Constant, ast.Name, ast.Load,
    ast.Subscript, ast.Tuple, ast.List, ast.Dict, ast.Compare, ast.BoolOp, ast.And, ast.Or,
    ast.UnaryOp, ast.Not, ast.USub, ast.UAdd, ast.BinOp, ast.IfExp, ast.Call,
    ast.Set, ast.Attribute, ast.comprehension, ast.Store, *_COMPREHENSIONS,
    *_COMPARE, *_ARITHMETIC,
)
_OPENERS, _CLOSERS = "([{", ")]}"


# -- reading the policy text --------------------------------------------------------------------

def extract_tasks_text(reply: str) -> str:
    """The assigned-tasks part of an LM reply: the last ``json`` (or ``python``) code block,
    else the last untagged code block that looks like a list, else the text from its first
    ``[`` to its last ``]``."""
    blocks = re.findall(r"```([A-Za-z]*)[ \t]*\n?(.*?)```", reply, flags=re.S)
    tagged = [body for tag, body in blocks if tag.lower() in ("json", "python", "py")]
    if tagged:
        return tagged[-1].strip()
    listed = [body for tag, body in blocks if not tag and body.strip().startswith("[")]
    if listed:
        return listed[-1].strip()
    start, end = reply.find("["), reply.rfind("]")
    if start == -1 or end < start:
        raise PolicyRejected("the reply holds no list of assigned tasks")
    return reply[start:end + 1]


def parse_assigned_tasks(text: str) -> list[AssignedTask]:
    """The tasks a policy text assigns. Raises :class:`PolicyRejected` saying why it cannot."""
    tree = _parse(text, "the policy")
    body = tree.body
    if not isinstance(body, ast.List | ast.Tuple):
        raise PolicyRejected(f"the policy must be a list of tasks, not {_kind(body)}")
    if len(body.elts) > MAX_TASKS:
        raise PolicyRejected(f"the policy has {len(body.elts)} tasks; at most {MAX_TASKS}")
    return [_task(element, index) for index, element in enumerate(body.elts, 1)]


def read_macro(reply: str) -> str:
    """The one macro action an LM reply names (the act agent's output), in canonical syntax:
    from a code block holding ``{"action": "prepare", "args": {...}}``, ``("prepare", {...})``
    or ``PREPARE(food="Beef")``, else from the reply's first such object. Raises
    :class:`PolicyRejected` saying why it names none."""
    blocks = re.findall(r"```[A-Za-z]*[ \t]*\n?(.*?)```", reply, flags=re.S)
    text = blocks[-1].strip() if blocks else reply.strip()
    if not blocks:
        start = min((i for i in (text.find("{"), text.find("(")) if i >= 0), default=-1)
        if start > 0 and not text[:start].strip().replace("_", "").isalpha():
            text = text[start:]
    tree = _parse(text, "the action")
    return _action(tree.body, "the action")


def checked_macro(reply: str, specs: Mapping[str, ActionSpec]) -> str:
    """The reply's macro action (:func:`read_macro`), checked against the env's own action
    specs when there are any. Raises :class:`PolicyRejected` saying why it is not one."""
    action = read_macro(reply)
    if not specs:
        return action
    try:
        parsed, spec = parse_action(action, specs)
    except ActionError as error:
        raise PolicyRejected(f"the action is not one of this task's: {error}") from None
    if parsed.name not in MACROS:
        raise PolicyRejected(f"{parsed.name} is not a macro action (a job)")
    return format_action(parsed, spec)


def compile_precondition(text: str) -> Precondition:
    """A precondition from the text of a ``lambda json_state: ...`` expression."""
    tree = _parse(text, "the precondition")
    return _precondition(tree.body, 1)


def _parse(text: str, what: str) -> ast.Expression:
    if not isinstance(text, str):
        raise PolicyRejected(f"{what} must be text, not {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise PolicyRejected(f"{what} is {len(text)} characters long; at most {MAX_TEXT}")
    if "\x00" in text:
        raise PolicyRejected(f"{what} contains a NUL character")
    if not is_clean(text):
        raise PolicyRejected(f"{what} is not valid Unicode (a lone surrogate)")
    _check_brackets(text, what)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as error:
        raise PolicyRejected(f"{what} is not valid syntax: {error.msg} "
                             f"(line {error.lineno})") from None
    except (ValueError, RecursionError, MemoryError) as error:
        raise PolicyRejected(f"{what} cannot be parsed ({type(error).__name__})") from None
    _check_shape(tree, what)
    return tree


def _check_brackets(text: str, what: str) -> None:
    """Refuse deep nesting before the parser sees it (the parser itself recurses)."""
    depth = deepest = 0
    for char in text:
        if char in _OPENERS:
            depth += 1
            deepest = max(deepest, depth)
        elif char in _CLOSERS:
            depth -= 1
    if deepest > MAX_DEPTH:
        raise PolicyRejected(f"{what} nests brackets {deepest} deep; at most {MAX_DEPTH}")


def _check_shape(tree: ast.AST, what: str) -> None:
    """Bound the node count and the depth, walking without recursion."""
    count = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise PolicyRejected(f"{what} is too large: more than {MAX_NODES} syntax nodes")
        if depth > MAX_DEPTH:
            raise PolicyRejected(f"{what} nests more than {MAX_DEPTH} levels deep")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _kind(node: ast.AST) -> str:
    return type(node).__name__


# -- tasks ------------------------------------------------------------------------------------

def _task(node: ast.expr, index: int) -> AssignedTask:
    where = f"task {index}"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        dish = node.value.strip()
        if dish not in BURGERS:
            raise PolicyRejected(f"{where}: {dish[:40]!r} is not an order name "
                                 f"({', '.join(BURGERS)}) nor a (precondition, action) pair")
        return OrderTask(dish)
    if isinstance(node, ast.Dict):
        keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
        if set(keys) - {"precondition", "action"} or "action" not in keys:
            raise PolicyRejected(f"{where}: a task written as a dict has the keys "
                                 "'precondition' and 'action'")
        pre_node = _dict_value(node, "precondition")
        action_node = _dict_value(node, "action")
    elif isinstance(node, ast.Tuple | ast.List) and len(node.elts) == 2:
        pre_node, action_node = node.elts
    else:
        raise PolicyRejected(f"{where}: expected an order name or a (precondition, action) "
                             f"pair, got {_kind(node)}")
    precondition = _precondition(pre_node, index) if pre_node is not None else None
    action = _action(action_node, where) if action_node is not None else ""
    text = f"({precondition.source if precondition else 'True'}, {_action_literal(action)})"
    return ActionTask(precondition=precondition or always, action=action, text=text)


def _dict_value(node: ast.Dict, key: str) -> ast.expr | None:
    for key_node, value in zip(node.keys, node.values, strict=True):
        if isinstance(key_node, ast.Constant) and key_node.value == key:
            return value
    return None


def _precondition(node: ast.expr, index: int) -> Precondition:
    where = f"task {index}'s precondition"
    if (isinstance(node, ast.Constant) and node.value is True) or \
            (isinstance(node, ast.Name) and node.id == "true"):
        return Precondition("json_state", ast.Constant(True), "lambda json_state: True")
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        inner = _parse(node.value, where)  # the lambda written as a string, as the paper does
        node = inner.body
    if not isinstance(node, ast.Lambda):
        raise PolicyRejected(f"{where} must be a lambda taking the game state, not {_kind(node)}")
    args = node.args
    if len(args.args) != 1 or args.posonlyargs or args.kwonlyargs or args.vararg \
            or args.kwarg or args.defaults:
        raise PolicyRejected(f"{where} must take exactly one parameter (the game state)")
    param = args.args[0].arg
    if param.startswith("_") or param in _SAFE_CALLS or param in _JSON_NAMES:
        raise PolicyRejected(f"{where}: {param[:40]!r} cannot name the parameter")
    _check_body(node.body, param, where)
    return Precondition(param, node.body, f"lambda {param}: {ast.unparse(node.body)}")


def _check_body(body: ast.expr, param: str, where: str) -> None:
    called = {id(node.func) for node in ast.walk(body) if isinstance(node, ast.Call)}
    loop_names = _loop_names(body, param, where)
    for node in ast.walk(body):
        if not isinstance(node, _ALLOWED) or isinstance(node, ast.Lambda | ast.arguments
                                                        | ast.arg):
            raise PolicyRejected(f"{where} uses {_describe(node)}, which is not allowed")
        if isinstance(node, ast.Name) and node.id not in (param, *_JSON_NAMES, *loop_names) \
                and not (node.id in _SAFE_CALLS and id(node) in called):
            raise PolicyRejected(f"{where} uses the name {node.id[:40]!r}; only {param!r}, "
                                 f"loop variables and the functions "
                                 f"{', '.join(_SAFE_CALLS)} are known")
        if isinstance(node, ast.Attribute) and (id(node) not in called
                                                or node.attr not in _DICT_METHODS):
            raise PolicyRejected(f"{where} uses {_describe(node)}; only the dictionary "
                                 f"methods {', '.join(_DICT_METHODS)} may be called")
        if isinstance(node, ast.comprehension) and node.is_async:
            raise PolicyRejected(f"{where} uses an async comprehension, which is not allowed")
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute):
                pass  # a dictionary method: the Attribute check above vets its name
            elif not isinstance(node.func, ast.Name) or node.func.id not in _SAFE_CALLS:
                raise PolicyRejected(f"{where} calls {_callee(node.func)}; only "
                                     f"{', '.join(_SAFE_CALLS)} and the dictionary methods "
                                     f"{', '.join(_DICT_METHODS)} may be called")
            if node.keywords:
                raise PolicyRejected(f"{where} passes keyword arguments to "
                                     f"{_callee(node.func)}")
            if any(isinstance(arg, ast.Starred) for arg in node.args):
                raise PolicyRejected(f"{where} passes starred arguments (Starred), which is "
                                     f"not allowed")
        if isinstance(node, ast.Constant):
            _check_constant(node.value, where)


def _loop_names(body: ast.expr, param: str, where: str) -> set[str]:
    """The comprehensions' loop variables: plain names, or (nested) tuples of them, none
    shadowing the parameter, a known function or JSON's constants, none private."""
    names: set[str] = set()
    for node in ast.walk(body):
        if not isinstance(node, ast.comprehension):
            continue
        targets = [node.target]
        while targets:
            target = targets.pop()
            if isinstance(target, ast.Tuple):  # unpacking, nested as deep as the items are
                targets.extend(target.elts)
                continue
            if not isinstance(target, ast.Name):
                raise PolicyRejected(f"{where}: a loop variable must be a name or a tuple of "
                                     f"names")
            if target.id.startswith("_") or target.id in (param, *_SAFE_CALLS, *_JSON_NAMES):
                raise PolicyRejected(f"{where}: {target.id[:40]!r} cannot name a loop variable")
            names.add(target.id)
    return names


def _callee(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return repr(func.id[:40])
    if isinstance(func, ast.Attribute):
        return f"the attribute .{func.attr[:40]}"
    return _describe(func)


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return f"attribute access (.{node.attr[:40]})"
    return {"Lambda": "a nested lambda", "Pow": "the ** operator",
            "NamedExpr": "the := operator", "Starred": "a starred expression",
            "Slice": "a slice", "JoinedStr": "an f-string"}.get(_kind(node), _kind(node))


def _check_constant(value: Any, where: str) -> None:
    if isinstance(value, str) and len(value) > MAX_STRING:
        raise PolicyRejected(f"{where} has a string of {len(value)} characters; at most "
                             f"{MAX_STRING}")
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, int):
        if abs(value) > MAX_NUMBER:
            raise PolicyRejected(f"{where} has a number larger than {MAX_NUMBER}")
        return
    if isinstance(value, float):
        if not math.isfinite(value) or abs(value) > MAX_NUMBER:
            raise PolicyRejected(f"{where} has a number that is not finite or too large")
        return
    raise PolicyRejected(f"{where} has a constant of type {type(value).__name__}")


# -- actions --------------------------------------------------------------------------------------

#: The macro names an LM may write (the paper's lower-case forms and the env's own), by the
#: env's name, with each param's allowed values (``None``: a boolean).
_MACRO_ALIASES = {
    "prepare": "PREPARE", "assemble": "ASSEMBLE", "serve": "SERVE", "pass_on": "PASS_ON",
    "putout_fire": "PUT_OUT_FIRE", "put_out_fire": "PUT_OUT_FIRE",
    "clean_a_counter": "CLEAN_A_COUNTER",
}
_PARAM_VALUES: dict[str, dict[str, tuple[str, ...] | None]] = {
    "PREPARE": {"food": FOODS, "plate": None},
    "ASSEMBLE": {"food": BURGERS},
    "SERVE": {"food": BURGERS},
    "PASS_ON": {"thing": THINGS, "thing_status": (*STATUSES, "Empty")},
    "PUT_OUT_FIRE": {},
    "CLEAN_A_COUNTER": {},
}
_REQUIRED = {"PREPARE": ("food",), "ASSEMBLE": ("food",), "SERVE": ("food",),
             "PASS_ON": ("thing",)}


def _action(node: ast.expr, where: str) -> str:
    """A macro action in canonical syntax, from ``("prepare", {...})``, ``{"action": ...,
    "args": {...}}``, ``"putout_fire"`` or ``'PREPARE(food="Beef")'``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value.strip()
        if "(" not in text:
            return _macro(text, {}, where)
        node = _parse(text, f"{where}'s action").body
        if not isinstance(node, ast.Call):
            raise PolicyRejected(f"{where}: the action {text[:60]!r} is not NAME(param=value)")
    if isinstance(node, ast.Call):
        return _call_action(node, where)
    if isinstance(node, ast.Tuple | ast.List) and 1 <= len(node.elts) <= 2:
        name = _literal(node.elts[0], where)
        args = _literal_dict(node.elts[1], where) if len(node.elts) == 2 else {}
    elif isinstance(node, ast.Dict):
        fields = _literal_dict(node, where)
        name = fields.get("action", fields.get("name"))
        args = fields.get("args", {})
    else:
        raise PolicyRejected(f"{where}: the action must be (name, {{args}}), not {_kind(node)}")
    if not isinstance(name, str) or not isinstance(args, dict):
        raise PolicyRejected(f"{where}: the action must be (name, {{args}})")
    return _macro(name, args, where)


def _call_action(call: ast.Call, where: str) -> str:
    """An action written as a call, ``PREPARE(food="Beef")``: keyword arguments only, each a
    plain value."""
    if not isinstance(call.func, ast.Name) or call.args:
        raise PolicyRejected(f"{where}: the action is not NAME(param=value, ...)")
    args = {kw.arg: _literal(kw.value, where) for kw in call.keywords if kw.arg}
    if len(args) != len(call.keywords):
        raise PolicyRejected(f"{where}: the action passes **arguments")
    return _macro(call.func.id, args, where)


def _macro(name: str, args: dict[str, Any], where: str) -> str:
    canonical = _MACRO_ALIASES.get(name.strip().lower())
    if canonical is None:
        raise PolicyRejected(f"{where}: {name[:40]!r} is not a macro action "
                             f"({', '.join(_MACRO_ALIASES)})")
    allowed = _PARAM_VALUES[canonical]
    for key, value in args.items():
        if key not in allowed:
            raise PolicyRejected(f"{where}: {canonical.lower()} takes no {str(key)[:40]!r}")
        values = allowed[key]
        if values is None and not isinstance(value, bool):
            raise PolicyRejected(f"{where}: {key} must be True or False")
        if values is not None and value not in values:
            raise PolicyRejected(f"{where}: {str(value)[:40]!r} is not a valid {key} for "
                                 f"{canonical.lower()}")
    missing = [key for key in _REQUIRED.get(canonical, ()) if key not in args]
    if missing:
        raise PolicyRejected(f"{where}: {canonical.lower()} needs {missing[0]!r}")
    if canonical == "PASS_ON" and args.get("thing_status") == "Empty":
        args = {**args, "thing_status": ""}  # an empty plate's status in the game state
    return macro(canonical, **args)


def _action_literal(action: str) -> str:
    return repr(action)


def _literal(node: ast.expr, where: str) -> Any:
    """A plain literal: a constant, or JSON's ``true``/``false``/``null``."""
    if isinstance(node, ast.Constant):
        _check_constant(node.value, where)
        return node.value
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    if isinstance(node, ast.Dict):
        return _literal_dict(node, where)
    raise PolicyRejected(f"{where}: expected a plain value, got {_describe(node)}")


def _literal_dict(node: ast.expr, where: str) -> dict[str, Any]:
    if not isinstance(node, ast.Dict):
        raise PolicyRejected(f"{where}: expected a dict of arguments, got {_kind(node)}")
    result: dict[str, Any] = {}
    for key_node, value_node in zip(node.keys, node.values, strict=True):
        if not isinstance(key_node, ast.Constant) or not isinstance(key_node.value, str):
            raise PolicyRejected(f"{where}: dict keys must be strings")
        result[key_node.value] = _literal(value_node, where)
    return result


# -- evaluating a precondition ------------------------------------------------------------------

@dataclass(frozen=True)
class Precondition:
    """A checked precondition: called with the game state, it walks its tree (never Python's
    evaluator) and says whether it holds. Raises :class:`PolicyRuntimeError` when it cannot be
    evaluated on that state."""

    param: str
    body: ast.expr
    source: str

    def __call__(self, state: Mapping[str, Any]) -> bool:
        walker = _Walker(self.param, state)
        try:
            return bool(_truth(walker.value(self.body)))
        except PolicyRuntimeError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError, OverflowError,
                RecursionError) as error:
            raise PolicyRuntimeError(f"{type(error).__name__}: {str(error)[:120]}") from None


def _truth(value: Any) -> bool:
    if isinstance(value, bool | int | float | str | list | tuple | dict | set | frozenset) \
            or value is None:
        return bool(value)
    raise PolicyRuntimeError(f"a {type(value).__name__} has no truth value here")


class _Walker:
    """Evaluates a checked body. Each node visited spends one step of :data:`STEP_BUDGET`."""

    def __init__(self, param: str, state: Mapping[str, Any]) -> None:
        self.names = {param: state, **_JSON_NAMES}
        self.steps = 0

    def spend(self, steps: int = 1) -> None:
        self.steps += steps
        if self.steps > STEP_BUDGET:
            raise PolicyRuntimeError(f"the precondition took more than {STEP_BUDGET} steps")

    def value(self, node: ast.expr) -> Any:
        self.spend()
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in self.names:
                raise PolicyRuntimeError(f"unknown name {node.id!r}")
            return self.names[node.id]
        if isinstance(node, ast.Subscript):
            container, key = self.value(node.value), self.value(node.slice)
            if isinstance(container, list | tuple | str) and not isinstance(key, int):
                raise PolicyRuntimeError(f"a {type(container).__name__} index must be a whole "
                                         f"number")
            if not isinstance(container, Mapping | list | tuple | str):
                raise PolicyRuntimeError(f"cannot index a {type(container).__name__}")
            return container[key]
        if isinstance(node, ast.Tuple):
            return tuple(self.value(e) for e in node.elts)
        if isinstance(node, ast.List):
            return [self.value(e) for e in node.elts]
        if isinstance(node, ast.Set):
            return {self.value(e) for e in node.elts}
        if isinstance(node, _COMPREHENSIONS):
            return self.comprehension(node)
        if isinstance(node, ast.Dict):
            return {self.value(k): self.value(v) for k, v in zip(node.keys, node.values,
                                                                   strict=True) if k is not None}
        if isinstance(node, ast.BoolOp):
            return self.boolean(node)
        if isinstance(node, ast.UnaryOp):
            return self.unary(node)
        if isinstance(node, ast.BinOp):
            return _number(_ARITHMETIC[type(node.op)](_operand(self.value(node.left)),
                                                      _operand(self.value(node.right))))
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.IfExp):
            return self.value(node.body) if _truth(self.value(node.test)) \
                else self.value(node.orelse)
        if isinstance(node, ast.Call):
            return self.call(node)
        raise PolicyRuntimeError(f"{_kind(node)} is not allowed")  # the checker stops these

    def boolean(self, node: ast.BoolOp) -> Any:
        result: Any = None
        for operand in node.values:
            result = self.value(operand)
            if isinstance(node.op, ast.And) != _truth(result):
                return result  # and: the first false value; or: the first true one
        return result

    def unary(self, node: ast.UnaryOp) -> Any:
        operand = self.value(node.operand)
        if isinstance(node.op, ast.Not):
            return not _truth(operand)
        number = _operand(operand)
        return -number if isinstance(node.op, ast.USub) else +number

    def compare(self, node: ast.Compare) -> bool:
        left = self.value(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.value(right_node)
            if isinstance(op, ast.In | ast.NotIn) and not isinstance(
                    right, Mapping | list | tuple | str | set | frozenset):
                raise PolicyRuntimeError(f"'in' needs a container, not {type(right).__name__}")
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp
                      ) -> Any:
        """Each loop variable bound in turn (in a scope of the comprehension's own); a
        generator is read out at once into a list, for any/all/sum/min/max."""
        results: list[Any] = []
        outer = dict(self.names)
        try:
            self._loop(node, 0, results)
        finally:
            self.names = outer
        if isinstance(node, ast.SetComp):
            return set(results)
        if isinstance(node, ast.DictComp):
            return dict(results)
        return results

    def _loop(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp,
              depth: int, results: list[Any]) -> None:
        if depth == len(node.generators):
            if isinstance(node, ast.DictComp):
                results.append((self.value(node.key), self.value(node.value)))
            else:
                results.append(self.value(node.elt))
            return
        generator = node.generators[depth]
        iterable = self.value(generator.iter)
        if not isinstance(iterable, Mapping | list | tuple | str | set | frozenset):
            raise PolicyRuntimeError(f"cannot loop over a {type(iterable).__name__}")
        for item in list(iterable):
            self.spend()
            self._bind(generator.target, item)
            if all(_truth(self.value(test)) for test in generator.ifs):
                self._loop(node, depth + 1, results)

    def _bind(self, target: ast.expr, item: Any) -> None:
        if isinstance(target, ast.Name):
            self.names[target.id] = item
            return
        assert isinstance(target, ast.Tuple)  # the checker allows names and tuples of names
        if not isinstance(item, list | tuple) or len(item) != len(target.elts):
            raise PolicyRuntimeError(f"cannot unpack a {type(item).__name__} into "
                                     f"{len(target.elts)} names")
        for name, value in zip(target.elts, item, strict=True):
            self._bind(name, value)

    def method(self, node: ast.Call, func: ast.Attribute) -> Any:
        """A dictionary method of the state (the checker allows only :data:`_DICT_METHODS`)."""
        receiver = self.value(func.value)
        if not isinstance(receiver, Mapping):
            raise PolicyRuntimeError(f".{func.attr} is a dictionary method; this is a "
                                     f"{type(receiver).__name__}")
        args = [self.value(a) for a in node.args]
        if func.attr == "get":
            if not 1 <= len(args) <= 2:
                raise PolicyRuntimeError(f".get takes 1 or 2 arguments, got {len(args)}")
            return receiver.get(args[0], args[1] if len(args) == 2 else None)
        _arity(f".{func.attr}", args, 0)
        self.spend(len(receiver))
        if func.attr == "items":
            return [tuple(pair) for pair in receiver.items()]
        return list(receiver.keys() if func.attr == "keys" else receiver.values())

    def call(self, node: ast.Call) -> Any:
        if isinstance(node.func, ast.Attribute):
            return self.method(node, node.func)
        assert isinstance(node.func, ast.Name)  # the checker allows only named safe calls
        args = [self.value(a) for a in node.args]
        name = node.func.id
        if name == "len":
            (arg,) = _arity(name, args, 1)
            if not isinstance(arg, Mapping | list | tuple | str | set | frozenset):
                raise PolicyRuntimeError(f"len of a {type(arg).__name__}")
            return len(arg)
        if name == "abs":
            (arg,) = _arity(name, args, 1)
            return abs(_operand(arg))
        items = _items(name, args)
        self.spend(len(items))
        if name in ("any", "all"):
            truths = [_truth(item) for item in items]
            return any(truths) if name == "any" else all(truths)
        numbers = [_operand(item) for item in items]
        if name == "sum":
            return _number(sum(numbers))
        if not numbers:
            raise PolicyRuntimeError(f"{name} of nothing")
        return min(numbers) if name == "min" else max(numbers)


def _arity(name: str, args: list[Any], count: int) -> list[Any]:
    if len(args) != count:
        raise PolicyRuntimeError(f"{name} takes {count} argument(s), got {len(args)}")
    return args


def _items(name: str, args: list[Any]) -> list[Any]:
    """The items a min/max/sum/any/all call runs over: one list or tuple, or (min and max)
    several arguments."""
    if len(args) == 1 and isinstance(args[0], list | tuple | set | frozenset):
        return list(args[0])
    if len(args) >= 2 and name in ("min", "max"):
        return args
    raise PolicyRuntimeError(f"{name} takes a list or tuple")


def _operand(value: Any) -> int | float:
    """Arithmetic is on numbers only: no string or list repetition."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        return value
    raise PolicyRuntimeError(f"arithmetic on a {type(value).__name__}")


def _number(value: int | float) -> int | float:
    if (isinstance(value, float) and not math.isfinite(value)) or abs(value) > MAX_NUMBER:
        raise PolicyRuntimeError("a number grew too large")
    return value


__all__ = ["MAX_DEPTH", "MAX_NODES", "MAX_TASKS", "MAX_TEXT", "STEP_BUDGET", "PolicyRejected",
           "PolicyRuntimeError", "Precondition", "compile_precondition", "extract_tasks_text",
           "parse_assigned_tasks", "read_macro"]
