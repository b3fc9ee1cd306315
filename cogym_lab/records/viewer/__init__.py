"""The trajectory viewer's data: one session's events and the state after each, rebuilt by
replaying its log, with the LM call behind each action and the failure and audit labels.

``build_trajectory(folder)`` gives a :class:`Trajectory`; the widget
(``cogym_lab.widgets.trajectory_viewer``) and the HTML export show its ``payload``.
"""

from cogym_lab.records.viewer.frames import Trajectory, build_trajectory
from cogym_lab.records.viewer.payload import TrajectoryPayload, decode, encode

__all__ = ["Trajectory", "TrajectoryPayload", "build_trajectory", "decode", "encode"]
