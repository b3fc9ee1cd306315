"""``cogym-lab study serve``, ``study open`` and ``study export``: a study with people on
JupyterHub or on one Jupyter server."""

from __future__ import annotations

import click

from cogym_lab.studies.design import StudyDesign


def load_design(where: str) -> StudyDesign:
    """A ready design by name, or a design file, checked (a clear error if it is not one)."""
    from cogym_lab.studies.designs import StudyDesignError
    from cogym_lab.studies.designs import load_design as load

    try:
        return load(where)
    except StudyDesignError as error:
        raise click.BadParameter(str(error), param_hint="DESIGN") from None


@click.command("serve")
@click.argument("design")
@click.option("--dir", "study_dir", required=True, type=click.Path(file_okay=False),
              help="The study's folder (created; on a disk every participant's server reaches).")
@click.option("--hub", is_flag=True, help="Write a JupyterHub configuration for the study.")
@click.option("--seed", default=0, show_default=True, help="Seed of the random orders.")
@click.option("--port", default=8000, show_default=True, help="The hub's port.")
@click.option("--ip", default="127.0.0.1", show_default=True, help="The hub's address.")
@click.option("--authenticator", default="dummy", show_default=True,
              help="JupyterHub's authenticator_class (dummy: anyone, for trials).")
@click.option("--spawner", default="simple", show_default=True,
              help="simple (one system user, a home per participant), local (a system user "
                   "per participant) or a spawner class.")
@click.option("--proxy-command", default=None, help="configurable-http-proxy's path, when it "
                                                    "is not on PATH.")
def serve_command(design: str, study_dir: str, hub: bool, seed: int, port: int, ip: str,
                  authenticator: str, spawner: str, proxy_command: str | None) -> None:
    """Set the study DESIGN up in --dir, for JupyterHub (--hub) or one Jupyter server."""
    from cogym_lab.studies.hub.serve import hub_config, server_config, set_up

    try:
        folder = set_up(study_dir, load_design(design), seed=seed)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    if hub:
        path = hub_config(folder, port=port, ip=ip, authenticator=authenticator,
                          spawner=spawner, proxy_command=proxy_command)
        click.echo(f"Study {folder.design().name} set up in {folder.root}.")
        click.echo(f"Start the hub:  jupyterhub -f {path}")
        click.echo(f"Participants log in at http://{ip}:{port}/ and land in the study.")
    else:
        config = server_config(folder)
        click.echo(f"Study {folder.design().name} set up in {folder.root}.")
        click.echo("Serve it on one Jupyter server (each login is one participant; with the "
                   "server's token everyone is the same one):")
        click.echo(f"  JUPYTER_CONFIG_PATH={config} jupyter lab")
        click.echo("then open study.ipynb (written into the server's folder) and run its cell.")
    click.echo(f"Export what participants did:  cogym-lab study export {folder.root} --out DIR")


@click.command("open")
@click.option("--into", default=".", type=click.Path(file_okay=False),
              help="The folder to write study.ipynb into.")
def open_command(into: str) -> None:
    """Write the study's notebook (study.ipynb) for a participant."""
    from cogym_lab.studies.hub.notebook import write_study_notebook

    path = write_study_notebook(into, overwrite=True)
    click.echo(f"Wrote {path}: open it in JupyterLab and run its cell.")


@click.command("export")
@click.argument("study_dir", type=click.Path(file_okay=False, exists=True))
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="The folder for the export's tables.")
def export_command(study_dir: str, out: str) -> None:
    """Write STUDY_DIR's participants, sessions, answers and events as tables (arm human)."""
    from cogym_lab.studies.hub.export import export_study

    try:
        counts = export_study(study_dir, out)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"Wrote {out}: " + ", ".join(f"{n} {name}" for name, n in counts.items()))
