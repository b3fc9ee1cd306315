"""check_env: every shipped task passes it, and each check catches the env it is there for."""

from __future__ import annotations

import asyncio
import functools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from cogym_lab.core import ActionError, CoEnv, Component, RenderType, action
from cogym_lab.core.check_env import CHECK_SEED, EnvCheckError, check_env
from cogym_lab.core.env import StepResult, TickResult
from cogym_lab.core.protocol import PROTOCOLS
from cogym_lab.envs import available_envs, make_env
from cogym_lab.envs.registry import task_class
from cogym_lab.envs.todo import TodoEnv

#: What each shipped task needs to be built offline (no LM call; the shared datasets).
SHIPPED_ARGS: dict[str, dict[str, Any]] = {
    "todo": {"instance": 1},
    "travel_planning": {"instance": 0},
    "related_work": {"instance": 0},
    "tabular_analysis": {"instance": 0},
    "kitchen": {"instance": 0},
}


# -- the shipped tasks ------------------------------------------------------------------------


def test_every_shipped_task_has_offline_arguments_here():
    shipped = {name for name in available_envs()
               if task_class(name).__module__.startswith("cogym_lab.envs.")}
    assert shipped == set(SHIPPED_ARGS)


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
@pytest.mark.parametrize("name", sorted(SHIPPED_ARGS))
def test_every_available_task_passes_check_env(name, protocol, use_shared_data):
    # every shipped task is here: test_every_shipped_task_has_offline_arguments_here
    # make_env as the factory: the env is built, and rebuilt, as sessions and replay do it
    assert check_env(functools.partial(make_env, name), **SHIPPED_ARGS[name],
                     protocol=protocol) == []


# -- a small task that passes, and broken variants of it --------------------------------------


class Board(CoEnv):
    """Notes on a shared board, plus a private draft for each role."""

    name = "board"

    def __init__(self, title: str = "Notes", roles: Sequence[str] | None = None) -> None:
        super().__init__(roles=roles)
        self.title = title

    @property
    def task_description(self) -> str:
        return f"Fill the board {self.title!r} together."

    def env_args(self) -> dict[str, Any]:
        return {"title": self.title} | ({"roles": list(self.roles)} if self.roles else {})

    def _reset(self, seed: int | None) -> None:
        self.notes: list[str] = []
        self.drafts: dict[str, str] = {}

    def public_components(self) -> list[Component]:
        return [Component(name="board", title=self.title, render_type=RenderType.TEXT,
                          content=list(self.notes))]

    def private_components(self, role: str) -> list[Component]:
        return [Component(name="draft", render_type=RenderType.TEXT,
                          content=self.drafts.get(role, ""))]

    @action("Write a note on the shared board.", text="What to write")
    def write(self, role: str, text: str) -> None:
        self.notes.append(text)

    @action("Keep a private draft.", private=True, text="The draft")
    def draft(self, role: str, text: str) -> None:
        self.drafts[role] = text

    @action("Pin a note by number.", index="The note's number", loud="Whether to shout")
    def pin(self, role: str, index: int, loud: bool = False) -> None:
        if not 0 <= index < len(self.notes):
            raise ActionError(f"No note {index}.")


def findings_of(env_class: Any, **env_args: Any) -> str:
    """The message check_env raises for ``env_class``, which must fail."""
    with pytest.raises(EnvCheckError) as raised:
        check_env(env_class, **env_args)
    return str(raised.value)


def test_the_small_task_passes_and_the_findings_come_back_as_a_list():
    assert check_env(Board) == []
    assert check_env(Board, title="Trip", roles=("agent", "user")) == []
    assert check_env(Board, raise_on_error=False, roles=["solo"]) == []


def test_a_built_env_is_refused_with_the_way_to_call_it():
    with pytest.raises(TypeError, match=r"check_env\(Board, \*\*arguments\)"):
        check_env(Board())


def test_every_env_it_builds_is_closed():
    closed: list[Board] = []

    class Closing(Board):
        async def aclose(self) -> None:
            closed.append(self)

    check_env(Closing)
    assert len(closed) == 3  # the one checked, a second for determinism, one from env_args
    assert len(set(map(id, closed))) == 3


def test_the_error_is_an_assertion_error_holding_each_finding():
    class Forgetful(Board):
        def env_args(self) -> dict[str, Any]:
            return {}

    error = EnvCheckError("X", ["first thing", "second thing"])
    assert isinstance(error, AssertionError) and error.findings == ["first thing", "second thing"]
    assert str(error) == "X failed 2 check(s):\n- first thing\n- second thing"
    found = check_env(Forgetful, raise_on_error=False, title="Trip")
    assert len(found) == 1 and found[0].startswith("env_args round trip:")


# -- subclass and initialisation --------------------------------------------------------------


def test_a_class_that_is_not_a_coenv():
    class NotAnEnv:
        built = False

        def __init__(self) -> None:
            NotAnEnv.built = True

    message = findings_of(NotAnEnv)
    assert "Subclass: NotAnEnv is not a CoEnv subclass" in message
    assert "class NotAnEnv(CoEnv)" in message
    assert not NotAnEnv.built  # never built: its constructor could do anything


def test_a_factory_that_returns_something_else():
    def make_board() -> dict[str, str]:
        return {"board": "notes"}

    assert "Subclass: dict is not a CoEnv subclass" in findings_of(make_board)


def test_a_forgotten_super_init_gets_the_clear_message_not_an_attribute_error():
    class NoSuper(Board):
        def __init__(self) -> None:
            self.title = "Notes"

    message = findings_of(NoSuper)
    assert "Initialisation: NoSuper.__init__ did not call super().__init__()" in message
    assert "AttributeError" not in message and "1 check(s)" in message


def test_a_forgotten_super_init_in_a_dataclass_names_post_init():
    @dataclass
    class NoSuperDataclass(Board):
        title: str = "Notes"

        def __post_init__(self) -> None:
            pass

    message = findings_of(NoSuperDataclass)
    assert "NoSuperDataclass.__post_init__ did not call super().__init__()" in message


def test_a_constructor_that_fails_is_reported_with_its_arguments():
    message = findings_of(Board, colour="red")
    assert "Construction: Board(**{\"colour\": \"red\"}) raised TypeError" in message


def test_an_abstract_class_is_reported_as_such():
    class Unfinished(CoEnv):
        @property
        def task_description(self) -> str:
            return "No view yet."

    message = findings_of(Unfinished)
    assert "Construction: Unfinished(**{}) raised TypeError: Can't instantiate abstract class " \
           "Unfinished" in message


def test_a_reset_that_fails_is_reported():
    class BadReset(Board):
        def _reset(self, seed: int | None) -> None:
            raise RuntimeError("no data")

    message = findings_of(BadReset)
    assert f"Reset: reset(seed={CHECK_SEED}) raised RuntimeError: no data" in message


# -- action specs -----------------------------------------------------------------------------


def test_an_env_with_no_actions():
    class Empty(CoEnv):
        @property
        def task_description(self) -> str:
            return "Nothing to do."

        def _reset(self, seed: int | None) -> None:
            pass

        def public_components(self) -> list[Component]:
            return []

    assert "Action specs: Empty has no action members can take" in findings_of(Empty)


def test_a_handler_without_the_role_param():
    class NoRole(Board):
        @action("Erase the board.", text="Unused")
        def erase(self, text: str) -> None:
            self.notes.clear()

    message = findings_of(NoRole)
    assert "NoRole.erase must take the acting role right after self" in message
    assert "def erase(self, role: str, ...)" in message


def test_params_the_grammar_does_not_know_or_describe():
    class Loose(Board):
        @action("Tag a note.", tag="The tag")
        def tag(self, role: str, tag: str | None, colour, size: Any = 1) -> None:
            pass

    message = findings_of(Loose)
    assert "param 'tag' of TAG is annotated str | None, a type the action grammar" in message
    assert "param 'colour' of TAG has no type annotation" in message
    assert "param 'colour' of TAG has no description" in message
    assert "'size' of TAG is annotated" not in message  # Any says "anything" on purpose


def test_two_methods_declaring_one_action_name():
    class Clash(Board):
        @action("Write a note, loudly.", name="WRITE", text="What to write")
        def shout(self, role: str, text: str) -> None:
            self.notes.append(text.upper())

    assert "both write and shout declare the action WRITE" in findings_of(Clash)


def test_an_override_without_action_is_caught():
    class Override(Board):
        def write(self, role: str, text: str, colour: str) -> None:
            self.notes.append(f"{colour}: {text}")

    assert "Override.write overrides the action WRITE without @action" in findings_of(Override)


# -- reset determinism ------------------------------------------------------------------------


def test_a_reset_that_uses_random_without_the_seed():
    class Dice(Board):
        def _reset(self, seed: int | None) -> None:
            super()._reset(seed)
            self.notes.append(f"rolled {random.randint(1, 10**9)}")

    message = findings_of(Dice)
    assert "Reset determinism: two envs built with the same arguments and reset with " \
           f"seed={CHECK_SEED} differ at views.agent.components[0 \"board\"].content[0]" in message
    assert "resetting one env twice" in message
    assert "random.Random(seed)" in message


def test_a_reset_that_keeps_the_last_episode():
    class Sticky(Board):
        def _reset(self, seed: int | None) -> None:
            self.notes = getattr(self, "notes", [])
            self.notes.append("welcome")
            self.drafts = {}

    message = findings_of(Sticky)
    assert "two envs built" not in message
    assert "resetting one env twice with seed=1234 gives different states at " \
           "views.agent.components[0 \"board\"].content[1]: first reset (missing) vs second " \
           "reset \"welcome\"" in message


def test_a_seeded_reset_passes():
    class SeededDice(Board):
        def _reset(self, seed: int | None) -> None:
            super()._reset(seed)
            self.notes.append(f"rolled {random.Random(seed).randint(1, 10**9)}")

    assert check_env(SeededDice) == []


# -- env_args ---------------------------------------------------------------------------------


def test_env_args_that_forget_a_field():
    class Forgetful(Board):
        def env_args(self) -> dict[str, Any]:
            return {}

    message = findings_of(Forgetful, title="Trip")
    assert "env_args round trip: an env rebuilt from env_args() {}, as replay rebuilds one, " \
           "differs from the original at task_description" in message
    assert "every constructor argument" in message
    assert check_env(Forgetful) == []  # with the default title nothing is lost


def test_env_args_that_forget_the_roles():
    class Unrestricted(Board):
        def env_args(self) -> dict[str, Any]:
            return {"title": self.title}

    message = findings_of(Unrestricted, roles=["agent", "user"])
    assert "differs from the original at roles: original [\"agent\", \"user\"] vs rebuilt " \
           "null" in message


def test_todo_with_its_roles_named_passes():
    """It did not: env_args() left out roles, so replay rebuilt an env admitting every role."""
    assert check_env(TodoEnv, roles=["agent", "user"]) == []


def test_env_args_that_json_cannot_hold():
    class Unwritable(Board):
        def env_args(self) -> dict[str, Any]:
            return {"title": self.title, "tags": {"a"}}

    assert "env_args() returned" in (message := findings_of(Unwritable))
    assert "which JSON cannot hold" in message


def test_env_args_the_constructor_does_not_take():
    class Misnamed(Board):
        def env_args(self) -> dict[str, Any]:
            return {"heading": self.title}

    message = findings_of(Misnamed)
    assert "rebuilding from env_args() {\"heading\": \"Notes\"} raised TypeError" in message


def test_the_protocol_comes_back_as_replay_gives_it():
    @dataclass
    class Protocolled(Board):
        title: str = "Notes"
        protocol: str = "cogym"

        def __post_init__(self) -> None:
            CoEnv.__init__(self)

        @property
        def task_description(self) -> str:
            return f"Score by {self.protocol}."

        def env_args(self) -> dict[str, Any]:
            return {"title": self.title}  # no protocol: replay passes the recorded one

    assert check_env(Protocolled, protocol="cogym_lab") == []


# -- views ------------------------------------------------------------------------------------


def test_a_view_value_json_cannot_hold():
    class Stamped(Board):
        def public_components(self) -> list[Component]:
            return [*super().public_components(),
                    Component(name="stamp", render_type=RenderType.TEXT, content={"at": object()})]

    message = findings_of(Stamped)
    assert "JSON views: component 'stamp' (public) cannot be written as JSON" in message
    assert message.count("JSON views:") == 1  # shown to every role, said once


def test_nan_and_sets_in_a_view():
    class Odd(Board):
        def private_components(self, role: str) -> list[Component]:
            return [Component(name="score", render_type=RenderType.TEXT, content=math.nan),
                    Component(name="tags", render_type=RenderType.TEXT,
                              content={"seen": [1, {"b", "a"}]})]

    message = findings_of(Odd)
    assert "component 'score' (private) holds nan at content, which JSON writes as null" in message
    assert "component 'tags' (private) holds a set at content['seen'][1]" in message


def test_a_private_component_that_leaks_to_another_role():
    class Cards(Board):
        def _reset(self, seed: int | None) -> None:
            super()._reset(seed)
            self.hands = {"agent": ["ace"], "user": ["king"]}

        def private_components(self, role: str) -> list[Component]:
            return [Component(name="hand", render_type=RenderType.TEXT, content=self.hands)]

    message = findings_of(Cards, roles=("agent", "user"))
    assert "Private components: agent's private component 'hand' ({\"agent\": [\"ace\"], " \
           "\"user\": [\"king\"]}) also shows in user's view" in message
    assert "user's private component 'hand'" in message


def test_a_private_component_made_public():
    class Shown(Board):
        def _reset(self, seed: int | None) -> None:
            super()._reset(seed)
            self.drafts = {"agent": "my secret plan"}

        def public_components(self) -> list[Component]:
            return [*super().public_components(), *self.private_components("agent")]

    message = findings_of(Shown)
    assert "agent's private component 'draft' has the name of a public one" in message


def test_an_honest_private_component_passes():
    class Dealt(Board):
        def _reset(self, seed: int | None) -> None:
            super()._reset(seed)
            self.drafts = {"agent": "ace", "user": "king"}

    assert check_env(Dealt) == []


def test_a_checklist_whose_content_the_panel_cannot_show():
    """It passed: a checklist given an object showed in the panel as an empty list."""
    class Packing(Board):
        def public_components(self) -> list[Component]:
            return [Component(name="list", render_type=RenderType.CHECKLIST,
                              content={"items": ["tent"], "pending": []})]

    message = findings_of(Packing)
    assert "Content shapes: component 'list' (public, render type 'checklist') is an object, " \
           "not a list of items (the view shows an empty list): {\"items\": [\"tent\"], " \
           "\"pending\": []}. Fix: give a 'checklist' component a list of items, each an " \
           "object with a \"text\"" in message
    assert message.count("Content shapes:") == 1  # public: said once, not once per role


def test_content_of_another_shape_is_reported_for_each_render_type_that_expects_one():
    class Misshapen(Board):
        def public_components(self) -> list[Component]:
            return [Component(name="notes", render_type=RenderType.CHECKLIST,
                              content=["tent", "stove"]),
                    Component(name="text", render_type=RenderType.EDITOR, content=["line"]),
                    Component(name="prices", render_type=RenderType.TABLE,
                              content={"rows": [], "total": 3})]

        def private_components(self, role: str) -> list[Component]:
            return [Component(name="found", render_type=RenderType.SEARCH_RESULTS,
                              content="bread")]

    message = findings_of(Misshapen)
    assert "component 'notes' (public, render type 'checklist') item [0] is a string, not an " \
           "object with a \"text\"" in message
    assert "component 'text' (public, render type 'editor') is a list, not a string" in message
    assert "component 'prices' (public, render type 'table') the view does not show its keys " \
           "'total'" in message
    assert "component 'found' (private, render type 'search_results') is a string" in message
    assert message.count("Content shapes:") == 4


def test_content_any_view_shows_passes():
    class Shaped(Board):
        def public_components(self) -> list[Component]:
            return [Component(name="list", render_type=RenderType.CHECKLIST,
                              content=[{"id": 1, "text": "tent", "done": False}]),
                    Component(name="shown", render_type="basket", content={"spent": 0}),
                    Component(name="empty", render_type=RenderType.TABLE, content={})]

    assert check_env(Shaped) == []


def test_a_hidden_string_in_a_public_component():
    class Spoiler(Board):
        def hidden_strings(self) -> list[str]:
            return ["the answer is forty-two"]

        def public_components(self) -> list[Component]:
            return [Component(name="board", render_type=RenderType.TEXT,
                              content=[{"note": "psst: the answer is forty-two!"}])]

    message = findings_of(Spoiler)
    assert "Hidden strings: \"the answer is forty-two\" shows in the public component " \
           "'board'" in message


# -- step on bad input ------------------------------------------------------------------------


def test_a_step_that_raises_on_bad_input():
    class Slash(Board):
        def step(self, role: str, raw_action: Any) -> StepResult:
            if raw_action.startswith("/"):  # a chat command; forgets actions may be mappings
                raise ValueError("no commands yet")
            return super().step(role, raw_action)

    message = findings_of(Slash)
    assert "Bad input to step: step('agent', 42) (a number) raised AttributeError: 'int' " \
           "object has no attribute 'startswith' (at test_check_env.py:" in message
    assert "step('agent', None) (None) raised AttributeError: 'NoneType'" in message
    # the mappings all fail alike: one finding names them all
    assert "step('agent', {'args': {}}) (a mapping with no name) raised AttributeError: 'dict' " \
           "object has no attribute 'startswith'" in message
    assert " more: a role that is an int, a role that is None, a role that is a " \
           "list, WRITE with an unknown param, WRITE with args that are not a mapping, WRITE " \
           "with text mistyped, DRAFT with an unknown param," in message
    assert message.count("Bad input to step:") == 3
    assert "a 1 MB string" not in message  # the strings went through


def test_a_step_that_keeps_a_trace_of_refused_input():
    class Tracing(Board):
        def step(self, role: str, raw_action: Any) -> StepResult:
            self.notes.append("attempt")
            return super().step(role, raw_action)

    message = findings_of(Tracing)
    assert "Bad input to step: step('agent', 'CHECK_ENV_NO_SUCH_ACTION()') (an unknown action) " \
           "changed the state at views.agent.components[0 \"board\"].content[0]: before " \
           "(missing) vs after \"attempt\"; so did " in message
    assert " more: an empty string, prose with no action in it, unbalanced brackets" in message
    assert "Fix: check everything before changing anything" in message


def test_a_step_that_refuses_silently():
    class Silent(Board):
        def step(self, role: str, raw_action: Any) -> StepResult:
            result = super().step(role, raw_action)
            return StepResult(observation=result.observation)  # the error is dropped

    message = findings_of(Silent)
    assert "Bad input to step: step('agent', 'CHECK_ENV_NO_SUCH_ACTION()') (an unknown action) " \
           "returned no info['error']; so did " in message
    assert " more: an empty string, prose with no action in it," in message


def test_a_step_that_fails_on_hostile_text_and_roles():
    class Fussy(Board):
        def step(self, role: Any, raw_action: Any) -> StepResult:
            for text in (role, raw_action):
                if isinstance(text, str):
                    text.encode("utf-8")  # a lone surrogate cannot be encoded
                    if len(text) > 10_000:
                        raise MemoryError("too long")
            return super().step(role, raw_action)

    message = findings_of(Fussy)
    assert "step('agent', '\\ud800') (a lone surrogate) raised UnicodeEncodeError: 'utf-8' " \
           "codec can't encode character '\\ud800' in position 0: surrogates not allowed (at " \
           "test_check_env.py:" in message
    assert "; so did 1 more: a role holding a lone surrogate." in message
    assert "(raw NUL, lone surrogate and U+2028 in a call) raised UnicodeEncodeError" in message
    assert "(a 1 MB string) raised MemoryError: too long" in message
    assert "so did 1 more: a 1 MB value in a call" in message
    assert "(a NUL character)" not in message and "(a U+2028 line separator)" not in message


def test_an_unknown_role_is_refused_when_the_task_names_its_roles():
    class Open(Board):
        def _refusal(self, role: Any) -> StepResult | None:
            return None  # lets any role, of any type, act

    message = findings_of(Open, roles=("agent", "user"))
    assert "step(7, {'name': 'WRITE', 'args': {'text': 'x'}}) (a role that is an int) " \
           "returned no info['error']; so did 2 more: a role that is None, a role the task does " \
           "not have." in message
    assert "(a role that is an int) changed the state at views.agent.components[0 \"board\"]" \
           ".content[0]: before (missing) vs after \"x\"" in message
    assert "(a role that is a list) raised TypeError: unhashable type: 'list'" in message


def test_missing_and_mistyped_params_are_probed_for_each_action():
    class Shortcut(Board):
        def step(self, role: str, raw_action: Any) -> StepResult:
            if isinstance(raw_action, dict) and raw_action.get("name") == "PIN":
                args = raw_action["args"]  # "helpfully" reads the number before the grammar does
                raw_action = {**raw_action, "args": {**args, "index": int(args["index"])}}
            return super().step(role, raw_action)

    message = findings_of(Shortcut)
    assert "(PIN with index mistyped) raised ValueError: invalid literal for int()" in message
    assert "(PIN with args that are not a mapping) raised TypeError" in message
    assert "(PIN with loud mistyped)" not in message  # the grammar refuses it, as it should
    assert "(PIN with no params)" not in message  # a string: it goes straight to the grammar


def test_the_checks_run_on_an_env_that_fails_midway():
    class BrokenView(Board):
        def private_components(self, role: str) -> list[Component]:
            if role == "user":
                raise KeyError(role)
            return super().private_components(role)

    message = findings_of(BrokenView)
    assert "Reset determinism: checking this raised KeyError: 'user'" in message
    assert "Bad input to step: checking this raised KeyError" in message


async def test_it_runs_inside_an_event_loop_and_awaits_each_aclose():
    closed: list[str] = []

    class AsyncClose(Board):
        async def aclose(self) -> None:
            await asyncio.sleep(0)
            closed.append(self.title)

    assert check_env(AsyncClose, title="T") == []
    assert closed == ["T", "T", "T"]


# -- the clock -------------------------------------------------------------------------------


def test_a_clocked_env_that_never_advances_is_caught():
    class Frozen(Board):
        @property
        def tick_seconds(self) -> float:
            return 0.25

    assert "Clock: Frozen has a clock (tick_seconds=0.25) but no advance()" in findings_of(Frozen)


@pytest.mark.parametrize("period", [0.001, 0.0, float("nan"), "fast", True])
def test_a_clock_too_fast_or_not_a_number_is_caught(period: Any) -> None:
    class Racing(Board):
        @property
        def tick_seconds(self) -> Any:
            return period

        def advance(self) -> TickResult:
            return TickResult()

    assert "Clock: Racing.tick_seconds is" in findings_of(Racing)


def test_a_tick_whose_info_the_log_cannot_hold_is_caught():
    class Leaky(Board):
        @property
        def tick_seconds(self) -> float:
            return 0.25

        def advance(self) -> TickResult:
            return TickResult(info={"when": {1, 2}})

    assert "Clock: Leaky.advance()'s info is not plain JSON" in findings_of(Leaky)


def test_a_clocked_env_that_advances_passes() -> None:
    class Ticking(Board):
        @property
        def tick_seconds(self) -> float:
            return 0.25

        def advance(self) -> TickResult:
            return TickResult(reward=1.0, info={"moved": ["agent"]})

    assert check_env(Ticking) == []
