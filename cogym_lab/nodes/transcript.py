"""A readable, live transcript of a session's events for the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from cogym_lab.core.messages import Event, EventType

_STYLE = {
    EventType.START: "bold cyan", EventType.END: "bold cyan", EventType.MESSAGE: "green",
    EventType.ERROR: "red", EventType.TICK: "dim", EventType.WAIT: "dim",
    EventType.CONFIRM_REQUEST: "yellow", EventType.CONFIRM_ACCEPT: "yellow",
    EventType.CONFIRM_REJECT: "yellow", EventType.PAUSE: "magenta", EventType.RESUME: "magenta",
}


class Transcript:
    """Prints each event as one line: sequence number, actor, what happened, who was told."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(highlight=False)

    def __call__(self, event: Event) -> None:
        actor = event.actor or "env"
        what = event.action or ", ".join(f"{k}={v}" for k, v in event.info.items() if v is not None)
        line = Text.assemble(
            (f"{event.seq:>4} ", "dim"), (f"{actor:>8} ", "bold"),
            (f"{event.type.value:<15} ", _STYLE.get(event.type, "")), what,
            (f"  → {', '.join(event.recipients) or 'nobody'}", "dim"),
        )
        if event.error:
            line.append(f"\n{'':>14}↳ {event.error}", "red")
        self.console.print(line)
