"""``cogym-lab data``: what task data is present, what is missing and how to get it.

For the Related Work task it also reads the paper corpus (both files, supersede rule applied)
and reports how many papers it holds and how many of the papers the tasks ask to cite (the
``RP`` hidden requirements) it holds by normalised exact title (about ten seconds; skip it with
``--no-coverage``). See ``docs/related-work-corpus.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from cogym_lab import datasets


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
            "" if state.present else ("manual" if item.manual else "--download"))
    console.print(table)


def _print_missing(states: list[datasets.ItemStatus], command: str) -> None:
    """How to obtain each missing item, as plain lines (never wrapped into a table cell)."""
    missing = [s for s in states if not s.present]
    if not missing:
        return
    click.echo("\nHow to obtain the missing items:")
    for state in missing:
        item = state.item
        click.echo(f"  {item.path}")
        click.echo(f"      {item.description}. Source: {item.source} ({item.license}).")
        if item.manual:
            click.echo(f"      Manual: get it from {item.homepage} and place it at "
                       f"{state.path}")
        elif item.archive_member:
            click.echo(f"      Run `{command} --task {item.task} --download`, or download "
                       f"{item.url} by hand and unpack its folder {item.archive_member} "
                       f"to {state.path}")
        else:
            click.echo(f"      Run `{command} --task {item.task} --download`, or download "
                       f"{item.url} by hand to {state.path}")


def _print_related_work_corpus(root: Path) -> None:
    """The corpus's paper count and the tasks' title coverage, or why they cannot be given."""
    from cogym_lab.envs.related_work.corpus import CORPUS_FILES
    from cogym_lab.envs.related_work.coverage import title_coverage
    from cogym_lab.envs.related_work.instances import TASKS_FILE, load_tasks

    folder = root / "related_work"
    order = ", then ".join(CORPUS_FILES)
    click.echo(f"\nRelated Work corpus: {order} (a later record replaces the earlier one with "
               "its id and removes the ids in its `supersedes` list).")
    missing = [name for name in (*CORPUS_FILES, TASKS_FILE) if not (folder / name).is_file()]
    if missing:
        click.echo(f"  Paper count and title coverage need {', '.join(missing)} (missing).")
        return
    coverage = title_coverage(load_tasks(root), [folder / name for name in CORPUS_FILES],
                              progress=sys.stderr.isatty())
    click.echo(f"  {coverage.papers:,} papers.")
    click.echo(f"  Papers the tasks ask to cite (RP): {coverage.found} of {coverage.total} "
               f"({coverage.share:.0%}) are in the corpus by normalised exact title (NFKC, "
               "lower case, punctuation and spacing ignored); the simulated user is told the "
               f"other {coverage.total - coverage.found} are not findable offline.")


@click.command("data")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help=f"The data directory (default: ${datasets.DATA_ENV_VAR}, else the user "
                   "cache directory).")
@click.option("--task", "tasks", type=click.Choice(datasets.TASKS), multiple=True,
              help="Only this task (repeatable; default: every task).")
@click.option("--download", "do_download", is_flag=True,
              help="Fetch the missing items that have a public download address.")
@click.option("--no-coverage", "skip_coverage", is_flag=True,
              help="Skip reading the Related Work corpus (its paper count and the title "
                   "coverage of the papers the tasks ask to cite; about ten seconds).")
def data(data_dir: Path | None, tasks: tuple[str, ...], do_download: bool,
         skip_coverage: bool) -> None:
    """Show which task data is present or missing in the data directory, and how to get it.

    With the Related Work task, also how many papers its corpus holds and how many of the
    papers its tasks ask to cite can be found in it. Exits 0 when everything asked for is
    present, 1 otherwise."""
    console = Console(highlight=False)
    if not console.is_terminal:  # piped or captured: no need to wrap paths at 80 columns
        console = Console(highlight=False, width=200)
    root = datasets.data_dir(data_dir)
    origin = {"argument": "from --data-dir", datasets.DATA_ENV_VAR:
              f"from ${datasets.DATA_ENV_VAR}", "cache": "the default cache directory"}[
        datasets.data_dir_origin(data_dir)]
    click.echo(f"Data directory: {root} ({origin})")
    chosen = list(tasks) or list(datasets.TASKS)

    errors: list[str] = []
    if do_download:
        for task in chosen:
            try:
                fetched = datasets.download(task, root, progress=True)
            except datasets.DownloadError as error:
                errors.append(str(error))
            except datasets.DataMissing:
                pass  # manual items: listed below with how to get them
            else:
                if fetched:
                    click.echo(f"{task}: downloaded {len(fetched)} item(s).")

    states = [s for task in chosen for s in datasets.status(root, task)]
    _print_table(console, states)
    if "related_work" in chosen and not skip_coverage:
        _print_related_work_corpus(root)
    command = "cogym-lab data" + (f" --data-dir {root}" if data_dir is not None else "")
    _print_missing(states, command)
    for error in errors:
        click.echo(f"\n{error}", err=True)

    missing = [s for s in states if not s.present]
    if missing:
        click.echo(f"\n{len(missing)} of {len(states)} item(s) missing.")
        click.get_current_context().exit(1)
    click.echo(f"\nAll {len(states)} item(s) present.")
