"""``%load_ext cogym_lab`` and ``%cogym`` in real kernels: one launched by a real Jupyter server
with the cogym_lab extension (sessions run in the server), and one with no server around it
(sessions run in the kernel). LMs are the scripted loopback server, reached through our real
LM client (over aiohttp); the shared task data comes from ``COGYM_DATA``."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cogym_lab.datasets import DATA_ENV_VAR
from cogym_lab.lm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.example_scripts import FINDING, OwnDataRolePlay
from tests.support.jupyter_process import JupyterServerProcess, Kernel, StandaloneKernel
from tests.support.lm_scripts import TodoRolePlay

pytestmark = pytest.mark.timeout(300)


def wait_for(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Poll ``check`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def lm_free_env(datasets: Path, **extra: str) -> dict[str, str]:
    """An environment with the shared data and no LM settings from this machine."""
    import os

    env = {k: v for k, v in os.environ.items() if k not in (ENV_API_KEY, ENV_BASE_URL, ENV_MODEL)}
    return env | {DATA_ENV_VAR: str(datasets)} | extra


class TodoOrOwnData:
    """Answers as the todo agent, or as the agent analysing a person's DataFrame."""

    def __init__(self) -> None:
        self.todo, self.own_data = TodoRolePlay(), OwnDataRolePlay()

    def __call__(self, body: dict[str, Any]) -> Any:
        tabular = any("EXECUTE_JUPYTER_CELL" in m["content"] for m in body["messages"])
        return (self.own_data if tabular else self.todo)(body)


@pytest.fixture(scope="module")
def scripted_lm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(responder=TodoOrOwnData()) as server:
        yield server


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory, datasets_dir, scripted_lm) -> Iterator[JupyterServerProcess]:
    """A real ``jupyter server`` whose kernels reach the scripted LM; no model is set, so a
    session gets an LM only through ``--model``."""
    root = tmp_path_factory.mktemp("server") / "notebooks"
    root.mkdir()
    env = lm_free_env(datasets_dir, **{ENV_BASE_URL: scripted_lm.base_url})
    with JupyterServerProcess(root, env) as server:
        yield server


@pytest.fixture(scope="module")
def server_kernel(jupyter) -> Iterator[tuple[str, Kernel]]:
    kernel_id, kernel = jupyter.open_notebook_kernel("analysis.ipynb")
    kernel.run("%load_ext cogym_lab")
    yield kernel_id, kernel
    kernel.client.stop_channels()


def server_session(jupyter: JupyterServerProcess, session_id: str) -> dict[str, Any]:
    return jupyter.request("GET", f"cogym/api/sessions/{session_id}")


def checklist(snapshot: dict[str, Any], role: str = "user") -> list[str]:
    """The item texts of the todo checklist as ``role`` sees it (empty before the start)."""
    views = (snapshot.get("state") or {}).get("views", {})
    components = {c["name"]: c for c in views.get(role, {}).get("components", [])}
    return [item["text"] for item in components.get("checklist", {}).get("content", [])]


def chat_texts(snapshot: dict[str, Any], sender: str | None = None) -> list[str]:
    return [m["text"] for m in (snapshot.get("state") or {}).get("chat", [])
            if sender is None or m["sender"] == sender]


# -- in a kernel launched by a Jupyter server ---------------------------------------------------


def test_the_kernel_finds_the_server_that_launched_it(jupyter, server_kernel):
    kernel_id, kernel = server_kernel
    kernel.run("from cogym_lab.notebook.client import KernelIdentity, find_server\n"
               "me, server = KernelIdentity.current(), find_server()")
    assert kernel.value("me.kernel_id") == kernel_id
    assert kernel.value("me.session_name") == str(jupyter.root / "analysis.ipynb")
    assert kernel.value("[server.url, server.token]") == [jupyter.url, jupyter.token]
    assert kernel.value("server.notebook_path(me.kernel_id)") == "analysis.ipynb"
    kernel.run("from cogym_lab.notebook.backends import backend")
    assert kernel.value("backend().notebook()") == {"path": "analysis.ipynb",
                                                    "kernel_id": kernel_id}


def test_magics_drive_a_session_hosted_by_the_server(jupyter, server_kernel):
    _, kernel = server_kernel
    started = kernel.run("%cogym new todo --idle-seconds 30")
    assert "started in the Jupyter server" in started.stdout, started.stdout
    session_id = kernel.value("cogym_session.session_id")
    assert server_session(jupyter, session_id)["people"] == ["user"]

    kernel.run("cogym_session.send('Please bring a kazoo')")
    items = wait_for(lambda: "kazoo" in (texts := checklist(server_session(jupyter, session_id)))
                     and texts, "the agent to add the kazoo")
    assert items.count("kazoo") == 1
    view = kernel.value("[i['text'] for i in cogym_session.view['checklist'].content]")
    assert "kazoo" in view
    assert kernel.value("[m.text for m in cogym_session.chat]") == ["Please bring a kazoo"]

    listed = kernel.run("%cogym list")
    assert session_id in listed.text and "todo" in listed.text

    attached = kernel.run(f"%cogym attach {session_id}")
    assert not attached.error
    assert kernel.value("cogym_session.role") == "user"

    ended = kernel.run(f"%cogym end {session_id}")
    assert session_id in ended.stdout
    final = wait_for(lambda: (s := server_session(jupyter, session_id))["status"] != "running"
                     and s, "the session to end")
    assert final["end_reason"] == "ended by the user"
    assert (Path(final["results_dir"]) / "session.json").is_file()


def test_the_model_flag_reaches_the_lm_of_a_hosted_session(jupyter, server_kernel, scripted_lm):
    _, kernel = server_kernel
    kernel.run("%cogym new todo --team collaborative --model magic-model --idle-seconds 30")
    session_id = kernel.value("cogym_session.session_id")
    wait_for(lambda: any(body.get("model") == "magic-model" for body in scripted_lm.bodies),
             "an LM call with the model given to %cogym")
    wait_for(lambda: checklist(server_session(jupyter, session_id)), "the LM agent to add an item")
    assert server_session(jupyter, session_id)["members"] == [{"role": "agent", "kind": "agent"},
                                   {"role": "user", "kind": "person"}]
    kernel.run(f"%cogym end {session_id}")


def test_without_an_lm_the_agent_says_what_to_set_and_the_person_still_works(jupyter,
                                                                             server_kernel):
    _, kernel = server_kernel
    kernel.run("%cogym new travel_planning --instance 0 --idle-seconds 30")
    session_id = kernel.value("cogym_session.session_id")
    said = wait_for(lambda: chat_texts(server_session(jupyter, session_id), "agent"),
                    "the agent to explain the missing LM")
    # Started from a notebook: the advice is what works there, not the server's environment.
    assert "%cogym config model=" in said[0] and "--again" in said[0], said[0]
    assert ENV_MODEL not in said[0] and "team file" not in said[0]

    kernel.run("cogym_session.act({'name': 'EDITOR_UPDATE', 'args': {'text': 'Day 1: fly'}})")
    wait_for(lambda: kernel.value("cogym_session.view['plan'].content") == "Day 1: fly",
             "the person's edit to reach the view")
    kernel.run("cogym_session.send('Are you there?')")
    replies = wait_for(lambda: len(texts := chat_texts(server_session(jupyter, session_id),
                                                       "agent")) >= 2 and texts,
                       "the agent to answer the person")
    assert "no language model" in replies[1]
    assert server_session(jupyter, session_id)["status"] == "running"
    kernel.run(f"%cogym end {session_id}")


def test_an_analysis_of_your_dataframe_shares_the_notebook_kernel(jupyter, server_kernel,
                                                                  scripted_lm):
    _, kernel = server_kernel
    kernel.run("import pandas as pd\n"
               "df = pd.DataFrame({'advertising': [1.0, 2, 3, 4, 5], 'price': [5.0, 3, 4, 1, 2]})\n"
               "df['sales'] = 100 + 2.5 * df['advertising'] - 12 * df['price']")
    started = kernel.run('%cogym new tabular_analysis --query "What drives sales?" --data df '
                         '--model analyst --idle-seconds 30')
    assert "started in the Jupyter server" in started.stdout, started.stdout
    session_id = kernel.value("cogym_session.session_id")
    wait_for(lambda: FINDING in str(server_session(jupyter, session_id).get("state")),
             "the agent to write its finding")
    play = scripted_lm.responder.own_data
    assert play.code[0].startswith("data = df\n")  # the agent used the person's variable
    assert kernel.value("[round(x, 1) for x in slopes]") == [2.5, -12.0, 100.0]  # and left its own
    cells = kernel.value("cogym_session.view['notebook'].content['cells']")
    agent_cells = [cell for cell in cells if cell["ran_by"] == "agent"]
    assert agent_cells[0]["source"] == play.code[0]
    assert "slopes [" in agent_cells[0]["outputs"][0]["text"]
    # The person's cells since the start (this test's own) are in the view too, as theirs.
    assert any(cell["ran_by"] == "user" and "cogym_session" in cell["source"] for cell in cells)
    kernel.run(f"%cogym end {session_id}")


def test_a_cell_run_again_after_a_kernel_restart_shows_the_session_it_started(jupyter):
    """The notebook's kernel restarts (the panel's widget model is gone with it): running the
    cell again shows the session it started, still running, instead of starting another; when
    the kernel is shut down, its sessions end."""
    kernel_id, kernel = jupyter.open_notebook_kernel("rerun.ipynb")
    try:
        kernel.run("%load_ext cogym_lab")
        first = kernel.run("%cogym new todo --idle-seconds 60", cell_id="start-cell")
        session_id = kernel.value("cogym_session.session_id")
        summary = server_session(jupyter, session_id)
        assert summary["created_in"] == {"kernel_id": kernel_id, "path": "rerun.ipynb",
                                         "cell_id": "start-cell"}
        # Where the panel cannot be drawn, its saved output says what it is, in words.
        assert f'cogym_lab.attach("{session_id}")' in first.text, first.text
        assert "object at 0x" not in first.text and "object at 0x" not in first.html()

        jupyter.request("POST", f"api/kernels/{kernel_id}/restart")
        kernel.client.wait_for_ready(timeout=90)
        kernel.run("%load_ext cogym_lab")
        again = kernel.run("%cogym new todo --idle-seconds 60", cell_id="start-cell")
        assert "started by this cell, is still running" in again.stdout, again.stdout
        assert kernel.value("cogym_session.session_id") == session_id
        assert server_session(jupyter, session_id)["status"] == "running"
        other = kernel.run("%cogym new todo --idle-seconds 60", cell_id="another-cell")
        assert "started in the Jupyter server" in other.stdout, other.stdout
        second_id = kernel.value("cogym_session.session_id")
        assert second_id != session_id

        jupyter.request("DELETE", f"api/kernels/{kernel_id}")  # the person shuts it down
        for ended_id in (session_id, second_id):
            final = wait_for(lambda i=ended_id: (s := server_session(jupyter, i))["status"]
                             != "running" and s, "the session to end with its kernel")
            assert final["end_reason"] == "its notebook's kernel ended"
    finally:
        kernel.client.stop_channels()


def test_bad_commands_get_clear_messages(server_kernel):
    _, kernel = server_kernel
    assert "usage: %cogym" in kernel.run("%cogym --help").stdout
    assert "COMMAND" in kernel.run("%cogym").stdout
    missing = kernel.run("%cogym new").stdout
    assert "required: task" in missing and "%cogym --help" in missing
    assert "invalid choice: 'maybe'" in kernel.run("%cogym new todo --autonomy maybe").stdout
    assert "Unknown task 'nope'" in kernel.run("%cogym new nope").stdout
    assert "No session 'ghost'" in kernel.run("%cogym attach ghost").stdout
    assert "%cogym new: error" in kernel.run("%cogym new todo --instance x").stdout
    quotes = kernel.run('%cogym new tabular_analysis --query "unclosed').stdout
    assert "No closing quotation" in quotes


# -- in a kernel with no server ------------------------------------------------------------------


@pytest.fixture
def lone_kernel(tmp_path, datasets_dir, scripted_lm) -> Iterator[Kernel]:
    env = lm_free_env(datasets_dir, **{ENV_BASE_URL: scripted_lm.base_url})
    with StandaloneKernel(tmp_path, env) as kernel:
        kernel.run("%load_ext cogym_lab")
        yield kernel


def test_without_a_server_the_session_runs_in_the_kernel(lone_kernel, tmp_path):
    kernel = lone_kernel
    started = kernel.run("%cogym new todo --idle-seconds 30")
    assert "started in this kernel" in started.stdout, started.stdout
    assert kernel.value("cogym_session.backend.kind") == "local"
    kernel.run("cogym_session.send('Please bring a kazoo')")
    kernel.run("await cogym_session.wait_until(lambda s: 'kazoo' in str(s['state']), 60)")
    items = kernel.value("[i['text'] for i in cogym_session.view['checklist'].content]")
    assert "kazoo" in items

    session_id = kernel.value("cogym_session.session_id")
    assert session_id in kernel.run("%cogym list").text
    kernel.run(f"%cogym attach {session_id}")
    kernel.run(f"%cogym end {session_id}")
    result = kernel.value("await cogym_session.wait(60)")
    assert result["end_reason"] == "ended by the user"
    results_dir = Path(kernel.value("str(cogym_session.results_dir)"))
    assert results_dir.parent == tmp_path / "cogym-results"
    assert (results_dir / "events.jsonl").is_file()
    assert "Please bring a kazoo" in kernel.value("cogym_session.transcript()")


def test_without_a_server_or_an_lm_the_agent_explains(lone_kernel):
    kernel = lone_kernel
    kernel.run("%cogym new related_work --instance 0 --idle-seconds 30 "
               "--env-arg index_limit=300")  # a small index: this test is about the guide
    kernel.run("await cogym_session.started(60)")
    kernel.run("await cogym_session.wait_until(lambda s: s['state']['chat'], 60)")
    said = kernel.value("[(m.sender, m.text) for m in cogym_session.chat]")
    assert said[0][0] == "agent" and "%cogym config model=" in said[0][1]
    kernel.run("cogym_session.end()")


# -- the Python API in this process, and the eager start it relies on in a kernel ---------------


def test_the_python_api_runs_local_sessions_in_a_plain_process(tmp_path, no_ambient_lm):
    import asyncio

    import cogym_lab

    session = cogym_lab.new_session("todo", mode="local", results_dir=tmp_path,
                                    idle_seconds=30)
    assert (session.backend.kind, session.role, session.people) == ("local", "user", ["user"])
    assert session.view["checklist"].render_type == "checklist"  # waits for the start
    session.send("Please bring a kazoo")
    asyncio.run(session.wait_until(lambda s: "kazoo" in str(s["state"]["views"]["user"]), 60))
    assert [m.text for m in session.chat] == ["Please bring a kazoo"]

    again = cogym_lab.attach(session.session_id)
    assert again.role == "user" and again.view == session.view
    with pytest.raises(cogym_lab.SessionError, match="not a person seat"):
        cogym_lab.attach(session.session_id, role="agent")
    listed = cogym_lab.list_sessions(mode="local")
    assert session.session_id in [s["session_id"] for s in listed]
    assert session.session_id in repr(listed) and "<table>" in listed._repr_html_()

    summary = session.end()
    assert summary["status"] == "finished" and summary["end_reason"] == "ended by the user"
    assert session.results_dir == tmp_path / session.session_id
    assert (session.results_dir / "session.json").is_file()
    transcript = session.transcript()
    assert "user said: “Please bring a kazoo”" in transcript  # plain words, not the syntax
    assert "SEND_TEAMMATE_MESSAGE" not in transcript
    with pytest.raises(cogym_lab.SessionError, match="No session 'ghost'"):
        cogym_lab.attach("ghost", mode="local")


def test_a_watched_team_runs_to_its_end_and_cannot_be_acted_for(tmp_path, no_ambient_lm):
    import asyncio

    import cogym_lab

    run = cogym_lab.new_session("todo", role=None, mode="local", results_dir=tmp_path,
                                idle_seconds=2)
    assert run.people == []
    assert run.panel is not None and run.panel.readonly  # watching: the panel, read-only
    result = asyncio.run(run.wait(120))
    assert result["delivered"] and result["scores"]["performance"] > 0
    with pytest.raises(cogym_lab.SessionError, match="only watches"):
        run.send("hello")
    with pytest.raises(cogym_lab.SessionError, match="autonomy must be"):
        cogym_lab.new_session("todo", autonomy="sometimes", mode="local")


def test_data_for_a_tabular_session_is_a_variable_a_frame_or_a_file(tmp_path):
    import pandas as pd

    from cogym_lab.notebook.data_arg import resolve_data

    frame = pd.DataFrame({"a": [1, 2], "b": [3, 4]})
    written = Path(resolve_data(frame, share_kernel=False))
    assert written.name == "data.csv" and pd.read_csv(written).equals(frame)
    table = tmp_path / "t.csv"
    table.write_text("x\n1\n")
    assert resolve_data(str(table), share_kernel=True) == str(table)
    with pytest.raises(ValueError, match="neither a variable"):
        resolve_data("no_such_name", share_kernel=True)


async def test_start_now_finishes_at_once_what_never_waits_and_hands_on_the_rest():
    import asyncio

    from cogym_lab.notebook.local import start_now

    loop = asyncio.get_running_loop()

    async def at_once() -> int:
        return 5

    async def later() -> int:
        await asyncio.sleep(0.01)
        await asyncio.sleep(0)
        return 7

    async def fails() -> None:
        raise ValueError("bad")

    cancelled: list[bool] = []

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    done = start_now(at_once(), loop)
    assert done.done() and done.result() == 5
    pending = start_now(later(), loop)
    assert not pending.done() and await pending == 7
    failed = start_now(fails(), loop)
    assert failed.done() and isinstance(failed.exception(), ValueError)
    stuck = start_now(forever(), loop)
    await asyncio.sleep(0)
    stuck.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stuck
    assert cancelled == [True]


def test_the_model_given_to_new_session_reaches_the_tasks_drafting_assistant(
        tmp_path, no_ambient_lm, use_shared_data):
    """What ``%cogym new … --model`` and ``new_session(model=...)`` set reaches every LM of the
    session, the task's own drafting assistant included, with no LM in the environment."""
    import asyncio

    import cogym_lab
    from cogym_lab.envs import make_env
    from cogym_lab.envs.related_work.search import BM25PaperIndex
    from tests.support.related_scripts import RelatedWorkRolePlay

    cache = tmp_path / "index"
    BM25PaperIndex.load_or_build(cache_dir=cache, limit=300, progress=False)
    play = RelatedWorkRolePlay(make_env("related_work", instance=0).task.topic)
    with ScriptedOpenAIServer(responder=play) as server:
        session = cogym_lab.new_session(
            "related_work", instance=0, team="autonomous", model="api-lm",
            base_url=server.base_url, env_args={"index_limit": 300, "index_cache": str(cache)},
            protocol="cogym_lab", mode="local", results_dir=tmp_path / "runs", idle_seconds=30)
        session.act('SEARCH_PAPER(query="learning")')
        found = asyncio.run(session.wait_until(  # no state until the session has started
            lambda s: any(c["name"] == "search" and c["content"]
                          for c in ((s["state"] or {}).get("views", {}).get("user") or {})
                          .get("components", [])), 120))
        first = next(c for c in found["state"]["views"]["user"]["components"]
                     if c["name"] == "search")["content"][0]["id"]
        session.act(f'LIBRARY_ADD_PAPER(ids="{first}")')
        session.act('LIBRARY_TO_DRAFT(instructions="Two short paragraphs.")')
        asyncio.run(session.wait_until(lambda s: "[1]" in str(s["state"]["views"]["user"]), 60))
        summary = session.end()
        models = {body["model"] for body in server.bodies}
    assert play.drafts >= 1 and models == {"api-lm"}
    assert summary["protocol"] == "cogym_lab"
