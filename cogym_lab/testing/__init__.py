"""Support for testing cogym_lab and projects built on it: real services started on loopback.

Nothing here is used by a default code path.
"""

from cogym_lab.testing.openai_server import Reply, ScriptedOpenAIServer
from cogym_lab.testing.redis_server import RedisServer

__all__ = ["RedisServer", "Reply", "ScriptedOpenAIServer"]
