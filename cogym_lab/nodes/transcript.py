"""A readable, live transcript of a session's events, in plain sentences, for the terminal.

Each event is one line: its number and who did what, in the words the panel uses
(:mod:`cogym_lab.core.plain_words`). ``raw=True`` shows the actions as written and who was
told, for debugging.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from cogym_lab.core.actions import ActionSpec
from cogym_lab.core.messages import Event, EventType
from cogym_lab.core.plain_words import describe_event, specs_by_name

_STYLE = {
    EventType.START: "bold cyan", EventType.END: "bold cyan", EventType.MESSAGE: "green",
    EventType.ERROR: "red", EventType.TICK: "dim", EventType.WAIT: "dim", EventType.CLOCK: "dim",
    EventType.EDIT: "dim",
    EventType.CONFIRM_REQUEST: "yellow", EventType.CONFIRM_ACCEPT: "yellow",
    EventType.CONFIRM_REJECT: "yellow", EventType.PAUSE: "magenta", EventType.RESUME: "magenta",
}


def task_action_specs(task: str | None) -> dict[str, ActionSpec]:
    """The registered task's action specs (internal ones too) with the collaboration acts; only
    the acts for a task this installation does not know."""
    from cogym_lab.envs.registry import task_class

    factory = task_class(task) if task else None
    specs = getattr(factory, "_specs", None)
    return specs_by_name(specs.values() if isinstance(specs, dict) else ())


class Transcript:
    """Prints each event as one line (see the module doc). ``task`` names the task whose
    action descriptions the sentences use."""

    def __init__(self, console: Console | None = None, task: str | None = None, *,
                 raw: bool = False) -> None:
        self.console = console or Console(highlight=False)
        self.task = task
        self.raw = raw
        self._specs: dict[str, ActionSpec] | None = None

    @property
    def specs(self) -> dict[str, ActionSpec]:
        if self._specs is None:  # looked up once, when the first event comes
            self._specs = task_action_specs(self.task)
        return self._specs

    def __call__(self, event: Event) -> None:
        if event.type is EventType.CLOCK and not event.reward and not self.raw:
            return  # a clocked game ticks several times a second: only ticks that scored
        self.console.print(self.raw_line(event) if self.raw else self.line(event))

    def line(self, event: Event) -> Text:
        return Text.assemble((f"{event.seq:>4}  ", "dim"),
                             (describe_event(event, self.specs), _STYLE.get(event.type, "")))

    def raw_line(self, event: Event) -> Text:
        actor = event.actor or "env"
        what = event.action or ", ".join(f"{k}={v}" for k, v in event.info.items() if v is not None)
        line = Text.assemble(
            (f"{event.seq:>4} ", "dim"), (f"{actor:>8} ", "bold"),
            (f"{event.type.value:<15} ", _STYLE.get(event.type, "")), what,
            (f"  → {', '.join(event.recipients) or 'nobody'}", "dim"),
        )
        if event.error:
            line.append(f"\n{'':>14}↳ {event.error}", "red")
        return line
