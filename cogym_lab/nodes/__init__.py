"""Nodes that put envs and teammates on a bus, the session runner, and replay."""

from cogym_lab.nodes.env_node import EnvNode
from cogym_lab.nodes.member_node import (
    AgentNode,
    MemberNode,
    UserNode,
    merge_notifications,
)
from cogym_lab.nodes.replay import Replay, ReplayMismatch, replay, replay_states
from cogym_lab.nodes.session import Session, SessionConfig, SessionResult

__all__ = [
    "AgentNode", "EnvNode", "MemberNode", "Replay", "ReplayMismatch", "Session",
    "SessionConfig", "SessionResult", "UserNode", "merge_notifications", "replay",
    "replay_states",
]
