"""Scripted LMs for Related Work sessions: an agent that searches, fills the library and asks
for a draft; a user who gives one piece of feedback and finishes; a drafting assistant; a judge.
They answer from what the prompt shows, so the session runs the same however events merge."""

from __future__ import annotations

import json
import re
from typing import Any

from cogym_lab.testing import Reply
from tests.support.lm_scripts import chat_lines, classify, system_text, user_choice


def judge_replies(score: int) -> list[str]:
    """What a rubric judge answers when it gives ``score`` (one reply: the judge is asked once)."""
    reply = ("The section is organised and cites varied work.\nTherefore, the final score is "
             f"{score}.")
    return [reply]


class RelatedWorkRolePlay:
    def __init__(self, topic_query: str) -> None:
        self.topic_query = topic_query
        self.drafts = 0
        self.judged = 0

    def __call__(self, body: dict[str, Any]) -> str | Reply:
        first = body["messages"][0]["content"]
        if first.startswith("You write the Related Work sections"):
            return self.draft(body)
        if first.startswith("You grade Related Work sections"):
            self.judged += 1
            return "Clear, organised, cites the library.\nTherefore, the final score is 4."
        kind = classify(body)
        text = system_text(body)
        if kind == "scratchpad":
            return "Action: DO_NOTHING()"
        if kind == "act":
            history = text.split("# Your recent actions", 1)[-1].split("# What just happened")[0]
            ids = re.findall(r'"id": "([^"]+)"', text.split("## Paper search", 1)[-1])
            if "SEARCH_PAPER" not in history:
                return f'Action: SEARCH_PAPER(query="{self.topic_query}")'
            if "LIBRARY_ADD_PAPER" not in history and ids:
                return f'Action: LIBRARY_ADD_PAPER(ids="{", ".join(ids[:3])}")'
            if "LIBRARY_TO_DRAFT" not in history:
                return ('Action: LIBRARY_TO_DRAFT(instructions="Write two short subsections '
                        'citing every library paper.")')
            if "[1]" in text and not any(line.startswith("[you]") for line in chat_lines(body)):
                return 'Action: SEND_TEAMMATE_MESSAGE(message="A first draft is in the editor.")'
            return "Action: WAIT_TEAMMATE_CONTINUE()"
        if kind == "user-decide":
            drafted = "[1]" in text.split("# The chat so far", 1)[0]
            spoke = any(line.startswith("[you]") for line in chat_lines(body))
            return user_choice(body, "nothing" if not drafted else "feedback" if not spoke
                               else "finish")
        if kind == "user-feedback":
            return "Message: Nice start; please keep it focused on the main line of work."
        return Reply(status=500, error=f"no scripted reply for {kind}")

    def draft(self, body: dict[str, Any]) -> str:
        self.drafts += 1
        prompt = json.dumps(body["messages"])
        numbers = sorted({int(n) for n in re.findall(r"\[(\d+)\]", prompt)})[:3] or [1]
        cites = ", ".join(str(n) for n in numbers)
        return ("### Foundations\nEarlier work laid the ground for this problem "
                f"[{numbers[0]}].\n\n### Recent approaches\nNewer methods build on it [{cites}].")
