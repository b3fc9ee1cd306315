"""cogym_lab: Collaborative Gym (Co-Gym) for notebooks."""

__version__ = "0.1.0"

from cogym_lab.nodes import Session, SessionConfig, SessionResult, replay  # noqa: E402

__all__ = ["Session", "SessionConfig", "SessionResult", "__version__", "attach", "list_sessions",
           "new_session", "replay"]

_NOTEBOOK_API = {"new_session", "attach", "list_sessions", "SessionHandle", "SessionError"}


def __getattr__(name: str):
    """The notebook API (``new_session`` ...) loads on first use, so importing stays cheap."""
    if name in _NOTEBOOK_API:
        from cogym_lab import api

        return getattr(api, name)
    raise AttributeError(f"module 'cogym_lab' has no attribute {name!r}")


def load_ipython_extension(shell) -> None:
    """``%load_ext cogym_lab`` registers the ``%cogym`` magic."""
    from cogym_lab.jupyter.magics import load_ipython_extension as load

    load(shell)


def _jupyter_server_extension_points() -> list[dict]:
    """Lets ``jpserver_extensions: {"cogym_lab": true}`` find the server extension."""
    from cogym_lab.jupyter import _jupyter_server_extension_points as points

    return points()
