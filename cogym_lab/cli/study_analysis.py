"""``cogym-lab study analyse EXPORT_DIR`` and ``cogym-lab study compare HUMAN_DIR SIM_DIR``:
one arm's measures and tests, and the two arms side by side with the simulator's fidelity."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

_FOLDER = click.Path(exists=True, file_okay=False, path_type=Path)


def _options(design: str | None, compared: tuple[str, ...], composites: tuple[str, ...],
             borda_lowest: int, export_dir: Path) -> Any:
    """The analysis options: the design's (``--design``, else the ready design the export
    names), with what the command line says on top."""
    from cogym_lab.studies.analysis import AnalysisOptions, load_design, options_from_design
    from cogym_lab.studies.designs import ready_designs
    from cogym_lab.studies.measures import DEFAULT_COMPOSITES

    settings: dict[str, Any] = {"borda_lowest": borda_lowest}
    if compared:
        settings["compared"] = compared
    if composites:
        defined = dict(DEFAULT_COMPOSITES)
        for text in composites:
            name, _, items = text.partition("=")
            parts = tuple(i.strip() for i in items.split(",") if i.strip())
            if not name.strip() or len(parts) < 2:
                raise click.BadParameter(f"{text!r}: expected NAME=ITEM,ITEM[,ITEM...]",
                                         param_hint="--composite")
            defined[name.strip()] = parts
        settings["composites"] = defined
    if design is None:
        named = _design_named_in(export_dir)
        if named in ready_designs():
            return options_from_design(load_design(named), **settings)
        return AnalysisOptions(**settings)
    return options_from_design(load_design(design), **settings)


def _design_named_in(export_dir: Path) -> str:
    """The design an export's ``study.json`` names ("" when it names none)."""
    import json

    try:
        meta = json.loads((export_dir / "study.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(meta.get("design", "")) if isinstance(meta, dict) else ""


def _analysis_options(func: Any) -> Any:
    func = click.option("--borda-lowest", type=click.IntRange(0, 1), default=1,
                        show_default=True,
                        help="Points of the last place in a Borda count: 1 as DPT-Agent "
                             "counts (first of four gets 4), 0 to count from zero.")(func)
    func = click.option("--composite", "composites", multiple=True, metavar="NAME=A,B,C",
                        help="A composite rating: the mean of these Likert items (default: "
                             "Cocoa's utility). Repeatable.")(func)
    func = click.option("--compare", "compared", multiple=True, metavar="MEASURE",
                        help="Test only these ratings (Likert items, composites, task_load); "
                             "they make the Bonferroni family. Repeatable; default: all.")(func)
    return click.option("--design", type=str, default=None,
                        help="The design (a ready name or a TOML file): its subjects, tests "
                             "and scales (default: the ready design the export names).")(func)


def _fail(error: Exception) -> None:
    raise click.ClickException(str(error)) from None


@click.command("analyse")
@click.argument("export_dir", type=_FOLDER)
@_analysis_options
@click.option("--no-plots", is_flag=True, help="Write the tables only.")
def analyse_command(export_dir: Path, design: str | None, compared: tuple[str, ...],
                    composites: tuple[str, ...], borda_lowest: int, no_plots: bool) -> None:
    """Analyse one arm's EXPORT_DIR: analysis.md, analysis.csv and plots, written into it."""
    from cogym_lab.studies.analysis import analyse, write_analysis
    from cogym_lab.studies.export_reader import ExportError

    try:
        analysis = analyse(export_dir, _options(design, compared, composites, borda_lowest,
                                                    export_dir))
        written = write_analysis(analysis, borda_lowest=borda_lowest, plots=not no_plots)
    except ExportError as error:
        _fail(error)
        return
    click.echo(f"{len(analysis.rows)} figures ({analysis.subjects} subjects); wrote "
               + ", ".join(p.name for p in written) + f" in {export_dir}")


@click.command("compare")
@click.argument("human_dir", type=_FOLDER)
@click.argument("sim_dir", type=_FOLDER)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder for compare.md, compare.csv and fidelity.png (default: SIM_DIR).")
@_analysis_options
@click.option("--share-margin", type=click.FloatRange(0, 1), default=0.10, show_default=True,
              help="How far above the people a share must be to flag the simulator.")
@click.option("--rating-margin", type=click.FloatRange(0), default=0.5, show_default=True,
              help="The same for a rating, in scale points.")
@click.option("--count-margin", type=click.FloatRange(0), default=0.5, show_default=True,
              help="The same for a count per session (interruptions).")
@click.option("--no-plots", is_flag=True, help="Write the tables only.")
def compare_command(human_dir: Path, sim_dir: Path, out: Path | None, design: str | None,
                    compared: tuple[str, ...], composites: tuple[str, ...], borda_lowest: int,
                    share_margin: float, rating_margin: float, count_margin: float,
                    no_plots: bool) -> None:
    """Set the human arm (HUMAN_DIR) and the simulated arm (SIM_DIR) side by side per condition,
    with a fidelity table that warns where the simulator is far more cooperative."""
    from cogym_lab.studies.compare import Margins, compare_arms, write_comparison
    from cogym_lab.studies.export_reader import ExportError

    try:
        comparison = compare_arms(human_dir, sim_dir,
                                  _options(design, compared, composites, borda_lowest,
                                           human_dir),
                                  Margins(share_margin, rating_margin, count_margin))
        written = write_comparison(comparison, out or sim_dir, plots=not no_plots)
    except ExportError as error:
        _fail(error)
        return
    for flagged in comparison.flagged:
        click.echo(f"warning: too cooperative: {flagged['figure']} ({flagged['label']}): "
                   f"simulated {flagged['simulated']:.3g}, people {flagged['human']:.3g}",
                   err=True)
    click.echo(f"{len(comparison.fidelity)} fidelity figures, {len(comparison.flagged)} "
               f"flagged; wrote " + ", ".join(p.name for p in written)
               + f" in {out or sim_dir}")
