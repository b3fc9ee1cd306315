"""What the Co-Gym persona answers in the chat: Markdown, never a token or a path of the
server's machine beyond the session's id."""

from __future__ import annotations

import json
from typing import Any

#: How the person's server token appears in configuration the reply shows.
TOKEN_PLACEHOLDER = "<YOUR JUPYTER TOKEN>"


def mcp_endpoint(server_url: str, session_id: str, role: str) -> str:
    """The URL of the MCP endpoint (streamable HTTP) of a hosted session's outside seat."""
    return f"{server_url.rstrip('/')}/cogym/api/sessions/{session_id}/mcp/{role}"


def open_instructions(session_id: str, seat: str) -> str:
    """How a person opens their seat's panel: a notebook cell on this server."""
    return ("Open it in a notebook on this server, in a cell:\n\n"
            f"```python\n%load_ext cogym_lab\n%cogym attach {session_id} --role {seat}\n```")


def outside_seat_instructions(server_url: str, session_id: str, role: str, *,
                              http_served: bool) -> str:
    """How an agent takes outside seat ``role``: a jupyter-ai ACP persona through
    ``.jupyter/mcp_settings.json``, any other MCP client by the same server."""
    name = f"cogym-{role}"
    join_args = ["mcp", "--session", session_id, "--url", server_url]
    stdio = {"name": name, "command": "cogym-lab", "args": join_args}
    lines = [f"Seat `{role}` waits for an outside agent."]
    if http_served:
        http = {"type": "http", "name": name, "url": mcp_endpoint(server_url, session_id, role),
                "headers": [{"name": "Authorization", "value": f"token {TOKEN_PLACEHOLDER}"}]}
        lines += [
            "For a jupyter-ai ACP persona (Claude, Codex, ...), add this to "
            "`.jupyter/mcp_settings.json` beside this chat, then send `/refresh-personas`:",
            "```json\n" + json.dumps({"mcp_servers": [http]}, indent=2) + "\n```",
            "An agent that takes only stdio servers gets the seat from "
            f"`cogym-lab {' '.join(join_args)}` instead (`{json.dumps(stdio)}`).",
        ]
    else:
        lines += [
            "This server cannot serve the seat over HTTP (its environment lacks the `mcp` "
            "SDK 2.x). Run the seat as a stdio MCP server from an environment that has "
            "`cogym_lab[mcp]`: for a jupyter-ai ACP persona, add this to "
            "`.jupyter/mcp_settings.json` beside this chat (with that environment's "
            "`cogym-lab` as the command), then send `/refresh-personas`:",
            "```json\n" + json.dumps({"mcp_servers": [stdio]}, indent=2) + "\n```",
        ]
    lines.append("Replace the token placeholder with your server's token where asked; never "
                 "paste it in a chat.")
    return "\n\n".join(lines)


def started(summary: dict[str, Any], seat: str, notes: list[str], outside: list[str],
            server_url: str, *, http_served: bool) -> str:
    """The reply to a ``start`` that created session ``summary``."""
    session_id = summary["session_id"]
    parts = [f"Started session `{session_id}`: task `{summary['task']}`, team "
             f"`{summary['team']}`. Your seat: `{seat}`.",
             open_instructions(session_id, seat)]
    parts += [outside_seat_instructions(server_url, session_id, role, http_served=http_served)
              for role in outside]
    if summary.get("data_notice"):
        parts.append(str(summary["data_notice"]))
    parts += [f"Note: {note}" for note in notes]
    return "\n\n".join(parts)


def found(summary: dict[str, Any], seat: str | None, server_url: str, *,
          http_served: bool) -> str:
    """The reply to a ``join`` of session ``summary``."""
    session_id = summary["session_id"]
    seats = list(summary.get("seats") or [])
    head = (f"Session `{session_id}` ({summary['task']}, team `{summary['team']}`) is "
            f"{summary['status']}.")
    if seat is not None and seat not in seats:
        return (f"{head} Seat `{seat}` is not yours; your seats: "
                f"{', '.join(f'`{s}`' for s in seats) or 'none'}.")
    chosen = seat or (seats[0] if seats else None)
    parts = [head]
    if chosen is None:
        parts.append("You hold no person seat in it.")
    else:
        parts.append(open_instructions(session_id, chosen))
    if summary["status"] == "running":
        parts += [outside_seat_instructions(server_url, session_id, role,
                                            http_served=http_served)
                  for role in summary.get("outside") or []]
    return "\n\n".join(parts)


def listing(summaries: list[dict[str, Any]]) -> str:
    """The reply to ``list``."""
    if not summaries:
        return ("You have no sessions on this server. `start TASK` starts one (`help` lists "
                "the tasks).")
    rows = ["| session | task | status | your seats |", "|---|---|---|---|"]
    rows += [f"| `{s['session_id']}` | {s['task']} | {s['status']} | "
             f"{', '.join(s.get('seats') or []) or '-'} |" for s in summaries]
    return "\n".join(rows)
