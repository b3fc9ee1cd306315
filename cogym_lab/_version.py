"""The version of cogym_lab.

It lives in a module of its own, with no imports, so that any part of the package (the session
writing ``session.json``, say) can read the version without importing ``cogym_lab/__init__.py``.
Keep it equal to ``version`` in ``pyproject.toml``.
"""

__version__ = "0.1.0"
