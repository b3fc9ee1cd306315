"""What the kitchen agents heard in the chat while playing: the messages of the session's chat
they may see, each with the tick it arrived at, the newest few written into every prompt."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cogym_lab.core.actions import Action, format_action
from cogym_lab.core.collaboration import SEND_TEAMMATE_MESSAGE
from cogym_lab.core.messages import ChatMessage

#: Characters of one message an agent sends: a line of chat, not a report.
MAX_SAID = 300

_SAY = re.compile(r"```say[ \t]*\n?(.*?)```", re.S | re.I)


def say_block(reply: str) -> str | None:
    """The text of a reply's ``say`` code block (what the agent tells its teammate), cut to
    :data:`MAX_SAID` characters; ``None`` when it has none or it is empty."""
    found = _SAY.search(reply)
    text = " ".join(found.group(1).split())[:MAX_SAID] if found else ""
    return text or None


def without_say(reply: str) -> str:
    """``reply`` with its ``say`` blocks taken out (what is left is the agent's move)."""
    return _SAY.sub("", reply)


def message_action(text: str) -> str:
    """The action that sends ``text`` to every teammate."""
    return format_action(Action(name=SEND_TEAMMATE_MESSAGE.name, args={"message": text}),
                         SEND_TEAMMATE_MESSAGE)


@dataclass(frozen=True)
class ChatLine:
    tick: int
    sender: str
    text: str


class ChatHeard:
    """The chat as an agent has read it, by the messages' ``seq``.

    Read from the notification's whole chat rather than its ``new_messages``, so that messages
    of notifications merged while the agent was busy are not lost.
    """

    def __init__(self, kept: int = 8, role: str = "") -> None:
        self.kept = kept
        self.role = role
        self.lines: list[ChatLine] = []
        self._last_seq = -1

    def read(self, chat: Sequence[ChatMessage], tick: int) -> list[ChatLine]:
        """Take in the messages newer than the last one read; returns the new lines."""
        fresh = [ChatLine(tick, message.sender, message.text) for message in chat
                 if message.seq > self._last_seq]
        if chat:
            self._last_seq = max(self._last_seq, *(message.seq for message in chat))
        self.lines.extend(fresh)
        return fresh

    def from_others(self) -> list[ChatLine]:
        return [line for line in self.lines if line.sender != self.role]

    def section(self) -> str:
        """The prompt's chat section (empty before anyone said anything)."""
        if not self.lines:
            return ""
        shown = self.lines[-self.kept:]
        said = "\n".join(f"- tick {line.tick}, {self._who(line.sender)}: {line.text}"
                         for line in shown)
        return ("## Chat (oldest first; what your teammate says they will do or want "
                f"from you)\n\n{said}")

    def _who(self, sender: str) -> str:
        return "you" if sender == self.role else f"`{sender}`"


__all__ = ["MAX_SAID", "ChatHeard", "ChatLine", "message_action", "say_block",
           "without_say"]
