"""One exception base: every exception class cogym_lab defines derives from ``CogymError``, so a
caller catches everything the package raises with one ``except``, and each keeps the builtin its
callers catch it by."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import cogym_lab
from cogym_lab.errors import CogymError

#: Not imported: running ``python -m cogym_lab`` is the command line itself (it exits).
SCRIPTS = {"cogym_lab.__main__"}


def every_module() -> list[str]:
    """Every module of the package, imported: none needs an optional extra to import (each
    loads its extra on first use, see tests/project/test_packaging.py), so none is skipped."""
    unreadable: list[str] = []
    names = [info.name for info in pkgutil.walk_packages(cogym_lab.__path__, "cogym_lab.",
                                                         onerror=unreadable.append)
             if info.name not in SCRIPTS]
    assert unreadable == [], f"packages that failed to import while walking: {unreadable}"
    for name in names:
        importlib.import_module(name)
    return names


def defined_exceptions() -> list[type[BaseException]]:
    """Every exception class a cogym_lab module defines (nested and private ones too). Warning
    categories are left out: they are passed to ``warnings.warn``, not raised."""
    found: list[type[BaseException]] = []
    waiting: list[type[BaseException]] = [BaseException]
    while waiting:
        cls = waiting.pop()
        for sub in cls.__subclasses__():
            if sub not in found and sub not in waiting:
                waiting.append(sub)
                if sub.__module__.startswith("cogym_lab.") and not issubclass(sub, Warning):
                    found.append(sub)
    return sorted(found, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


def test_every_exception_the_package_defines_is_a_cogym_error():
    assert len(every_module()) > 100
    exceptions = defined_exceptions()
    assert len(exceptions) >= 40  # the walk found them: ActionError, LMError, BusError, ...
    outside = [f"{cls.__module__}.{cls.__qualname__}" for cls in exceptions
               if not issubclass(cls, CogymError)]
    assert outside == [], f"derive these from CogymError (cogym_lab.errors): {outside}"


def test_each_keeps_the_builtin_its_callers_catch_it_by():
    from cogym_lab.core.actions import ActionError
    from cogym_lab.core.check_env import EnvCheckError
    from cogym_lab.lm import LMError
    from cogym_lab.nodes.results import LogWriteError

    assert issubclass(ActionError, ValueError) and issubclass(LMError, RuntimeError)
    assert issubclass(EnvCheckError, AssertionError) and issubclass(LogWriteError, OSError)
    with pytest.raises(CogymError):
        raise ActionError("caught by the one base")


def test_the_base_is_exported_and_catches_nothing_of_python_s_own():
    from cogym_lab import CogymError as exported

    assert exported is CogymError and issubclass(CogymError, Exception)
    assert not issubclass(ValueError, CogymError)
