"""WebSocket message flood: how many steps a second the server applies while one person's
socket floods it with actions, and how many actions were lost or refused.

Run from the repository root::

    python benchmarks/message_flood.py [--rate 1000] [--seconds 4.8] [--action chat|item]
                                       [--reader during|after] [--limit RATE --burst N]
                                       [--settle 30]

It prints a table and checks nothing. What it does:

1. Starts a real ``jupyter server`` (this checkout's ``cogym_lab`` first on its path, so the same
   script measures an older checkout run from its own root) on a free loopback port, with its
   default limits unless ``--limit``/``--burst`` set ``c.CogymLab.ws_actions_per_second`` and
   ``c.CogymLab.ws_action_burst``.
2. Creates a todo session in which both seats are people ("user" and "agent"), so only the flood
   acts, with ``max_events`` high enough for the whole flood.
3. Opens the "user" seat's WebSocket with the server's token and sends ``rate`` actions a second
   for ``seconds`` seconds (``chat``: SEND_TEAMMATE_MESSAGE; ``item``: ADD_ITEM), each with its
   own text and id. ``--reader during`` reads every frame the server sends meanwhile (as the
   panel does); ``--reader after`` reads nothing until the flood is sent (a flooder that does
   not listen), then drains.
4. Waits until every action is accounted for, the socket closes, or nothing new has happened for
   ``settle`` seconds; then reads the session's ``events.jsonl``.

Applied = the flood's actions in the log. Refused = error frames the server answered with (an
older server sends ``{"error": ...}`` without an id). Lost = sent - applied - refused: actions
that vanished without a word. Steps/s = applied actions / (last applied - first applied), from
the log's timestamps; "behind" is how long after the last send the last action was applied.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import JupyterServer  # beside this script
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

REPO_ROOT = Path(__file__).resolve().parents[1]
MARKER = "flood-"


@dataclass
class Tally:
    """What the client saw."""

    sent: int = 0
    refused: Counter[str] = field(default_factory=Counter)  # by error code
    notifications: int = 0
    closed: bool = False
    close_code: int | None = None
    last_sent_at: float = 0.0  # monotonic, for waiting
    last_sent_wall: float = 0.0  # wall clock, as the log's event times
    last_frame_at: float = field(default_factory=time.monotonic)


class Server(JupyterServer):
    """``jupyter server`` with the cogym_lab extension, in a temporary folder."""

    def __init__(self, folder: Path, settings: dict[str, Any]) -> None:
        self.results = folder / "results"
        super().__init__(folder, {"results_dir": str(self.results), **settings},
                         env={"PYTHONPATH": os.pathsep.join(
                             [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])},
                         cwd=REPO_ROOT)

    def wait_until_up(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("jupyter server exited; see its log")
            try:
                self.request("GET", "cogym/api/sessions")
                return
            except (urllib.error.URLError, OSError):
                time.sleep(0.25)
        raise RuntimeError("jupyter server did not answer in time")

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": f"token {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read() or b"null")


def frame(kind: str, index: int) -> str:
    text = f"{MARKER}{index}"
    action = ({"name": "SEND_TEAMMATE_MESSAGE", "args": {"message": text}} if kind == "chat"
              else {"name": "ADD_ITEM", "args": {"text": text}})
    return json.dumps({"action": action, "id": f"f{index}"})


async def flood(server: Server, session_id: str, args: argparse.Namespace) -> Tally:
    url = f"ws://127.0.0.1:{server.port}/cogym/api/sessions/{session_id}/ws?role=user"
    ws = await websocket_connect(HTTPRequest(url, headers={
        "Authorization": f"token {server.token}"}), max_message_size=1 << 30)
    tally = Tally()

    async def read() -> None:
        while True:
            text = await ws.read_message()
            if text is None:
                tally.closed, tally.close_code = True, ws.close_code
                return
            tally.last_frame_at = time.monotonic()
            message = json.loads(text)
            if message.get("type") == "status":
                continue
            if "event" in message:
                tally.notifications += 1
            elif message.get("error"):
                tally.refused[message.get("code") or "error (no code)"] += 1

    reader = asyncio.create_task(read()) if args.reader == "during" else None
    total = int(args.rate * args.seconds)
    started = time.monotonic()
    for index in range(total):
        if tally.closed:
            break
        due = started + index / args.rate
        if due > time.monotonic():
            await asyncio.sleep(due - time.monotonic())
        try:
            await ws.write_message(frame(args.action, index))
        except Exception:  # noqa: BLE001 - the server closed the socket: the rest is not sent
            break
        tally.sent += 1
    tally.last_sent_at, tally.last_sent_wall = time.monotonic(), time.time()
    reader = reader or asyncio.create_task(read())
    await settle(server, session_id, tally, args.settle)
    reader.cancel()
    ws.close()
    return tally


async def settle(server: Server, session_id: str, tally: Tally, quiet: float) -> None:
    """Wait until every action is accounted for, the socket is closed, or nothing happened for
    ``quiet`` seconds (no frame arrived and the log did not grow)."""
    seen = -1
    changed = time.monotonic()
    while True:
        applied = len(applied_events(server, session_id))
        if applied + sum(tally.refused.values()) >= tally.sent or tally.closed and \
                time.monotonic() - changed > quiet:
            return
        if applied != seen:
            seen, changed = applied, time.monotonic()
        if time.monotonic() - max(changed, tally.last_frame_at) > quiet:
            return
        await asyncio.sleep(0.5)


def applied_events(server: Server, session_id: str) -> list[dict[str, Any]]:
    path = server.results / session_id / "events.jsonl"
    if not path.is_file():
        return []
    events = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a line being written
        if event.get("actor") == "user" and MARKER in (event.get("action") or ""):
            events.append(event)
    return events


def report(args: argparse.Namespace, settings: dict[str, Any], tally: Tally,
           events: list[dict[str, Any]], session: dict[str, Any]) -> None:
    applied = len(events)
    refused = sum(tally.refused.values())
    lost = tally.sent - applied - refused
    times = [event["time"] for event in events]
    span = (max(times) - min(times)) if len(times) > 1 else 0.0
    rate = applied / span if span > 0 else float("nan")
    limits = ", ".join(f"{k}={v}" for k, v in settings.items()) or "the server's defaults"
    rows = [
        ("code", str(REPO_ROOT.name)),
        ("limits", limits),
        ("flood", (f"{args.action} actions, {args.rate:g}/s for {args.seconds:g} s, reading "
                   f"{args.reader} it")),
        ("sent", tally.sent),
        ("applied (in events.jsonl)", applied),
        ("refused with an error frame", f"{refused} {dict(tally.refused) or ''}".strip()),
        ("lost without a word", lost),
        ("steps/s applied", f"{rate:.1f} over {span:.1f} s"),
        ("last applied after the last send",
         f"{max(times) - tally.last_sent_wall:.1f} s" if times else "-"),
        ("socket", f"closed by the server (code {tally.close_code})" if tally.closed
         else "open to the end"),
        ("session", f"{session.get('status')} ({session.get('end_reason')})"),
    ]
    width = max(len(name) for name, _ in rows)
    print()
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=1000.0, help="actions sent a second")
    parser.add_argument("--seconds", type=float, default=4.8, help="how long the flood lasts")
    parser.add_argument("--action", choices=("chat", "item"), default="chat")
    parser.add_argument("--reader", choices=("during", "after"), default="during",
                        help="read the server's frames during the flood, or only after it")
    parser.add_argument("--limit", type=float, help="c.CogymLab.ws_actions_per_second")
    parser.add_argument("--burst", type=int, help="c.CogymLab.ws_action_burst")
    parser.add_argument("--settle", type=float, default=30.0,
                        help="seconds of quiet after which the count is final")
    args = parser.parse_args()
    settings = {name: value for name, value in (("ws_actions_per_second", args.limit),
                                                ("ws_action_burst", args.burst)) if value}
    with tempfile.TemporaryDirectory(prefix="cogym-flood-") as folder:
        server = Server(Path(folder), settings)
        try:
            server.wait_until_up()
            created = server.request("POST", "cogym/api/sessions", {
                "task": "todo", "team": "example", "people": ["user", "agent"],
                "idle_seconds": 600, "max_events": 100_000})
            session_id = created["session_id"]
            tally = await flood(server, session_id, args)
            events = applied_events(server, session_id)
            session = server.request("GET", f"cogym/api/sessions/{session_id}")
            report(args, settings, tally, events, session)
        finally:
            server.stop()


if __name__ == "__main__":
    asyncio.run(main())
