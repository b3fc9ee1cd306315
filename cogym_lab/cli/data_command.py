"""``cogym-lab data``: what task data is present, what is missing and how to get it.

Each task declares its files (``data_files``) and may report more about them (``data_report``,
e.g. the Related Work task reads its paper corpus and reports how many papers it holds and how
many of the papers its tasks ask to cite; about ten seconds, skipped with ``--no-coverage``).
The command asks the registered tasks (:mod:`cogym_lab.envs.task_data`) and names none itself.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from cogym_lab import datasets
from cogym_lab.envs import task_data
from cogym_lab.envs.registry import load_object


def _short(item: datasets.DataItem) -> str:
    """The item's path below its task folder (the task is its own column)."""
    return item.path.removeprefix(item.task + "/")


def _print_table(console: Console, states: list[datasets.ItemStatus]) -> None:
    table = Table(show_lines=False, highlight=False)
    table.add_column("Task")
    table.add_column("Item", overflow="fold")
    table.add_column("Status")
    table.add_column("Size", justify="right")
    table.add_column("Get it")
    for state in states:
        item = state.item
        table.add_row(
            item.task, _short(item),
            "[green]present[/green]" if state.present else "[red]missing[/red]",
            datasets.format_size(state.size) if state.present else "-",
            "" if state.present else ("build" if item.build else
                                      "manual" if item.manual else "download"))
    console.print(table)


def _print_missing(states: list[datasets.ItemStatus], command: str) -> None:
    """How to obtain each missing item, as plain lines (never wrapped into a table cell)."""
    missing = [s for s in states if not s.present]
    if not missing:
        return
    click.echo("\nHow to obtain the missing items:")
    for state in missing:
        item = state.item
        fetch = command.replace("cogym-lab data", f"cogym-lab data download {item.task}", 1)
        click.echo(f"  {item.path}")
        click.echo(f"      {item.description}. Source: {item.source} ({item.license}).")
        if item.build:
            # `command` carries the --data-dir this run was given, if any: so does the build.
            click.echo(f"      Build it: run `{item.build}{command.removeprefix('cogym-lab data')}`"
                       " (see docs/related-work-corpus.md).")
        elif item.manual:
            click.echo(f"      Manual: get it from {item.homepage} and place it at "
                       f"{state.path}")
        elif item.archive_member:
            click.echo(f"      Run `{fetch}`, or download "
                       f"{item.url} by hand and unpack its folder {item.archive_member} "
                       f"to {state.path}")
        else:
            click.echo(f"      Run `{fetch}`, or download {item.url} by hand to {state.path}")


def _print_changed(items: list[datasets.DataItem], root: Path) -> None:
    """A note for each present file that is not the one its task pinned (its SHA-256 differs):
    hashing the declared files takes a fraction of a second."""
    by_task: dict[str, list[datasets.DataItem]] = {}
    for item in items:
        by_task.setdefault(item.task, []).append(item)
    for task, declared in by_task.items():
        fetch = datasets.download_command(task, root, where=datasets.asked_from())
        for item, found in datasets.verify_present(declared, root):
            click.echo(f"\nNote: {item.path} is not the file its source pins (SHA-256 "
                       f"{found[:12]}..., expected {(item.sha256 or '')[:12]}...). To replace "
                       f"it, delete it and run `{fetch}`.")


def _print_samples(data_dir: Path | None, tasks: list[str],
                   states: list[datasets.ItemStatus]) -> None:
    """For each task with missing data that carries a sample: whether its sessions read that
    sample instead (nobody chose a data directory), and how to get the full data."""
    for task in tasks:
        sample = task_data.data_sample(task)
        if sample is None or all(s.present for s in states if s.item.task == task):
            continue
        if datasets.uses_sample(task_data.data_files(task), sample, data_dir):
            click.echo(f"\n{task}: its data is missing here, so sessions use the sample that "
                       f"comes with cogym_lab ({sample.summary}). Numbers from it are not "
                       "comparable with the papers' (`cogym-lab eval run` refuses it under the "
                       "cogym protocol without --allow-sample). For the full data, run "
                       + " and ".join(f"`{command}`" for command in sample.full_data_commands())
                       + ".")
        else:
            click.echo(f"\n{task}: a small sample of its data comes with cogym_lab, but "
                       "sessions read it only when no data directory is chosen (no --data-dir, "
                       f"no ${datasets.DATA_ENV_VAR}): with this one they need the missing "
                       "files below.")


class _TaskWithData(click.Choice):
    """A registered task that declares data. The names are looked up when first needed: doing
    it at import would load every task's code for any ``cogym-lab`` command."""

    name = "task"

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        return task_data.tasks_with_data()

    @choices.setter
    def choices(self, _value: object) -> None:
        """Choice's constructor sets the names; they come from the registry instead."""


def _print_reports(root: Path, tasks: list[str]) -> None:
    """What each task says about its data beyond present or missing (slow: a corpus, say)."""
    for task in tasks:
        lines = task_data.data_report(task, root, progress=sys.stderr.isatty())
        if lines:
            click.echo("\n" + "\n".join(lines))


def _prepare(root: Path | None, tasks: list[str]) -> None:
    """Build each task's first-use work ahead of time, with its progress on stderr: minutes are
    never silent. ``root`` None: for what the tasks read when nobody chose a data directory
    (their bundled samples)."""
    for task in tasks:
        for line in task_data.prepare_data(task, root, progress=True):
            click.echo(line)


#: The report's options: on ``cogym-lab data`` itself and on each of its verbs, so they may come
#: before or after the words (``data --data-dir X download T`` = ``data download T --data-dir X``).
_OPTIONS = [
    click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                 help=f"The data directory (default: ${datasets.DATA_ENV_VAR}, else the user "
                      "cache directory)."),
    click.option("--task", "tasks", type=_TaskWithData(), multiple=True,
                 help="Only this task (repeatable; default: every task that reads data)."),
    click.option("--download", "do_download", is_flag=True,
                 help="Fetch the missing items that have a public download address."),
    click.option("--no-coverage", "skip_coverage", is_flag=True,
                 help="Skip the tasks' slow data reports (e.g. reading the Related Work corpus "
                      "for its paper count and the title coverage of the papers the tasks ask "
                      "to cite; about ten seconds)."),
    click.option("--prepare", "do_prepare", is_flag=True,
                 help="Also build what sessions would build on first use (the Related Work "
                      "task's paper search index: about a minute, once per corpus version), so "
                      "a first search answers at once."),
]


def _report_options(command: Callable[..., None]) -> Callable[..., None]:
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


class _DataGroup(click.Group):
    """``cogym-lab data``: a report by default. Its words are commands (``download``,
    ``prepare``, ``build-corpus``), and a first word that names a task reports on that task."""

    def _task_commands(self) -> dict[str, click.Command]:
        """The commands tasks add (``CoEnv.data_commands``), loaded when first asked for."""
        commands = {}
        for path in task_data.data_commands():
            command: click.Command = load_object(path)
            commands[command.name or path] = command
        return commands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *self._task_commands()]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return super().get_command(ctx, name) or self._task_commands().get(name)

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        tasks = task_data.tasks_with_data()
        if args and self.get_command(ctx, args[0]) is None:
            if args[0] in tasks:
                return "report", self.commands["report"], args
            verbs = [name for name in self.list_commands(ctx)
                     if not getattr(self.get_command(ctx, name), "hidden", False)]
            raise click.UsageError(f"{args[0]!r} is not a task with data (tasks: "
                                   f"{', '.join(tasks)}) nor a command ({', '.join(verbs)}).",
                                   ctx)
        return super().resolve_command(ctx, args)


@click.group("data", cls=_DataGroup, invoke_without_command=True)
@_report_options
@click.pass_context
def data(ctx: click.Context, data_dir: Path | None, tasks: tuple[str, ...], do_download: bool,
         skip_coverage: bool, do_prepare: bool) -> None:
    """Show which task data is present or missing in the data directory, and how to get it.

    `cogym-lab data download TASK` is `cogym-lab data --task TASK --download` (and `prepare`
    is `--prepare`); `cogym-lab data TASK` reports on that task only; `cogym-lab data
    build-corpus` builds the Related Work corpus from public dumps. Tasks may say more about
    their data (e.g. the Related Work task: how many papers its corpus holds and how many of
    the papers its tasks ask to cite can be found in it). Exits 0 when everything asked for is
    present, 1 otherwise."""
    if ctx.invoked_subcommand is None:
        _report(data_dir, tasks, do_download, skip_coverage, do_prepare)


def _verb(name: str, summary: str, **flags: bool) -> None:
    """A word of ``cogym-lab data`` that stands for the report with ``flags`` on."""

    @data.command(name, help=summary, hidden=name == "report")
    @click.argument("named", nargs=-1, type=_TaskWithData(), metavar="[TASK]...")
    @_report_options
    @click.pass_context
    def verb(ctx: click.Context, named: tuple[str, ...], **options: Any) -> None:
        given = ctx.parent.params if ctx.parent is not None else {}
        merged: dict[str, Any] = {key: value or given.get(key)
                                  for key, value in options.items()}
        merged.update(dict.fromkeys(flags, True))
        merged["tasks"] = tuple(dict.fromkeys((*(merged["tasks"] or ()), *named)))
        _report(**merged)


_verb("download", "Fetch the missing items of TASK (default: every task) that have a public "
      "download address, then report.", do_download=True)
_verb("prepare", "Build what sessions of TASK would build on first use (the paper search "
      "index), then report.", do_prepare=True)
_verb("report", "Report on TASK only.")


def _report(data_dir: Path | None, tasks: tuple[str, ...], do_download: bool,
            skip_coverage: bool, do_prepare: bool) -> None:
    """The report (and the downloads and preparation asked for)."""
    console = Console(highlight=False)
    if not console.is_terminal:  # piped or captured: no need to wrap paths at 80 columns
        console = Console(highlight=False, width=200)
    root = datasets.data_dir(data_dir)
    origin = {"argument": "from --data-dir", datasets.DATA_ENV_VAR:
              f"from ${datasets.DATA_ENV_VAR}", "cache": "the default cache directory"}[
        datasets.data_dir_origin(data_dir)]
    click.echo(f"Data directory: {root} ({origin})")
    chosen = list(tasks) or list(task_data.tasks_with_data())

    errors: list[str] = []
    if do_download:
        for task in chosen:
            try:
                fetched = datasets.download(task_data.data_files(task), root, progress=True,
                                            where=datasets.asked_from())
            except datasets.DownloadError as error:
                errors.append(str(error))
            except datasets.DataMissing:
                pass  # manual items: listed below with how to get them
            else:
                if fetched:
                    click.echo(f"{task}: downloaded {len(fetched)} item(s).")

    states = [s for task in chosen for s in datasets.status(task_data.data_files(task), root)]
    _print_table(console, states)
    _print_changed([item for task in chosen for item in task_data.data_files(task)], root)
    if not skip_coverage:
        _print_reports(root, chosen)
    command = "cogym-lab data" + (f" --data-dir {shlex.quote(str(root))}"
                                  if data_dir is not None else "")
    _print_samples(data_dir, chosen, states)
    complete = [t for t in chosen if not any(s.item.task == t and not s.present
                                             for s in states)]
    # Tasks whose sessions read their bundled sample (nobody chose a data directory).
    on_sample = [t for t in chosen if t not in complete and datasets.uses_sample(
        task_data.data_files(t), task_data.data_sample(t), data_dir)]
    # Preparing is for what sessions will read: a task on its sample needs no file list (the
    # sample's paragraph names the commands) and does not make the command fail.
    needed = [s for s in states if not (do_prepare and s.item.task in on_sample)]
    _print_missing(needed, command)

    missing = [s for s in states if not s.present]
    if do_prepare:
        # A task with missing data is skipped (it could not build anything), unless its
        # sessions would read its bundled sample instead: then that is prepared.
        _prepare(root, complete)
        _prepare(None, on_sample)
    if missing:
        click.echo(f"\n{len(missing)} of {len(states)} item(s) missing.")
    # Last: each ends with the command that retries the download.
    for failure in errors:
        click.echo(f"\n{failure}", err=True)
    if errors or any(not s.present for s in needed):
        click.get_current_context().exit(1)
    if missing:
        click.echo(f"Sessions of {', '.join(on_sample)} read the bundled sample, prepared.")
        return
    click.echo(f"\nAll {len(states)} item(s) present.")

