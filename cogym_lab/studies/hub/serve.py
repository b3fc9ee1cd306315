"""Setting a study up to be served: its folder, the Jupyter configuration every participant's
server reads, and (for JupyterHub) the hub's own configuration.

``STUDY_DIR/jupyter-config/jupyter_server_config.json`` enables the ``cogym_lab`` and
``cogym_lab.studies.hub`` extensions, names the study folder and puts the sessions' results in
``STUDY_DIR/sessions`` (where the export reads them). A server started with
``JUPYTER_CONFIG_PATH`` pointing there serves the study; the hub's spawner sets it for every
participant's server.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from cogym_lab.studies.design import StudyDesign
from cogym_lab.studies.hub.notebook import NOTEBOOK_NAME
from cogym_lab.studies.hub.store import StudyFolder

CONFIG_DIR = "jupyter-config"
HUB_DIR = "hub"
#: Spawners by short name: JupyterHub's own (a system user per participant) or the simple one
#: (one system user, a home folder per participant: for trials and tests).
SPAWNERS = {"local": "jupyterhub.spawner.LocalProcessSpawner",
            "simple": "jupyterhub.spawner.SimpleLocalProcessSpawner"}


def server_config(folder: StudyFolder) -> Path:
    """Write the participants' servers' configuration; the folder to put on
    ``JUPYTER_CONFIG_PATH``."""
    target = folder.root / CONFIG_DIR
    target.mkdir(parents=True, exist_ok=True)
    (target / "jupyter_server_config.json").write_text(json.dumps({
        "ServerApp": {"jpserver_extensions": {"cogym_lab": True, "cogym_lab.studies.hub": True}},
        "CogymLab": {"results_dir": str(folder.sessions_dir.resolve())},
        "CogymStudy": {"study_dir": str(folder.root.resolve())},
    }, indent=2))
    return target


def hub_config(folder: StudyFolder, *, port: int = 8000, ip: str = "127.0.0.1",
               authenticator: str = "dummy", spawner: str = "simple",
               proxy_command: str | None = None, homes: Path | None = None) -> Path:
    """Write ``STUDY_DIR/hub/jupyterhub_config.py``; its path. Run ``jupyterhub -f`` on it."""
    config_dir = server_config(folder)
    hub = (folder.root / HUB_DIR).resolve()
    hub.mkdir(parents=True, exist_ok=True)
    singleuser = shutil.which("jupyterhub-singleuser") or str(
        Path(sys.executable).parent / "jupyterhub-singleuser")
    lines = [
        "# Written by `cogym-lab study serve --hub`: JupyterHub for the study in",
        f"# {folder.root.resolve()}. Each participant who logs in gets a Jupyter server",
        "# of their own that opens the study's notebook.",
        "c = get_config()  # noqa: F821 - JupyterHub defines it",
        f"c.JupyterHub.ip = {ip!r}",
        f"c.JupyterHub.port = {port}",
        f"c.JupyterHub.db_url = {'sqlite:///' + str(hub / 'jupyterhub.sqlite')!r}",
        f"c.JupyterHub.cookie_secret_file = {str(hub / 'jupyterhub_cookie_secret')!r}",
        f"c.JupyterHub.pid_file = {str(hub / 'jupyterhub.pid')!r}",
        f"c.ConfigurableHTTPProxy.pid_file = {str(hub / 'jupyterhub-proxy.pid')!r}",
        f"c.JupyterHub.authenticator_class = {authenticator!r}",
        f"c.JupyterHub.spawner_class = {SPAWNERS.get(spawner, spawner)!r}",
        f"c.Spawner.cmd = [{singleuser!r}]",
        f"c.Spawner.default_url = '/lab/tree/{NOTEBOOK_NAME}'",
        f"c.Spawner.environment = {{'JUPYTER_CONFIG_PATH': {str(config_dir.resolve())!r}}}",
        "c.Spawner.start_timeout = 120",
        "c.Spawner.http_timeout = 120",
    ]
    if authenticator == "dummy":
        lines += ["# The dummy authenticator lets anyone in under any name: for trials only.",
                  "c.Authenticator.allow_all = True"]
    else:
        lines += ["# Say who may log in (c.Authenticator.allowed_users) for your authenticator."]
    if spawner == "simple":
        template = str((homes or folder.root / "homes").resolve() / "{username}")
        lines.append(f"c.SimpleLocalProcessSpawner.home_dir_template = {template!r}")
    if proxy_command:
        lines.append(f"c.ConfigurableHTTPProxy.command = [{proxy_command!r}]")
    path = hub / "jupyterhub_config.py"
    path.write_text("\n".join(lines) + "\n")
    return path


def set_up(study_dir: str | Path, design: StudyDesign, seed: int = 0) -> StudyFolder:
    """The study's folder, set up for ``design`` (kept as it is when it was already)."""
    return StudyFolder.create(study_dir, design, seed=seed)


__all__ = ["CONFIG_DIR", "SPAWNERS", "hub_config", "server_config", "set_up"]
