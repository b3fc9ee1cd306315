"""What an ACP agent holding a seat is told: the task at its first prompt, then the news.

The first prompt gives the seat's context (the task, the role, its teammates, how the seat's
MCP tools work) and the seat's view as ``observe`` shows it; every later prompt is the news that
reached the seat since the agent last saw it, in the words ``observe`` uses
(:func:`~cogym_lab.mcp_seat.views.view_text`). The tools themselves come over MCP.
"""

from __future__ import annotations

from cogym_lab.core.messages import Notification, SessionContext
from cogym_lab.mcp_seat.seat import News
from cogym_lab.mcp_seat.views import view_text

FIRST = """\
You are {role!r}, a member of a Co-Gym session: a shared workspace where you and your teammates \
({teammates}) work on one task at the same time, without turns.

Task: {task}

You act only through the tools of the MCP server {server!r}: one tool per action of the task \
(named after it, e.g. {example}), the collaboration tools (send_message, request_confirmation, \
accept_confirmation, reject_confirmation, finish), observe (your view and what is new) and \
wait_for_news (wait for a teammate). Each action answers with what happened or why it was \
refused. Some actions need a teammate's approval first: the session sends them as a \
confirmation request, and they run once approved. finish ends the session for everyone: use it \
only when the task is done. You have no files or shell here; work only through these tools.

When you have done what you can for now, end your turn: whatever your teammates do next comes \
to you as a new message, so you need not wait in a loop.

Your view now:

{view}"""

NEWS = """\
News from the session since you last looked:

{view}"""

ENDED = "The session has ended ({reason}). Stop now; nothing more can be done."


def first_prompt(context: SessionContext, current: Notification | None, news: News, role: str,
                 server: str) -> str:
    """The prompt that starts the agent on the task."""
    teammates = ", ".join(m.role for m in context.team if m.role != role) or "none"
    actions = [spec.name for spec in context.action_specs if not spec.internal]
    example = actions[0] if actions else "ADD_ITEM"
    return FIRST.format(role=role, teammates=teammates, task=context.task_description,
                        server=server, example=example,
                        view=view_text(current, news, context, role))


def news_prompt(context: SessionContext | None, current: Notification | None, news: News,
                role: str) -> str:
    """The prompt that tells the agent what reached its seat."""
    return NEWS.format(view=view_text(current, news, context, role))


__all__ = ["ENDED", "first_prompt", "news_prompt"]
