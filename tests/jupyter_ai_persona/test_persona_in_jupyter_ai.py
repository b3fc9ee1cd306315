"""The Co-Gym persona inside jupyter-ai 3.x: a real ``jupyter server`` with jupyter-ai and
cogym_lab loads it through the ``jupyter_ai.personas`` entry point, and a message posted to
jupyter-ai's persona endpoint (``POST /api/ai/message/<persona>``, which builds a
``PersonaManager`` and routes the message through ``BasePersona.on_message`` as a chat does)
starts a hosted session that the REST API then shows as the caller's.

jupyter-ai cannot share the test venv (its jupyter-server-mcp pin needs mcp <2; the ``mcp``
extra needs mcp >=2.3), so a venv of its own is built with a regular install of this repository
and its ``jupyter-ai`` extra: about 50 s with pip's cache, once per test run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from cogym_lab.jupyter_ai_persona.chat_sessions import outside_seats_supported
from tests.support.jupyter_process import JupyterServerProcess
from tests.support.paths import REPO_ROOT

pytestmark = pytest.mark.timeout(900)  # the venv, once

PERSONA = "CoGym"


def build_jupyter_ai_venv(venv: Path, timeout: float = 900.0) -> Path:
    """Make ``venv`` with this repository and its ``jupyter-ai`` extra; returns its python."""
    log = venv.parent / f"{venv.name}-install.log"
    with log.open("w") as out:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, stdout=out,
                       stderr=subprocess.STDOUT, timeout=timeout)
        python = venv / "bin" / "python"
        done = subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                               f"{REPO_ROOT}[jupyter-ai]"], check=False, stdout=out,
                              stderr=subprocess.STDOUT, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"installing into {venv} failed:\n{log.read_text()[-5000:]}")
    return python


@pytest.fixture(scope="session")
def jupyter_ai_python(tmp_path_factory) -> Path:
    return build_jupyter_ai_venv(tmp_path_factory.mktemp("jupyter-ai") / "venv")


@pytest.fixture(scope="module")
def server(jupyter_ai_python, tmp_path_factory):
    root = tmp_path_factory.mktemp("jupyter-ai-server") / "root"
    root.mkdir()
    state = root.parent / "jupyter-state"  # config and data of our own, not the user's
    running = JupyterServerProcess(root, python=str(jupyter_ai_python), env={
        "PYTHONPATH": str(REPO_ROOT),
        "JUPYTER_CONFIG_DIR": str(state / "config"),
        "JUPYTER_DATA_DIR": str(state / "data")}).start(timeout=180)
    yield running
    running.stop()


def ask(server: JupyterServerProcess, text: str) -> str:
    """What the persona answers to ``text``, through jupyter-ai's own endpoint."""
    answer = server.request("POST", f"api/ai/message/{urllib.parse.quote(PERSONA)}",
                            {"message": text}, timeout=120)
    return str(answer["response"])


def session_id_in(reply: str) -> str:
    found = re.search(r"Started session `([^`]+)`", reply)
    assert found, reply
    return found.group(1)


def sessions(server: JupyterServerProcess) -> dict[str, Any]:
    return {s["session_id"]: s for s in server.request("GET", "cogym/api/sessions")["sessions"]}


def test_the_entry_point_loads_the_persona(jupyter_ai_python) -> None:
    probe = ("from importlib.metadata import entry_points\n"
             "from jupyter_ai_persona_manager import BasePersona\n"
             "[ep] = [e for e in entry_points(group='jupyter_ai.personas') if e.name == 'cogym']\n"
             "cls = ep.load()\n"
             "print(issubclass(cls, BasePersona), cls.__name__)")
    done = subprocess.run([str(jupyter_ai_python), "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120, cwd="/")
    assert done.stdout.split() == ["True", "CoGymPersona"]


def test_start_creates_a_session_that_is_the_callers(server) -> None:
    reply = ask(server, "start todo")
    session_id = session_id_in(reply)
    assert f"%cogym attach {session_id} --role user" in reply
    assert "Your seat: `user`" in reply
    summary = sessions(server)[session_id]
    assert summary["task"] == "todo"
    assert summary["owned"] is True and summary["seats"] == ["user"]
    assert summary["status"] in ("running", "finished")
    assert server.token not in reply


def test_join_and_list_answer_with_the_callers_sessions(server) -> None:
    session_id = session_id_in(ask(server, "start todo"))
    joined = ask(server, f"@{PERSONA} join {session_id}")
    assert f"Session `{session_id}` (todo" in joined
    assert f"%cogym attach {session_id} --role user" in joined
    assert f"`{session_id}`" in ask(server, "list")
    assert "is not yours" in ask(server, f"join {session_id} as agent")
    assert "No session 'nope'" in ask(server, "join nope")


def test_refusals_are_replies_not_tracebacks(server) -> None:
    before = set(sessions(server))
    unknown = ask(server, "start no_such_task")
    assert unknown.startswith("I could not do that:") and "no_such_task" in unknown
    assert "Traceback" not in unknown
    assert "do not know 'dance'" in ask(server, "dance")
    assert set(sessions(server)) == before


def test_an_outside_seat_gets_its_mcp_configuration(server) -> None:
    reply = ask(server, "start todo outside agent")
    if not outside_seats_supported():
        assert "cannot leave a seat for an outside agent" in reply
        return
    session_id = session_id_in(reply)
    config = json.loads(reply.split("```json\n", 1)[1].split("\n```", 1)[0])
    [entry] = config["mcp_servers"]
    # jupyter-ai 3.2 keeps mcp <2 in this venv, so the seat is a stdio server run elsewhere
    assert entry["args"] == ["mcp", "--session", session_id, "--url", server.url]
    assert server.token not in reply
