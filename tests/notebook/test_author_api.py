"""The top-level names of ``cogym_lab``: what task and member authors import, what runs a session,
and the notebook API. Importing the package must stay cheap: no nodes, no Jupyter, no LM client."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import textwrap
import tomllib
import warnings

import pytest

import cogym_lab
from tests.support.paths import REPO_ROOT

AUTHOR_API = [
    # writing a task
    "CoEnv", "action", "ActionOutcome", "ActionError", "Component", "ScoreReport", "check_env",
    # writing a team member
    "Member", "MemberType", "MemberSetup", "Notification",
    # running a session from code
    "SessionSpec", "build_session",
    # the notebook API
    "new_session", "attach", "list_sessions", "configure", "view",
    # catching what the package raises
    "CogymError",
    "__version__",
]
NAMES = [name for name in AUTHOR_API if name != "__version__"]
MOVED = ["Session", "SessionConfig", "SessionResult", "replay"]


def test_all_is_exactly_the_author_api():
    assert len(cogym_lab.__all__) == len(set(cogym_lab.__all__))
    assert sorted(cogym_lab.__all__) == sorted(AUTHOR_API)


@pytest.mark.parametrize("name", NAMES)
def test_each_name_resolves_and_has_a_docstring(name):
    value = getattr(cogym_lab, name)
    assert value is not None
    assert inspect.isclass(value) or inspect.isfunction(value), type(value)
    own = value.__doc__  # a class's or function's own: never inherited
    assert own and own.strip(), f"cogym_lab.{name} has no docstring of its own"
    assert name in dir(cogym_lab)


@pytest.mark.parametrize("name", NAMES)
def test_each_name_imports_with_from(name):
    namespace: dict[str, object] = {}
    exec(f"from cogym_lab import {name}", namespace)
    assert namespace[name] is getattr(cogym_lab, name)


def test_star_import_brings_exactly_the_author_api():
    namespace: dict[str, object] = {}
    exec("from cogym_lab import *", namespace)
    assert sorted(name for name in namespace if name != "__builtins__") == sorted(AUTHOR_API)


def test_the_author_names_are_the_ones_the_package_defines():
    from cogym_lab.core.actions import ActionError
    from cogym_lab.core.env import ActionOutcome, CoEnv, action
    from cogym_lab.core.member import Member, MemberSetup, MemberType
    from cogym_lab.core.messages import Notification
    from cogym_lab.core.observation import Component

    assert (cogym_lab.CoEnv, cogym_lab.action, cogym_lab.ActionOutcome) == (
        CoEnv, action, ActionOutcome)
    assert cogym_lab.Component is Component
    assert cogym_lab.ActionError is ActionError  # what handlers raise, and CoEnv.step catches
    assert (cogym_lab.Member, cogym_lab.MemberType, cogym_lab.MemberSetup) == (
        Member, MemberType, MemberSetup)
    assert cogym_lab.Notification is Notification  # what act() receives, not the wire Member


def test_the_version_lives_in_its_own_module():
    from cogym_lab import _version

    assert cogym_lab.__version__ == _version.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", cogym_lab.__version__)
    assert _version.__doc__ and _version.__doc__.strip()
    assert "__version__" in dir(cogym_lab)
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    version = project["project"].get("version")
    assert version in (None, cogym_lab.__version__)  # None: pyproject reads it from _version


@pytest.mark.parametrize("name", MOVED)
def test_former_names_still_resolve_with_a_warning_naming_their_new_home(name):
    import cogym_lab.nodes

    with pytest.warns(DeprecationWarning, match=r"cogym_lab\.nodes"):
        value = getattr(cogym_lab, name)
    assert value is getattr(cogym_lab.nodes, name)
    assert name not in cogym_lab.__all__ and name not in dir(cogym_lab)


def test_the_notebook_error_still_resolves_without_a_warning():
    from cogym_lab.api import SessionError

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cogym_lab.SessionError is SessionError


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        cogym_lab.nope  # noqa: B018
    assert not hasattr(cogym_lab, "nope")


def test_the_extension_hooks_stay():
    assert callable(cogym_lab.load_ipython_extension)
    assert callable(cogym_lab._jupyter_server_extension_points)


def test_importing_the_package_loads_no_nodes_jupyter_or_lm_client():
    code = textwrap.dedent("""
        import sys
        import cogym_lab
        dir(cogym_lab)
        heavy = ("cogym_lab.nodes", "cogym_lab.server", "openai")
        print(sorted(m for m in sys.modules
                     if any(m == h or m.startswith(h + ".") for h in heavy)))
    """)
    run = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]", run.stdout
