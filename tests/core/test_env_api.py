"""The CoEnv API: reset/step/view/action_specs, the @action decorator, public and private
components, role restriction, and the guarantee that bad input never raises out of ``step`` and
never changes the state."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cogym_lab.core import (
    Action,
    ActionError,
    ActionOutcome,
    CoEnv,
    Component,
    Observation,
    RenderType,
    action,
)
from cogym_lab.core.env import StepResult
from cogym_lab.core.grammar import parse_canonical
from cogym_lab.envs.todo import TodoEnv
from cogym_lab.envs.todo.env import IDEAS

PROPERTY = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


class Board(CoEnv):
    """A small env exercising every kind of param the decorator derives."""

    name = "board"

    @property
    def task_description(self) -> str:
        return "Write notes on a shared board."

    def _reset(self, seed: int | None) -> None:
        self.notes: list[str] = []
        self.drafts: dict[str, str] = {}
        self.seed = seed

    def public_components(self) -> list[Component]:
        return [Component(name="board", title="Board", render_type=RenderType.TEXT,
                          content="\n".join(self.notes))]

    def private_components(self, role: str) -> list[Component]:
        if role not in self.drafts:
            return []
        return [Component(name="draft", render_type=RenderType.EDITOR, content=self.drafts[role])]

    def outcome(self) -> list[str]:
        return list(self.notes)

    @action("Write a note on the shared board.", text="What to write", times="How often")
    def write(self, role: str, text: str, times: int = 1) -> None:
        if times < 1:
            raise ActionError("WRITE needs times >= 1.")
        self.notes.extend([text] * times)

    @action("Keep a private draft.", private=True, text="The draft")
    def draft(self, role: str, text: str) -> None:
        self.drafts[role] = text

    @action("Grade the board.", name="GRADE", weight="How much it counts")
    def grade_board(self, role: str, weight: float, tags: list[str], meta: dict[str, int],
                    strict: bool = False, extra=None, maybe: int | None = None) -> ActionOutcome:
        return ActionOutcome(reward=weight, done=strict,
                             info={"tags": tags, "extra": extra, "maybe": maybe})


class BigBoard(Board):
    name = "big_board"

    @action("Wipe the board.")
    def erase(self, role: str) -> None:
        self.notes.clear()


def state(env: CoEnv, roles: tuple[str, ...] = ("agent", "user")) -> str:
    """Everything observable about an env, as one comparable string."""
    return json.dumps({"views": {r: env.view(r).model_dump(mode="json") for r in roles},
                       "outcome": env.outcome()}, sort_keys=True)


@pytest.fixture
def todo() -> TodoEnv:
    env = TodoEnv()
    env.reset(seed=0)
    return env


# -- the @action decorator -------------------------------------------------------------------

def test_action_specs_are_derived_from_signatures() -> None:
    specs = {spec.name: spec for spec in Board().action_specs()}
    assert list(specs) == ["WRITE", "DRAFT", "GRADE"]  # definition order, name override

    write = specs["WRITE"]
    assert write.description == "Write a note on the shared board."
    assert write.private is False
    assert [(p.name, p.type, p.required, p.default, p.description) for p in write.params] == [
        ("text", "string", True, None, "What to write"),
        ("times", "integer", False, 1, "How often"),
    ]
    assert specs["DRAFT"].private is True

    grade = specs["GRADE"]
    assert [(p.name, p.type, p.required) for p in grade.params] == [
        ("weight", "number", True), ("tags", "array", True), ("meta", "object", True),
        ("strict", "boolean", False), ("extra", "any", False), ("maybe", "any", False),
    ]
    assert grade.param("strict").default is False
    assert grade.param("weight").description == "How much it counts"
    assert grade.param("tags").description == ""


def test_subclasses_inherit_actions_and_parents_are_untouched() -> None:
    assert [s.name for s in BigBoard().action_specs()] == ["WRITE", "DRAFT", "GRADE", "ERASE"]
    assert [s.name for s in Board().action_specs()] == ["WRITE", "DRAFT", "GRADE"]
    assert "ERASE" not in {s.name for s in TodoEnv().action_specs()}


def test_todo_action_specs() -> None:
    specs = {spec.name: spec for spec in TodoEnv().action_specs()}
    assert list(specs) == ["ADD_ITEM", "CHECK_ITEM", "REMOVE_ITEM", "SEARCH_IDEAS"]
    assert [s.private for s in specs.values()] == [False, False, False, True]
    assert specs["CHECK_ITEM"].params[0].type == "integer"
    assert specs["ADD_ITEM"].signature() == 'ADD_ITEM(text="...")'


# -- reset, view, step -----------------------------------------------------------------------

def test_reset_and_view(todo: TodoEnv) -> None:
    view = todo.view("agent")
    assert isinstance(view, Observation)
    assert [c.name for c in view.components] == ["checklist", "ideas"]  # public first
    assert view["checklist"].render_type == RenderType.CHECKLIST
    assert view["checklist"].private is False and view["checklist"].content == []
    assert view["ideas"].render_type == RenderType.SEARCH_RESULTS
    assert view["ideas"].private is True and view["ideas"].content == []
    assert "checklist" in view and "nothing" not in view
    with pytest.raises(KeyError):
        view["nothing"]

    todo.step("agent", 'ADD_ITEM(text="tent")')
    todo.reset()
    assert todo.view("agent")["checklist"].content == []
    assert todo.outcome() == []


def test_successful_step(todo: TodoEnv) -> None:
    result = todo.step("agent", "ADD_ITEM(text='tent')")
    assert isinstance(result, StepResult)
    assert result.error is None
    assert result.info == {"action": 'ADD_ITEM(text="tent")'}  # canonical form
    assert (result.reward, result.done, result.private) == (0.0, False, False)
    assert result.observation == todo.view("agent")
    assert result.observation["checklist"].content == [
        {"id": 1, "text": "tent", "done": False, "added_by": "agent"}]
    # the change is shared: the user sees it too
    assert todo.view("user")["checklist"].content == result.observation["checklist"].content

    result = todo.step("user", {"name": "CHECK_ITEM", "args": {"item_id": "1"}})
    assert result.error is None and result.info["action"] == "CHECK_ITEM(item_id=1)"
    assert todo.view("agent")["checklist"].content[0]["done"] is True
    assert todo.outcome() == ["tent"]
    assert todo.evaluate()["size"] == pytest.approx(1 / 6)


def test_private_components_only_in_own_view(todo: TodoEnv) -> None:
    result = todo.step("agent", 'SEARCH_IDEAS(trip="beach")')
    assert result.error is None
    assert result.private is True
    assert result.observation["ideas"].content == IDEAS["beach"]
    assert todo.view("agent")["ideas"].content == IDEAS["beach"]
    assert todo.view("user")["ideas"].content == []  # the user's own (empty) search window
    assert todo.view("user")["checklist"].content == []

    board = Board()
    board.reset()
    result = board.step("agent", 'DRAFT(text="secret plan")')
    assert result.private is True
    agent_view, user_view = board.view("agent"), board.view("user")
    assert [c.name for c in agent_view.components] == ["board", "draft"]
    assert agent_view["draft"].private is True  # marked private even if the env did not say so
    assert agent_view["draft"].render_type == RenderType.EDITOR
    assert [c.name for c in user_view.components] == ["board"]
    assert "secret plan" not in user_view.to_text()
    assert "## draft (private to you)\nsecret plan" in agent_view.to_text()
    assert "## Board (shared)" in agent_view.to_text()


def test_component_text_rendering() -> None:
    component = Component(name="list", render_type=RenderType.TABLE, content=[{"a": "é"}])
    assert component.to_text() == '## list (shared)\n[\n  {\n    "a": "é"\n  }\n]'


def test_action_outcome_and_optional_params() -> None:
    board = Board()
    board.reset(seed=7)
    assert board.seed == 7
    result = board.step("agent", 'GRADE(weight="0.5", tags=["x"], meta={"k": 1}, strict=true)')
    assert result.error is None
    assert (result.reward, result.done) == (0.5, True)
    assert result.info == {"action": 'GRADE(weight=0.5, tags=["x"], meta={"k": 1}, strict=true)',
                           "tags": ["x"], "extra": None, "maybe": None}
    result = board.step("agent", 'WRITE(text="hi")')
    assert result.info["action"] == 'WRITE(text="hi")'  # default left out
    result = board.step("agent", "WRITE(text=\"yo\", times='2')")
    assert result.info["action"] == 'WRITE(text="yo", times=2)'
    assert board.outcome() == ["hi", "yo", "yo"]
    result = board.step("agent", "GRADE(1, [], {}, extra={\"any\": [1]}, maybe=3)")
    assert result.error is None
    assert result.info["extra"] == {"any": [1]} and result.info["maybe"] == 3


def test_canonical_parses_without_applying(todo: TodoEnv) -> None:
    assert todo.canonical("CHECK_ITEM('2')") == Action(name="CHECK_ITEM", args={"item_id": 2})
    assert todo.outcome() == []
    with pytest.raises(ActionError):
        todo.canonical("FINISH()")


def test_step_before_reset_returns_an_error() -> None:
    """BUG: TodoEnv.step before reset() raises AttributeError (building the error result calls
    view(), which reads state only reset() creates) instead of returning an error result."""
    env = TodoEnv()
    result = env.step("agent", 'ADD_ITEM(text="tent")')
    assert isinstance(result, StepResult)
    assert "reset" in (result.error or "")


def test_step_before_reset_returns_an_error_when_view_works() -> None:
    class Static(CoEnv):
        task_description = "nothing"

        def _reset(self, seed: int | None) -> None:
            self.count = 0

        def public_components(self) -> list[Component]:
            return [Component(name="c", render_type=RenderType.TEXT, content="static")]

        @action("Bump.")
        def bump(self, role: str) -> None:
            self.count += 1

    env = Static()
    result = env.step("agent", "BUMP()")
    assert "reset" in result.error
    assert result.private is True
    assert not hasattr(env, "count")  # the handler never ran
    env.reset()
    assert env.step("agent", "BUMP()").error is None and env.count == 1


def test_roles_restriction() -> None:
    board = Board(roles=["agent", "user"])
    board.reset()
    before = state(board, ("agent", "user", "intruder"))
    result = board.step("intruder", 'WRITE(text="graffiti")')
    assert "'intruder'" in result.error and "agent, user" in result.error
    assert state(board, ("agent", "user", "intruder")) == before
    assert board.step("user", 'WRITE(text="note")').error is None
    assert Board().roles is None
    open_board = Board()
    open_board.reset()
    assert open_board.step("anyone", 'WRITE(text="x")').error is None


# -- errors name the expected form and change nothing --------------------------------------------

@pytest.mark.parametrize(("raw", "must_contain"), [
    pytest.param('FLY(to="moon")', ["'FLY'", 'ADD_ITEM(text="...")', 'SEARCH_IDEAS(trip="...")'],
                 id="unknown-action"),
    pytest.param("please add a tent", ['ADD_ITEM(text="...")'], id="no-action"),
    pytest.param("ADD_ITEM()", ["'text'", 'ADD_ITEM(text="...")'], id="missing-param"),
    pytest.param('ADD_ITEM(text="x", qty=2)', ["'qty'", 'ADD_ITEM(text="...")'],
                 id="unknown-param"),
    pytest.param({"name": "ADD_ITEM", "args": {"txt": "x"}}, ["'txt'", 'ADD_ITEM(text="...")'],
                 id="unknown-param-structured"),
    pytest.param('CHECK_ITEM(item_id="first")', ["item_id", "CHECK_ITEM(item_id=0)"],
                 id="wrong-type"),
    pytest.param("FINISH()", ["'FINISH'", 'ADD_ITEM(text="...")'], id="not-a-task-action"),
])
def test_errors_name_the_expected_form_and_leave_state_unchanged(todo: TodoEnv, raw: Any,
                                                                 must_contain: list[str]) -> None:
    todo.step("agent", 'ADD_ITEM(text="tent")')
    todo.step("agent", 'SEARCH_IDEAS(trip="city")')
    before = state(todo)
    result = todo.step("agent", raw)
    assert result.error
    for fragment in must_contain:
        assert fragment in result.error
    assert result.private is True and result.reward == 0.0 and result.done is False
    assert result.observation == todo.view("agent")
    assert state(todo) == before


def test_bad_role_error_names_the_roles_and_changes_nothing() -> None:
    board = Board(roles=("writer", "editor"))
    board.reset()
    board.step("writer", 'WRITE(text="a")')
    before = state(board, ("writer", "editor"))
    result = board.step("reader", 'WRITE(text="b")')
    assert result.error and "writer, editor" in result.error
    assert state(board, ("writer", "editor")) == before


@pytest.mark.parametrize("raw", [
    'ADD_ITEM(text="tent")',  # a duplicate
    'ADD_ITEM(text="  ")',
    "CHECK_ITEM(item_id=99)",
    "REMOVE_ITEM(item_id=99)",
    'SEARCH_IDEAS(trip="moon")',
])
def test_refused_actions_change_nothing(todo: TodoEnv, raw: str) -> None:
    todo.step("user", 'ADD_ITEM(text="tent")')
    todo.step("agent", 'SEARCH_IDEAS(trip="beach")')
    before = state(todo)
    result = todo.step("agent", raw)
    assert result.error
    assert state(todo) == before


# -- nothing raises out of step ----------------------------------------------------------------

FRAGMENTS = st.sampled_from([
    "ADD_ITEM", "CHECK_ITEM", "REMOVE_ITEM", "SEARCH_IDEAS", "NAME", "(", ")", "=", ",", '"', "'",
    "\\", "\n", " ", "text", "item_id", "trip", "1", "2", "-1", "tent", "beach", "[", "]", "{",
    "}", ":", "true", "None", "Action:", "Thought:", "```", "`", "é", '\\"', "\\n",
])
MALFORMED = st.one_of(st.text(), st.lists(FRAGMENTS, max_size=25).map("".join))
JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8))
ARBITRARY_DICTS = st.dictionaries(
    st.sampled_from(["name", "args", "arguments"]) | st.text(max_size=4),
    st.one_of(
        st.sampled_from(["ADD_ITEM", "CHECK_ITEM", "REMOVE_ITEM", "SEARCH_IDEAS", "NOPE"]),
        JSON_SCALARS,
        st.dictionaries(st.sampled_from(["text", "item_id", "trip", "x"]), JSON_SCALARS,
                        max_size=3),
        st.lists(JSON_SCALARS, max_size=3),
    ),
    max_size=3,
)


def seeded_todo() -> TodoEnv:
    env = TodoEnv()
    env.reset()
    for raw in ('ADD_ITEM(text="tent")', 'ADD_ITEM(text="map")', "CHECK_ITEM(item_id=2)"):
        assert env.step("user", raw).error is None
    assert env.step("agent", 'SEARCH_IDEAS(trip="camping")').error is None
    return env


def check_step(raw: Any, role: str) -> None:
    env = seeded_todo()
    before = state(env)
    result = env.step(role, raw)
    assert isinstance(result, StepResult)
    assert result.observation == env.view(role)
    if result.error is not None:
        assert isinstance(result.error, str) and result.error
        assert result.private is True
        assert state(env) == before
    else:
        canonical = parse_canonical(result.info["action"])
        assert canonical.name in {"ADD_ITEM", "CHECK_ITEM", "REMOVE_ITEM", "SEARCH_IDEAS"}


@PROPERTY
@given(raw=MALFORMED, role=st.sampled_from(["agent", "user"]))
def test_malformed_strings_never_raise_out_of_step(raw: str, role: str) -> None:
    check_step(raw, role)


@settings(PROPERTY, max_examples=200)
@given(raw=ARBITRARY_DICTS, role=st.sampled_from(["agent", "user"]))
def test_arbitrary_dicts_never_raise_out_of_step(raw: dict, role: str) -> None:
    check_step(raw, role)


@pytest.mark.parametrize("raw", [
    pytest.param("ADD_ITEM(text=" + "[" * 5000 + ")", id="deeply-nested-json"),
    pytest.param("CHECK_ITEM(item_id=" + "1" * 5000 + ")", id="int-over-digit-limit"),
    pytest.param({"name": "ADD_ITEM", "args": {0: "tent"}}, id="non-string-arg-name"),
])
def test_pathological_input_never_raises_out_of_step(raw: Any) -> None:
    """BUG (in the grammar): these raise RecursionError / ValueError / ValidationError out of
    CoEnv.step, which promises to return an error result for any bad input."""
    env = seeded_todo()
    before = state(env)
    result = env.step("agent", raw)
    assert result.error
    assert state(env) == before


@pytest.mark.parametrize("role", [["agent"], ("agent",), 5, None, {"role": "agent"}])
def test_a_role_that_is_not_a_string_is_an_error_not_an_exception(todo: TodoEnv,
                                                                   role: Any) -> None:
    before = state(todo)
    for raw in ('SEARCH_IDEAS(trip="beach")', 'ADD_ITEM(text="tent")'):
        result = todo.step(role, raw)
        assert result.error and "role is a string" in result.error
        assert result.observation == Observation() and result.private
    assert state(todo) == before


def test_an_action_may_not_hide_a_method_of_coenv() -> None:
    # A handler named ``prepare`` would replace CoEnv.prepare, which every session calls first.
    with pytest.raises(TypeError, match="hides CoEnv.prepare"):
        class Kitchen(TodoEnv):
            @action("Cook something.")
            def prepare(self, role: str, food: str) -> None:
                pass

    class Renamed(TodoEnv):
        @action("Cook something.", name="PREPARE")
        def prepare_food(self, role: str, food: str) -> None:
            pass

    assert "PREPARE" in {spec.name for spec in Renamed().action_specs()}


class Finder(Board):
    """A board with a search action whose results fill a private component."""

    name = "finder"

    @action("Look things up.", private=True, searches="found", query="What to look for")
    def look_up(self, role: str, query: str) -> None:
        pass

    @action("Add a note.", text="The note")
    def note(self, role: str, text: str) -> None:
        pass


def test_an_action_says_which_component_its_search_results_fill() -> None:
    specs = {spec.name: spec for spec in Finder().action_specs()}
    assert specs["LOOK_UP"].searches == "found"
    assert specs["NOTE"].searches is None
    # The panel reads it from the specs it is sent.
    assert specs["LOOK_UP"].model_dump()["searches"] == "found"


def test_a_search_needs_a_param_for_what_to_look_for() -> None:
    with pytest.raises(TypeError, match="searches into 'found' needs a param"):
        class Empty(Finder):
            @action("Look up nothing.", searches="found")
            def look_up_nothing(self, role: str) -> None:
                pass

        Empty().action_specs()
