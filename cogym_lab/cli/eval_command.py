"""``cogym-lab eval``: batch runs, reports over results directories, one session's trajectory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console

from cogym_lab.cli.audit_command import audit_command, validation_sheet_command
from cogym_lab.cli.options import (
    env_args,
    lm_options_saying,
    lm_settings,
    load_team_option,
)
from cogym_lab.core.outcome_class import CLASS_WORDS
from cogym_lab.core.protocol import DEFAULT_PROTOCOL, PROTOCOLS

console = Console(highlight=False)


@click.group("eval")
def eval_group() -> None:
    """Evaluate teams: run batches of sessions, report metrics, show one trajectory."""


def _prices(values: tuple[str, ...]) -> dict[str, tuple[float, float]]:
    """``--price gpt-4o=2.5,10``: dollars per million input and output tokens."""
    prices = {}
    for value in values:
        model, sep, numbers = value.rpartition("=")
        parts = numbers.split(",")
        try:
            if not sep or not model or len(parts) != 2:
                raise ValueError
            prices[model] = (float(parts[0]), float(parts[1]))
        except ValueError:
            raise click.BadParameter(f"expected MODEL=INPUT,OUTPUT (dollars per million "
                                     f"tokens), got {value!r}", param_hint="--price") from None
    return prices


@eval_group.command("run")
@click.option("--task", required=True, help="Task to run (see `cogym-lab tasks`).")
@click.option("--team", default="collaborative", show_default=True,
              help="A ready team (see `cogym-lab teams`) or the path of a team file.")
@click.option("--instances", default="all", show_default=True, metavar="SPEC",
              help="Instances to run: ranges and numbers, e.g. 0:102 (102 excluded), 0,3,5 or "
                   "0:10,50.")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True,
              help="Sessions running at the same time.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Run folder: one directory per instance plus run.json. Run again with the "
                   "same folder to resume.")
@lm_options_saying(
    "Model for every LM (members and the task's tools), or for ROLE (repeatable; 'tools' for "
    "the task's drafting assistant, judges, parsers).",
    "OpenAI-compatible endpoint for every LM, or for ROLE ('tools' too).")
@click.option("--env-arg", multiple=True, metavar="KEY=VALUE",
              help="Argument for every instance of the task.")
@click.option("--idle-seconds", type=click.FloatRange(min=0.01), default=None,
              help="Inactivity before a tick notifies everyone (default: the team's, else 60).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=600.0, show_default=True,
              help="Wall-clock limit for each session, in seconds.")
@click.option("--agent-step-limit", type=click.IntRange(min=1), default=None,
              help="Most steps an agent may take in one session (default: the team's, else 30).")
@click.option("--price", "prices", multiple=True, metavar="MODEL=IN,OUT",
              help="Dollars per million input and output tokens of MODEL, for the running cost.")
@click.option("--protocol", type=click.Choice(sorted(PROTOCOLS)), default=DEFAULT_PROTOCOL,
              show_default=True, help="Scoring protocol: 'cogym' counts and scores as the "
                                      "Co-Gym release's code does and uses the paper's instance "
                                      "sets (docs/evaluation.md names each rule and where it "
                                      "differs); 'cogym_lab' is this project's own.")
@click.option("--trials", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run each instance this many times, each trial with seeds of its own "
                   "(folders 003, 003-t1, ...); the report then gives pass^k.")
@click.option("--interaction", type=click.Choice(["notifications", "turns"]), default=None,
              help="'turns': members act strictly in turn, each woken only on its turn (the "
                   "Co-Gym paper's turn-taking ablation); 'notifications': Co-Gym's protocol "
                   "(default: the team's [session] interaction, else notifications).")
@click.option("--max-in-flight", "max_in_flight", multiple=True, metavar="[KEY=]N",
              help="Most LM requests under way at once, for every endpoint and model, or for "
                   "KEY: a model name or an endpoint URL, whose requests then share N "
                   "(repeatable).")
@click.option("--rpm", "rpm", multiple=True, metavar="[KEY=]N",
              help="Most LM requests started per minute, as --max-in-flight (repeatable).")
@click.option("--engine", type=click.Choice(["inprocess", "ray"]), default="inprocess",
              show_default=True,
              help="Where the sessions run: in this process, or on a Ray cluster (the ray "
                   "extra; see docs/evaluation-runs.md). Results are written here either way.")
@click.option("--workers", type=click.IntRange(min=0), default=None, metavar="N",
              help="With --engine inprocess: run the sessions in N worker processes of this "
                   "machine, each with its own event loop; 0 keeps them on one loop in this "
                   "process. Default: one loop up to 250 sessions at once (--concurrency), "
                   "above that one process per 250, up to the cores.")
@click.option("--address", default=None, metavar="ADDRESS",
              help="With --engine ray: the cluster, 'auto' (one running on this machine), "
                   "HOST:PORT (the head, from a node of the cluster) or ray://HOST:PORT (Ray "
                   "Client). Default: RAY_ADDRESS, else the cluster last started here, else a "
                   "new one in this process.")
@click.option("--sessions-per-actor", type=click.IntRange(min=1), default=None,
              help="With --engine ray: sessions each actor runs at once (default 8).")
@click.option("--actors-per-node", type=click.IntRange(min=1), default=None,
              help="With --engine ray: actors started on each node with CPUs (default 1).")
@click.option("--storage", default=None, metavar="FOLDER",
              help="With --engine ray: the run folder as the workers see it (a shared file "
                   "system, absolute path or file:// URL); they then write the sessions there "
                   "themselves instead of sending them back.")
@click.option("--allow-sample", is_flag=True,
              help="Run on the small sample of the task's data that comes with cogym_lab when "
                   "the full data is missing (the cogym protocol refuses it otherwise: its "
                   "numbers are not comparable with the papers'). run.json and the report mark "
                   "such a run.")
@click.option("--retry-failed", is_flag=True,
              help="Run again only the sessions of OUT that ended for a cause outside the team "
                   "(an LM that failed past its retries, a crash); see docs/evaluation.md.")
@click.option("--user-traits", default="", metavar="TRAIT,...",
              help="Traits of the team's simulated users for the whole batch (impatient, "
                   "terse, confused, sceptical, forgetful; docs/studies.md).")
@click.option("--no-progress", is_flag=True, help="Do not draw the progress bar.")
def run_command(task: str, team: str, instances: str, concurrency: int, out: Path,
                models: tuple[str, ...], base_urls: tuple[str, ...], env_arg: tuple[str, ...],
                idle_seconds: float | None, timeout: float, agent_step_limit: int | None,
                prices: tuple[str, ...], protocol: str, trials: int,
                interaction: str | None, max_in_flight: tuple[str, ...], rpm: tuple[str, ...],
                engine: str, workers: int | None, address: str | None,
                sessions_per_actor: int | None,
                actors_per_node: int | None, storage: str | None, allow_sample: bool,
                retry_failed: bool, user_traits: str, no_progress: bool) -> None:
    """Run TEAM on many instances of TASK at once and write their results under OUT."""
    from cogym_lab.eval.batch.disk import DiskFull
    from cogym_lab.eval.batch.engines import EngineError
    from cogym_lab.eval.batch.runner import run
    from cogym_lab.lm import LMNotConfigured
    from cogym_lab.lm.limits import parse_limits

    try:
        limits = parse_limits(max_in_flight, rpm)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None
    team_config = load_team_option(team)
    if user_traits:
        from cogym_lab.teams.build import with_traits

        try:
            team_config = with_traits(team_config, user_traits.split(","))
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--user-traits") from None
    try:
        summary = run(task, team_config, instances, out=out, concurrency=concurrency,
                      lm_arguments=lm_settings(models, base_urls),
                      env_args=env_args(env_arg), idle_seconds=idle_seconds, timeout=timeout,
                      agent_step_limit=agent_step_limit, prices=_prices(prices),
                      protocol=protocol, progress=not no_progress, trials=trials,
                      interaction=interaction, limits=None if limits.is_empty else limits,
                      engine=engine, address=address, sessions_per_actor=sessions_per_actor,
                      actors_per_node=actors_per_node, storage=storage,
                      allow_sample=allow_sample, retry_failed=retry_failed, workers=workers)
    except (LMNotConfigured, EngineError, ImportError, DiskFull) as error:
        raise click.ClickException(str(error)) from None
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    counts = summary.counts
    ran = summary.invocations[-1].ran
    turns = " · strict turns" if summary.session_config.get("interaction") == "turns" else ""
    turns += " · sample data" if summary.data == "sample" else ""
    console.print(f"[bold]{task} · {summary.team} · protocol {summary.protocol}{turns}[/]: "
                  f"{counts.finished}/{counts.total} sessions "
                  f"finished ({ran} run now, {counts.skipped} already done), {counts.failed} "
                  f"failed, {counts.delivered} delivered")
    cost = "" if summary.cost_usd is None else f", ${summary.cost_usd:.4f}"
    console.print(f"Tokens: {summary.tokens.total_tokens:,} (prompt "
                  f"{summary.tokens.prompt_tokens:,}, completion "
                  f"{summary.tokens.completion_tokens:,}){cost}")
    if counts.completed != counts.finished + counts.failed:
        console.print(f"Not counted: {counts.infrastructure} infrastructure, "
                      f"{counts.simulator_error} simulator error, {counts.agent_failure} agent "
                      f"failure ({counts.completed} completed); `--retry-failed` runs them again")
    for entry in summary.not_counted:
        trial = f" trial {entry.trial}" if entry.trial else ""
        label = CLASS_WORDS[entry.counted_class or "infrastructure"]
        console.print(f"[red]{label}[/] instance {entry.instance}{trial}: "
                      f"{entry.cause or entry.error or entry.end_reason}", soft_wrap=True)
    console.print(f"Results: {out} (run.json)")


@eval_group.command("report")
@click.argument("dirs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder for the tables (CSV) and plots (PNG).")
@click.option("--baseline", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=None, help="Run folder of the autonomous baseline to compare against.")
@click.option("--judge", "judge_model", default=None, metavar="MODEL",
              help="Model of the LM judges (initiative, win rate, ...); without one, the "
                   "judged metrics are left out.")
@click.option("--judge-base-url", default=None, metavar="URL",
              help="OpenAI-compatible endpoint of the judge model.")
@click.option("--success-threshold", type=click.FloatRange(0, 1), default=None,
              help="Task performance a delivered session needs to succeed, for pass^k over "
                   "repeated trials (default 0.8).")
@click.option("--validation", "validation", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A filled-in simulator validation sheet (CSV from `eval validation-sheet`); "
                   "repeatable, one per rater.")
@click.option("--progress", "progress", type=click.Choice(["user", "judge"]), default="user",
              show_default=True,
              help="Whose per-round progress ratings the usability drop uses: the simulated "
                   "user's own (rate_progress; the judge's where it gave none), or the judge's.")
@click.option("--include-failures", is_flag=True,
              help="Count the sessions that ended for a cause outside the team (an LM that "
                   "failed past its retries, a failed judge, a crash) in delivery, performance "
                   "and pass^k, as they ended; by default they are counted apart.")
def report_command(dirs: tuple[Path, ...], out: Path | None, baseline: Path | None,
                   judge_model: str | None, judge_base_url: str | None,
                   success_threshold: float | None, validation: tuple[Path, ...],
                   progress: str, include_failures: bool) -> None:
    """Print paper-style tables for run (or session) folders DIRS; save CSVs and plots to OUT."""
    from cogym_lab.eval import report

    judge: dict[str, Any] | None = None
    if judge_model:
        judge = {"model": judge_model, **({"base_url": judge_base_url} if judge_base_url
                                          else {})}
    try:
        threshold = {} if success_threshold is None else {
            "success_threshold": success_threshold}
        result = report(list(dirs), judge=judge, baseline=baseline, out=out,
                        validation=list(validation), progress=progress,
                        include_failures=include_failures, **threshold)
    except (FileNotFoundError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    click.echo(result.to_text())
    if out is not None:
        console.print(f"Tables and plots: {out}")


@eval_group.command("show")
@click.argument("session_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
def show_command(session_dir: Path) -> None:
    """Print the trajectory of the session in SESSION_DIR, readably."""
    from cogym_lab.eval import show

    try:
        click.echo(show(session_dir))
    except (FileNotFoundError, ValueError) as error:
        raise click.ClickException(str(error)) from None


@eval_group.command("view")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--html", "html_out", type=click.Path(dir_okay=False, path_type=Path),
              required=True, help="The HTML file to write (it opens in any browser).")
@click.option("--session", default=None, metavar="NAME",
              help="Which session of a run folder (e.g. 003); default: the first.")
def view_command(folder: Path, html_out: Path, session: str | None) -> None:
    """Write the trajectory viewer of a session (FOLDER, or one session of the run FOLDER) as
    one self-contained HTML file."""
    from cogym_lab.widgets.trajectory_viewer import view

    try:
        viewer = view(folder, session=session)
        written = viewer.export_html(html_out)
    except (FileNotFoundError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    events = len(viewer.trajectory.payload.events) if viewer.trajectory else 0
    console.print(f"{viewer.session}: {events} events -> {written} "
                  f"({written.stat().st_size / 1024:.0f} KiB)")
    if len(viewer.sessions) > 1:
        console.print(f"{len(viewer.sessions)} sessions in {folder}; pick another with "
                      f"--session ({', '.join(viewer.sessions[:5])}"
                      f"{', …' if len(viewer.sessions) > 5 else ''})")


@eval_group.command("export")
@click.argument("dirs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--format", "format_", type=click.Choice(["jsonl", "inspect"]), default="jsonl",
              show_default=True,
              help="jsonl: one decision record per line, for training. inspect: an Inspect AI "
                   "log per run, one sample per session, for `inspect view` (needs the "
                   "'inspect' extra).")
@click.option("--out", type=click.Path(path_type=Path), required=True,
              help="jsonl: the file to write. inspect: a folder that gets one .eval log per "
                   "run, or, for one run, the log file itself (.eval, or .json for Inspect's "
                   "JSON format).")
@click.option("--role", "roles", multiple=True, metavar="ROLE",
              help="Export only this role's decisions (repeatable; jsonl only).")
@click.option("--kind", "kinds", multiple=True, type=click.Choice(["agent", "user", "person"]),
              help="Export only members of this kind (repeatable; jsonl only).")
@click.option("--no-progress", is_flag=True, help="Do not draw the progress bar.")
def export_command(dirs: tuple[Path, ...], format_: str, out: Path, roles: tuple[str, ...],
                   kinds: tuple[str, ...], no_progress: bool) -> None:
    """Write the sessions under DIRS out: each member's decisions as (context, action, outcome)
    records, for training collaborative agents (jsonl), or each run as an Inspect AI log
    (inspect)."""
    if format_ == "inspect":
        if roles or kinds:
            raise click.UsageError("--role and --kind choose decisions for --format jsonl; an "
                                   "Inspect log holds whole sessions")
        _export_inspect(dirs, out)
        return
    from cogym_lab.eval.training_export import export

    if out.is_dir():
        raise click.BadParameter(f"{out} is a folder; name the file to write", param_hint="--out")
    try:
        summary = export(list(dirs), out, format=format_, roles=roles or None,
                         kinds=kinds or None, progress=not no_progress)
    except (FileNotFoundError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    kinds_text = ", ".join(f"{count} {kind}" for kind, count in sorted(summary.by_kind.items()))
    console.print(f"{summary.records} decisions from {summary.sessions} sessions"
                  f"{f' ({kinds_text})' if kinds_text else ''} -> {summary.path}")
    for folder, why in summary.skipped.items():
        console.print(f"[yellow]skipped[/] {folder}: {why}")


def _export_inspect(dirs: tuple[Path, ...], out: Path) -> None:
    from cogym_lab.eval.inspect_log import export_inspect

    try:
        summary = export_inspect(list(dirs), out)
    except (FileNotFoundError, ValueError, ImportError) as error:  # ImportError: no extra
        raise click.ClickException(str(error)) from None
    for path in summary.paths:
        console.print(f"Inspect log -> {path}", soft_wrap=True)
    console.print(f"{summary.sessions} sessions in {len(summary.paths)} "
                  f"log{'s' if len(summary.paths) != 1 else ''}; open with `inspect view "
                  f"--log-dir {summary.paths[0].parent}`", soft_wrap=True)
    for folder, why in summary.skipped.items():
        console.print(f"[yellow]skipped[/] {folder}: {why}")


@eval_group.command("noise")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--repeats", type=click.IntRange(min=2), default=3, show_default=True,
              help="Gradings of each outcome and reruns of each session.")
@click.option("--no-judge", is_flag=True, help="Do not re-grade the outcomes.")
@click.option("--no-agent", is_flag=True, help="Do not rerun the sessions.")
@lm_options_saying(
    "Model instead of the one the sessions recorded, for every LM or ROLE.",
    "Endpoint instead of the one the sessions recorded, for every LM or ROLE.")
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True,
              help="Gradings and reruns at the same time.")
@click.option("--idle-seconds", type=click.FloatRange(min=0.01), default=None,
              help="Inactivity before a rerun's tick (default: as the run had it).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=None,
              help="Wall-clock limit of each rerun, in seconds (default: as the run had it).")
@click.option("--no-progress", is_flag=True, help="Do not draw the progress bar.")
def noise_command(run_dir: Path, repeats: int, no_judge: bool, no_agent: bool,
                  models: tuple[str, ...], base_urls: tuple[str, ...], concurrency: int,
                  idle_seconds: float | None, timeout: float | None, no_progress: bool) -> None:
    """Split RUN_DIR's run-to-run noise: re-grade each saved outcome (judge noise) and rerun
    each session against its user's logged turns with new agent seeds (agent noise). Writes
    RUN_DIR/noise/noise.json, which `eval report` reads."""
    from cogym_lab.eval.batch.noise import study_noise
    from cogym_lab.lm import LMNotConfigured

    limits = {k: v for k, v in (("idle_seconds", idle_seconds), ("timeout", timeout))
              if v is not None}
    try:
        study = study_noise(run_dir, repeats=repeats, judge=not no_judge, agent=not no_agent,
                            lm_arguments=lm_settings(models, base_urls),
                            concurrency=concurrency, session=limits,
                            progress=not no_progress)
    except (FileNotFoundError, LMNotConfigured, ValueError) as error:
        raise click.ClickException(str(error)) from None
    summary = study.summary

    def shown(value: float | None) -> str:
        return "-" if value is None else f"{value:.4f}"

    console.print(f"[bold]{run_dir} · noise over {repeats} repeats[/]: "
                  f"{len(study.judge)} outcomes re-graded, {len(study.agent)} sessions rerun")
    console.print(f"within-instance variance {shown(summary.within)}; judge "
                  f"{shown(summary.judge)}, agent (judge included) {shown(summary.agent)}")
    console.print(f"shares: judge {shown(summary.judge_share)}, agent "
                  f"{shown(summary.agent_share)}, rest (simulated user and interplay) "
                  f"{shown(summary.rest_share)}")
    for note in study.notes:
        console.print(f"- {note}")
    console.print(f"Results: {run_dir / 'noise' / 'noise.json'}")


@eval_group.command("regrade")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--no-judges", is_flag=True,
              help="Re-grade with the deterministic graders only (no LM): compare only the "
                   "scores they give.")
@lm_options_saying(
    "Model of the task's judge instead of the one the sessions recorded (ROLE: '*' or "
    "'tools').",
    "Endpoint of the task's judge instead of the one the sessions recorded.")
def regrade_command(run_dir: Path, no_judges: bool, models: tuple[str, ...],
                    base_urls: tuple[str, ...]) -> None:
    """Re-grade the stored outcomes of RUN_DIR with today's graders and write the difference
    (old and new scores, changed versions) to RUN_DIR/regrade.json; nothing else is changed."""
    from cogym_lab.eval.regrade import REGRADE_FILE, regrade
    from cogym_lab.lm import LMNotConfigured

    try:
        result = regrade(run_dir, judges=not no_judges,
                         lm_arguments=lm_settings(models, base_urls))
    except (FileNotFoundError, LMNotConfigured, ValueError) as error:
        raise click.ClickException(str(error)) from None
    click.echo(result.table())
    console.print(f"Results: {run_dir / REGRADE_FILE}")


# The simulated-user audit and the simulator validation sheet (cli/audit_command.py).
eval_group.add_command(audit_command)
eval_group.add_command(validation_sheet_command)
