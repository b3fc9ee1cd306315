"""JupyterLab as ``scripts/lab.sh`` starts it: the script itself, run in a subprocess, installing
into its own environment and then exec'ing ``jupyter lab examples/``.

The script runs in a copy of the checkout (its tracked and not-ignored files), so the install's
build folders and the notebooks a test creates in ``examples/`` stay out of the checkout. The
person is a newcomer: a new HOME and cache, no COGYM_DATA, no Jupyter folders set, nothing from
the test runner's Python (PYTHONPATH, VIRTUAL_ENV) leaking into the server or its kernels.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.browser.jupyter_lab import JupyterLabServer, write_quiet_settings
from tests.browser.screenshots import REPO_ROOT

__all__ = ["INSTALL_TIMEOUT", "LabScriptServer", "copy_checkout", "group_processes"]

INSTALL_TIMEOUT = 15 * 60.0  # seconds: creating the environment and pip-installing [lab]

# What the test runner's own environment must not hand to the script: another Python's paths,
# another data folder, another person's Jupyter folders.
_RUNNER_ONLY = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "COGYM_DATA", "XDG_CONFIG_HOME",
                "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "JUPYTER_CONFIG_DIR",
                "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_PATH",
                "JUPYTER_CONFIG_PATH", "JUPYTERLAB_SETTINGS_DIR", "JUPYTERLAB_WORKSPACES_DIR",
                "JUPYTERLAB_DIR")
# Build products and local environments, when the checkout is not a git work tree.
_NOT_SOURCE = shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info",
                                     "__pycache__", ".pytest_cache", "test-artifacts",
                                     ".ipynb_checkpoints", "cogym-results")


def copy_checkout(target: Path, source: Path = REPO_ROOT) -> Path:
    """Copy the checkout's files (tracked or new, not ignored; symlinks as links) to
    ``target``, which must not exist yet; returns ``target``."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(source), "ls-files", "-z", "--cached", "--others",
             "--exclude-standard"], capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError):  # not a git work tree (an unpacked sdist)
        shutil.copytree(source, target, symlinks=True, ignore=_NOT_SOURCE)
        return target
    for name in filter(None, listed.decode().split("\0")):
        origin = source / name
        if not origin.is_symlink() and not origin.exists():
            continue  # deleted in the work tree, not yet in git
        copy = target / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(origin, copy, follow_symlinks=False)
    return target


def group_processes(group: int) -> list[str]:
    """The live (not zombie) processes of process group ``group``, as "pid command" lines."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # it ended while we looked
        command, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:]
        fields = rest.split()
        if int(fields[2]) == group and fields[0] != "Z":
            alive.append(f"{stat.parent.name} {command}")
    return alive


class LabScriptServer(JupyterLabServer):
    """``bash scripts/lab.sh --no-browser --port P --IdentityProvider.token=T ...`` in
    ``checkout``, with its environment in ``venv`` (COGYM_LAB_VENV) and ``home`` as HOME.

    ``root_dir`` is the folder the script shows (``checkout/examples``); ``log_path`` gets the
    script's own output (its phases, pip's lines), then the server's log.
    """

    def __init__(self, checkout: Path, venv: Path, home: Path, log_path: Path,
                 extra_env: Mapping[str, str] | None = None,
                 extra_args: Sequence[str] = (),
                 startup_timeout: float = INSTALL_TIMEOUT) -> None:
        super().__init__(checkout / "examples", home, extra_env, startup_timeout)
        self.checkout = checkout
        self.venv = venv
        self.extra_args = list(extra_args)
        self.log_path = log_path
        self.started_in: float | None = None  # seconds from the script's start to an answer
        self.group: int | None = None

    def script_environment(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if key not in _RUNNER_ONLY}
        return {**env, "HOME": str(self.home), "XDG_CACHE_HOME": str(self.home / ".cache"),
                "COGYM_LAB_VENV": str(self.venv), "PYTHONUNBUFFERED": "1", **self.extra_env}

    def start(self) -> LabScriptServer:
        """Run the script and wait (up to ``startup_timeout``) until the server answers."""
        self.home.mkdir(parents=True, exist_ok=True)
        # A newcomer who already said no to JupyterLab's news: no pop-up over the page, no
        # update check on the network.
        write_quiet_settings(self.home / ".jupyter" / "lab" / "user-settings")
        command = ["bash", "scripts/lab.sh", "--no-browser", "--ip=127.0.0.1",
                   f"--port={self.port}", "--port-retries=0",
                   f"--IdentityProvider.token={self.token}",
                   "--LabApp.extension_manager=readonly",  # no package-index look-ups
                   *self.extra_args]
        self._log_file = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        began = time.monotonic()
        # Its own process group: the script, pip, then the server and its kernels, all ended
        # together by stop().
        self._proc = subprocess.Popen(command, cwd=self.checkout, env=self.script_environment(),
                                      stdout=self._log_file, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        self.group = self._proc.pid
        self._wait_until_ready()
        self.started_in = time.monotonic() - began
        return self

    def phase_lines(self) -> list[str]:
        """The script's phase announcements and their times, from its output."""
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return [line.rstrip() for line in text.splitlines()
                if re.match(r"\[\d/\d\] |\s+done in ", line)]

    def stop(self) -> None:
        """Stop the kernels and the server (see JupyterLabServer.stop), then make sure nothing
        of the script's process group is left."""
        super().stop()
        if self.group is None:
            return
        deadline = time.monotonic() + 20
        while left := group_processes(self.group):
            assert time.monotonic() < deadline, f"still running after the server: {left}"
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.group, signal.SIGKILL)
            time.sleep(0.5)
