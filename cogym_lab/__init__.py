"""cogym_lab: Collaborative Gym (Co-Gym) for notebooks."""

__version__ = "0.1.0"

from cogym_lab.nodes import Session, SessionConfig, SessionResult, replay  # noqa: E402

__all__ = ["Session", "SessionConfig", "SessionResult", "__version__", "replay"]
