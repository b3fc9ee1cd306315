"""cogym_lab: Collaborative Gym (Co-Gym) for notebooks."""

__version__ = "0.1.0"

from cogym_lab.nodes import Session, SessionConfig, SessionResult, replay  # noqa: E402

__all__ = ["Session", "SessionConfig", "SessionResult", "__version__", "replay"]


def _jupyter_server_extension_points() -> list[dict]:
    """Lets ``jpserver_extensions: {"cogym_lab": true}`` find the server extension."""
    from cogym_lab.jupyter import _jupyter_server_extension_points as points

    return points()
