"""``cogym-lab data build-corpus``: build the Related Work corpus files from public metadata dumps.

The work is :mod:`cogym_lab.envs.related_work.corpus_build`; this module is its command line,
which the task names in ``RelatedWorkEnv.data_commands`` (``cogym-lab data`` finds it there).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cogym_lab import datasets

__all__ = ["build_corpus_command"]

_DUMP = click.Path(dir_okay=False, path_type=Path)  # existence is checked with a clearer message


@click.command("build-corpus")
@click.option("--arxiv", "arxiv", type=_DUMP, default=None, metavar="PATH",
              help="The arXiv metadata snapshot: one JSON object a line, plain or .gz "
                   "(its computer-science papers are kept).")
@click.option("--acl", "acl", type=_DUMP, default=None, metavar="PATH",
              help="The ACL Anthology BibTeX export with abstracts, plain or .gz "
                   "(anthology+abstracts.bib.gz; papers from 2016 on are kept).")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help=f"The data directory (default: ${datasets.DATA_ENV_VAR}, else the user "
                   "cache directory).")
@click.option("--force", is_flag=True, help="Replace corpus files that are already there.")
@click.pass_context
def build_corpus_command(ctx: click.Context, arxiv: Path | None, acl: Path | None,
                         data_dir: Path | None, force: bool) -> None:
    """Build the Related Work corpus (papers.jsonl.gz and its 2020-2024 supplement) from the
    arXiv metadata snapshot and/or the ACL Anthology BibTeX export (at least one).

    Both files are written under temporary names and renamed into place when complete."""
    from cogym_lab.envs.related_work.corpus_build import DumpError, build_corpus

    if arxiv is None and acl is None:
        raise click.UsageError("Give at least one dump: --arxiv PATH and/or --acl PATH.")
    # `cogym-lab data --data-dir X build-corpus` means the same as giving it here.
    parent = ctx.parent.params.get("data_dir") if ctx.parent is not None else None
    root = datasets.data_dir(data_dir if data_dir is not None else parent)
    try:
        build = build_corpus(root, arxiv=arxiv, acl=acl, force=force,
                             progress=sys.stderr.isatty())
    except (DumpError, FileExistsError) as error:
        raise click.ClickException(str(error)) from None
    click.echo("\n".join(build.summary()))
    click.echo(f"Check it with `cogym-lab data --task related_work --data-dir {root}`; the "
               "search index is rebuilt on the next search (or with --prepare).")
