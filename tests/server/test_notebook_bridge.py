"""The tabular task in a person's own notebook, in a real Jupyter server.

Each test starts a real server (pytest-jupyter) with the cogym_lab extension and
jupyter-collaboration's live documents, writes a real notebook, starts its kernel through the
server's sessions API (as JupyterLab does) and creates a cogym session from it over REST. The
person runs cells through the kernel's websocket, as the browser does. The agent is a scripted
member that reacts to its notifications.

As in test_jupyter_server.py, pytest-jupyter's fixtures are imported, not registered as a
plugin, and the tests drive the server's own event loop.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.session import Session
from pytest_jupyter.jupyter_server import *  # noqa: F403 - its fixtures, without its hooks
from tornado.httpclient import HTTPClientError

from cogym_lab.core import Notification
from cogym_lab.core.member import MemberType
from cogym_lab.server.live_notebooks import AGENT_CELL_KEY
from tests.support import agent_writes
from tests.support.kernel_messages import collect_output, execute_request
from tests.support.notified import notified

pytestmark = pytest.mark.timeout(240)

API = ("cogym", "api", "sessions")
NOTEBOOK = "analysis.ipynb"
Rule = tuple[Callable[[Notification], bool], str | dict[str, Any]]


# -- the scripted agent --------------------------------------------------------------------------

def events_of(notification: Notification) -> list[Any]:
    return list(notification.merged_events or [notification.event])


def person_ran(fragment: str) -> Callable[[Notification], bool]:
    """The person's cell containing ``fragment`` was recorded."""
    return lambda n: any(e.actor == "user" and e.action and e.action.startswith("RECORD_CELL")
                         and fragment in e.action for e in events_of(n))


def kernel_restarted(n: Notification) -> bool:
    return any(e.action and e.action.startswith("RECORD_KERNEL_RESTART") for e in events_of(n))


def started(n: Notification) -> bool:
    return any(e.type.value in ("start", "sync") for e in events_of(n))


def cell(code: str) -> dict[str, Any]:
    return {"name": "EXECUTE_JUPYTER_CELL", "args": {"code": code}}


SCRIPTS: dict[str, list[Rule]] = {
    "one_cell": [(started, cell("print('hello from the agent')\n6 * 7"))],
    "shared_variables": [
        (person_ran("sales = "), cell("total = int(sales['amount'].sum())\nprint('total', total)")),
    ],
    "interrupt": [(started, cell("import time\nfor _ in range(1200):\n    time.sleep(0.05)"))],
    "restart": [
        (person_ran("kept = "), cell("print('before', kept)")),
        (kernel_restarted, cell("try:\n    print(kept)\nexcept NameError:\n    print('gone')\n"
                                "fresh = 5\nprint('after', fresh)")),
    ],
    "ask": [(started, cell("answer = 40 + 2\nprint('answer', answer)"))],
}


class NotebookAnalyst:
    """Acts by rules: each notification, the first pending rule whose condition holds fires."""

    def __init__(self, script: str) -> None:
        self.rules = list(SCRIPTS[script])
        self.seen: list[Notification] = []

    def start(self, context: Any) -> None:
        self.context = context

    async def act(self, notification: Notification) -> Any:
        self.seen.append(notification)
        if self.rules and self.rules[0][0](notification):
            return self.rules.pop(0)[1]
        return None

    def end(self, final: Notification) -> None:
        self.seen.append(final)


# -- the server, the notebook, the person -------------------------------------------------------

NOTEBOOK_ANALYST = MemberType(name="notebook-analyst", kind="agent", uses_lm=False,
                              build=lambda setup: NotebookAnalyst(**setup.options))


def write_team_files(folder: Path) -> dict[str, str]:
    """One team file per script of the analyst, registered with the server by name (a server
    takes team names only)."""
    folder.mkdir(parents=True, exist_ok=True)
    teams = {}
    for script in SCRIPTS:
        path = folder / f"team-{script}.toml"
        path.write_text(f'name = "notebook-{script}"\n[members.agent]\n'
                        f'type = "notebook-analyst"\n'
                        f'[members.agent.options]\nscript = "{script}"\n')
        teams[f"notebook-{script}"] = str(path)
    return teams


@pytest.fixture
def jp_server_config(tmp_path, jp_root_dir):
    return {
        "ServerApp": {"jpserver_extensions": {"cogym_lab": True, "jupyter_server_ydoc": True,
                                              "jupyter_server_fileid": True}},
        "CogymLabApp": {"results_dir": str(tmp_path / "results"),
                        "teams": write_team_files(tmp_path / "teams"),
                        "members": {"notebook-analyst": f"{__name__}:NOTEBOOK_ANALYST"}},
        "SQLiteYStore": {"db_path": str(tmp_path / "ystore.db")},
        "BaseFileIdManager": {"root_dir": str(jp_root_dir), "db_path": str(tmp_path / "ids.db"),
                              "db_journal_mode": "OFF"},
        "YDocExtension": {"document_save_delay": 0.2},
    }


@pytest.fixture
def api(jp_fetch):
    """``await api(method, *path, body=...)`` -> (status, JSON), under the server's ``/``."""

    async def call(method, *path, body=None):
        kwargs = {"method": method, "body": json.dumps(body) if body is not None else
                  ("{}" if method == "POST" else None)}
        try:
            response = await jp_fetch(*path, **kwargs)
        except HTTPClientError as error:
            response = error.response
        return response.code, json.loads(response.body or b"null")

    return call


@pytest.fixture
def team_file():
    """The registered team whose analyst plays ``script``."""
    def name(script: str) -> str:
        assert script in SCRIPTS, script
        return f"notebook-{script}"

    return name


@pytest.fixture
def notebook(jp_root_dir, api):
    """Write a real notebook and open it with a kernel, as JupyterLab does: its kernel id."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_markdown_cell("# My analysis"))
    (jp_root_dir / NOTEBOOK).write_text(nbformat.writes(notebook))

    async def open_it() -> str:
        status, model = await api("POST", "api", "sessions", body={
            "path": NOTEBOOK, "type": "notebook", "name": NOTEBOOK,
            "kernel": {"name": "python3"}})
        assert status == 201, model
        return model["kernel"]["id"]

    return open_it


class BrowserKernel:
    """Runs cells over the kernel's websocket with a session of its own, like JupyterLab."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.session = Session(username="person")

    async def execute(self, code: str, timeout: float = 60.0) -> list[dict[str, Any]]:
        """Run ``code``; returns its IOPub outputs once the kernel is idle again."""
        message = execute_request(self.session, code)
        message["parent_header"] = {}
        message["channel"] = "shell"
        msg_id = message["header"]["msg_id"]
        await self.ws.write_message(json.dumps(message, default=str))
        outputs = []
        async with asyncio.timeout(timeout):
            while True:
                reply = json.loads(await self.ws.read_message())
                if reply.get("parent_header", {}).get("msg_id") != msg_id or \
                        reply.get("channel") != "iopub":
                    continue
                if collect_output(reply["msg_type"], reply["content"], outputs):
                    return outputs


@pytest.fixture
def person(jp_ws_fetch):
    async def connect(kernel_id: str) -> BrowserKernel:
        ws = await jp_ws_fetch("api", "kernels", kernel_id, "channels",
                               params={"session_id": uuid.uuid4().hex})
        return BrowserKernel(ws)

    return connect


@pytest.fixture
def live_cells(jp_serverapp):
    """The notebook's cells in its live document, as every open browser sees them."""

    async def cells() -> list[dict[str, Any]]:
        api = jp_serverapp.web_app.settings["jupyter_server_ydoc"]
        document = await api.get_document(path=NOTEBOOK, content_type="notebook",
                                          file_format="json", copy=False, create=True)
        assert document is not None, "the live document is not open"
        return [document.get_cell(index) for index in range(document.cell_number)]

    return cells


async def until(check: Callable[[], Any], what: str, timeout: float = 60.0,
                detail: Callable[[], Any] | None = None) -> Any:
    """Poll ``check`` (sync or async) until it returns something truthy."""
    return await agent_writes.until(check, what, timeout, detail=detail, every=0.1)


async def _state(api, session_id, jp_serverapp, kernel_id, live_cells) -> str:
    """What the session, the kernel and the notebook look like (for failure messages)."""
    status, snapshot = await api("GET", *API, session_id)
    kernel = jp_serverapp.kernel_manager.get_kernel(kernel_id)
    return (f"kernel {kernel.execution_state}; cells {await live_cells()}; "
            f"session {json.dumps(snapshot)[:3000]}")


def agent_of(jp_serverapp, session_id: str) -> NotebookAnalyst:
    return jp_serverapp.web_app.settings["cogym_lab_host"].get(session_id).session.members["agent"]


def agent_cells(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in cells if AGENT_CELL_KEY in c.get("metadata", {})]


def recorded_cells(notification: Notification) -> list[dict[str, Any]]:
    return notification.view["notebook"].content["cells"]


def text_of(outputs: list[dict[str, Any]]) -> str:
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in outputs)


async def create(api, kernel_id: str, team: str, cell_id: str | None = None,
                 **env_args: Any) -> dict[str, Any]:
    anchor = {"cell_id": cell_id} if cell_id else {}
    status, created = await api("POST", *API, body={
        "task": "tabular_analysis", "team": team, "people": ["user"], "idle_seconds": 60,
        "notebook": {"path": NOTEBOOK, "kernel_id": kernel_id, **anchor},
        "env_args": {"query": "What do the sales say?", "data": "sales", **env_args}})
    assert status == 201, created
    return created


# -- the tests ----------------------------------------------------------------------------------

def test_the_agents_cell_goes_below_the_cell_that_started_the_session(
        run, api, notebook, team_file, live_cells, jp_root_dir):
    """Not at the notebook's end, away from the panel: right below the session's own cell."""
    person = nbformat.v4.new_notebook()
    person.cells = [nbformat.v4.new_markdown_cell("# My analysis"),
                    nbformat.v4.new_code_cell("%cogym new tabular_analysis", id="startcell"),
                    nbformat.v4.new_markdown_cell("# The end")]
    (jp_root_dir / NOTEBOOK).write_text(nbformat.writes(person))

    async def body():
        kernel_id = await notebook()
        created = await create(api, kernel_id, team_file("one_cell"), cell_id="startcell")
        await until(lambda: _finished_agent_cell(live_cells), "the agent's cell")
        cells = await live_cells()
        order = [cell.get("id") if AGENT_CELL_KEY not in cell["metadata"] else "agent"
                 for cell in cells]
        assert order[1:] == ["startcell", "agent", order[-1]], order
        assert cells[-1]["source"] == "# The end"
        assert cells[2]["source"].startswith(
            f"# written by agent (cogym agent, session {created['session_id']})\n")

    run(body())


def test_an_agent_cell_appears_in_the_live_notebook_with_its_outputs(
        run, api, notebook, team_file, live_cells, jp_serverapp, jp_root_dir):
    async def body():
        kernel_id = await notebook()
        created = await create(api, kernel_id, team_file("one_cell"))
        session_id = created["session_id"]
        assert created["people"] == ["user"]

        shown = await until(lambda: _finished_agent_cell(live_cells), "the agent's cell")
        assert shown["source"] == (f"# written by agent (cogym agent, session {session_id})\n"
                                   "print('hello from the agent')\n6 * 7")
        assert shown["metadata"][AGENT_CELL_KEY] == {"author": "agent", "session": session_id}
        assert shown["metadata"]["tags"] == ["cogym-agent"]
        assert isinstance(shown["execution_count"], int) and shown["execution_count"] >= 1
        kinds = [o["output_type"] for o in shown["outputs"]]
        assert kinds == ["stream", "execute_result"]
        assert shown["outputs"][0]["text"] == "hello from the agent\n"
        assert shown["outputs"][1]["data"]["text/plain"] == "42"
        assert (await live_cells())[0]["source"] == "# My analysis"  # the person's cells stay

        on_disk = await until(lambda: _saved_agent_cell(jp_root_dir / NOTEBOOK),
                              "the notebook file to be saved with the agent's cell")
        assert on_disk["outputs"][1]["data"]["text/plain"] == "42"

        status, snapshot = await api("GET", *API, session_id)
        (recorded,) = recorded_cells_of(snapshot)
        assert (recorded["ran_by"], recorded["status"]) == ("agent", "ok")
        assert recorded["execution_count"] == shown["execution_count"]
        assert (await api("DELETE", *API, session_id))[0] == 200
        # ending the session disconnects from the kernel but never stops it: it is the person's
        assert kernel_id in jp_serverapp.kernel_manager

    run(body())


def test_variables_are_shared_both_ways_and_the_persons_cells_reach_the_agent(
        run, api, notebook, team_file, person, live_cells, jp_serverapp):
    async def body():
        kernel_id = await notebook()
        browser = await person(kernel_id)
        created = await create(api, kernel_id, team_file("shared_variables"))
        session_id = created["session_id"]
        agent = agent_of(jp_serverapp, session_id)

        outputs = await browser.execute(
            "import pandas as pd\nsales = pd.DataFrame({'amount': [3, 4, 5]})\n"
            "print('rows', len(sales))")
        assert text_of(outputs) == "rows 3\n"

        # The person's cell, with its outputs, reaches the agent as the person's step.
        told = await until(lambda: next((n for n in agent.seen if person_ran("sales = ")(n)),
                                        None), "the agent to hear of the person's cell")
        (event,) = [e for e in events_of(told) if e.actor == "user"]
        assert event.type.value == "action" and event.info.get("observed") is True
        person_cell = recorded_cells(told)[0]
        assert person_cell["ran_by"] == "user" and "sales = pd.DataFrame" in person_cell["source"]
        assert person_cell["outputs"][0]["text"] == "rows 3\n"

        # The agent uses the person's variable...
        shown = await until(lambda: _finished_agent_cell(live_cells), "the agent's cell")
        assert text_of(shown["outputs"]) == "total 12\n"
        # ...and the person uses the agent's.
        assert text_of(await browser.execute("print('agent says', total)")) == "agent says 12\n"

        status, snapshot = await api("GET", *API, session_id)
        ran = [(c["ran_by"], c["status"]) for c in recorded_cells_of(snapshot)]
        assert ran == [("user", "ok"), ("agent", "ok"), ("user", "ok")]
        # A member cannot forge a recorded cell: the internal action is refused.
        status, _ = await api("POST", *API, session_id, "actions", body={
            "role": "user", "action": {"name": "RECORD_CELL",
                                       "args": {"code": "x", "result": {}}}})
        assert status == 200  # taken and logged: as an error
        status, snapshot = await until(lambda: _with_error(api, session_id), "the refusal")
        assert len(recorded_cells_of(snapshot)) == 3
        browser.ws.close()

    run(body())


@pytest.mark.parametrize("via", ["stop button", "session endpoint"])
def test_the_person_interrupts_the_agents_running_cell(
        via, run, api, notebook, team_file, live_cells, jp_serverapp):
    async def body():
        kernel_id = await notebook()
        created = await create(api, kernel_id, team_file("interrupt"))
        session_id = created["session_id"]
        await until(lambda: _running(jp_serverapp, kernel_id, live_cells), "the cell to run",
                    detail=lambda: _state(api, session_id, jp_serverapp, kernel_id, live_cells))
        if via == "stop button":  # JupyterLab's stop button asks the server's kernel API
            status, _ = await api("POST", "api", "kernels", kernel_id, "interrupt")
            assert status == 204
        else:
            status, answer = await api("POST", *API, session_id, "interrupt")
            assert (status, answer["interrupted"]) == (200, True)

        shown = await until(lambda: _finished_agent_cell(live_cells), "the interrupted cell")
        status, snapshot = await api("GET", *API, session_id)
        assert [o["output_type"] for o in shown["outputs"]] == ["error"], (shown, snapshot)
        assert shown["outputs"][0]["ename"] == "KeyboardInterrupt"
        agent = agent_of(jp_serverapp, session_id)
        told = await until(lambda: next((n for n in agent.seen if recorded_cells(n)), None),
                           "the agent to see its cell's result")
        recorded = recorded_cells(told)[0]
        assert recorded["status"] == "error" and recorded["error"].startswith("KeyboardInterrupt")
        assert kernel_id in jp_serverapp.kernel_manager  # interrupted, not restarted

    run(body())


def test_the_session_survives_a_kernel_restart(
        run, api, notebook, team_file, person, live_cells, jp_serverapp):
    async def body():
        kernel_id = await notebook()
        browser = await person(kernel_id)
        created = await create(api, kernel_id, team_file("restart"))
        session_id = created["session_id"]
        agent = agent_of(jp_serverapp, session_id)
        await browser.execute("kept = 'a value'")
        first = await until(lambda: _finished_agent_cell(live_cells), "the first agent cell")
        assert text_of(first["outputs"]) == "before a value\n"

        status, _ = await api("POST", "api", "kernels", kernel_id, "restart")
        assert status == 200
        told = await until(lambda: next((n for n in agent.seen if kernel_restarted(n)), None),
                           "the agent to hear of the restart")
        note = recorded_cells(told)[-1]
        assert note["status"] == "restarted" and "every variable is gone" in \
            note["outputs"][0]["text"]

        cells = await until(lambda: _agent_cells_done(live_cells, 2), "the agent's second cell")
        assert text_of(cells[1]["outputs"]) == "gone\nafter 5\n"  # a new kernel, reached again
        status, snapshot = await api("GET", *API, session_id)
        assert snapshot["status"] == "running"
        browser.ws.close()

    run(body())


def test_autonomy_ask_holds_each_agent_cell_for_the_persons_approval(
        run, api, notebook, team_file, live_cells, jp_serverapp):
    async def body():
        kernel_id = await notebook()
        created = await create(api, kernel_id, team_file("ask"), autonomy="ask")
        session_id = created["session_id"]
        snapshot = await until(lambda: _pending(api, session_id), "a confirmation request")
        (request,) = snapshot["state"]["pending_confirmations"]
        assert request["requester"] == "agent"
        assert request["pending_action"].startswith("EXECUTE_JUPYTER_CELL(")
        assert "answer = 40 + 2" in json.loads(
            request["pending_action"].split("code=", 1)[1][:-1])
        assert agent_cells(await live_cells()) == []  # nothing ran yet

        status, _ = await api("POST", *API, session_id, "actions", body={
            "role": "user", "action": {"name": "ACCEPT_CONFIRMATION",
                                       "args": {"request_id": request["request_id"]}}})
        assert status == 200
        shown = await until(lambda: _finished_agent_cell(live_cells), "the approved cell")
        assert text_of(shown["outputs"]) == "answer 42\n"
        status, snapshot = await api("GET", *API, session_id)
        assert snapshot["state"]["pending_confirmations"] == []
        assert [c["ran_by"] for c in recorded_cells_of(snapshot)] == ["agent"]

    run(body())


def test_requests_naming_a_notebook_are_checked(run, api, notebook, team_file):
    async def body():
        kernel_id = await notebook()
        team = team_file("one_cell")
        base = {"task": "tabular_analysis", "team": team, "people": ["user"],
                "env_args": {"query": "Anything?"}}
        cases = [
            ({"path": NOTEBOOK, "kernel_id": "no-such-kernel"}, 404, "No running kernel"),
            ({"path": "missing.ipynb", "kernel_id": kernel_id}, 404, "No notebook missing.ipynb"),
            ({"path": NOTEBOOK}, 400, "kernel_id"),
        ]
        for notebook_field, code, message in cases:
            status, error = await api("POST", *API, body=base | {"notebook": notebook_field})
            assert (status, message in error["message"]) == (code, True), error
        status, error = await api("POST", *API, body=base | {
            "task": "todo", "notebook": {"path": NOTEBOOK, "kernel_id": kernel_id}})
        assert status == 400 and "notebook's kernel" in error["message"]
        status, error = await api("POST", *API, body=base | {
            "env_args": {"query": "Anything?", "autonomy": "sometimes"},
            "notebook": {"path": NOTEBOOK, "kernel_id": kernel_id}})
        assert status == 400 and "autonomy" in error["message"]

    run(body())


# -- helpers -------------------------------------------------------------------------------------

async def _finished_agent_cell(live_cells) -> dict[str, Any] | None:
    """The last agent cell once it has its execution count (outputs land with it)."""
    cells = agent_cells(await live_cells())
    return cells[-1] if cells and cells[-1]["execution_count"] is not None else None


async def _agent_cells_done(live_cells, count: int) -> list[dict[str, Any]] | None:
    cells = agent_cells(await live_cells())
    done = [c for c in cells if c["execution_count"] is not None]
    return done if len(done) >= count else None


def _saved_agent_cell(path) -> dict[str, Any] | None:
    try:
        saved = nbformat.reads(path.read_text(), as_version=4)
    except nbformat.reader.NotJSONError:  # read while the server rewrites it: not yet
        return None
    cells = [c for c in saved.cells if AGENT_CELL_KEY in c.metadata and c.outputs]
    return cells[0] if cells else None


async def _running(jp_serverapp, kernel_id, live_cells) -> bool:
    kernel = jp_serverapp.kernel_manager.get_kernel(kernel_id)
    cells = agent_cells(await live_cells())
    return bool(cells) and kernel.execution_state == "busy"


async def _pending(api, session_id) -> dict[str, Any] | None:
    status, snapshot = await api("GET", *API, session_id)
    # No state until the env starts, which now waits for the provenance (data hashes).
    state = snapshot["state"]
    return snapshot if state and state["pending_confirmations"] else None


async def _with_error(api, session_id):
    status, snapshot = await api("GET", *API, session_id)
    return (status, snapshot) if snapshot["state"]["step_counts"].get("user", 0) >= 3 else None


def recorded_cells_of(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    view = snapshot["state"]["views"]["user"]  # the caller sees its own seat's view
    return next(c for c in view["components"] if c["name"] == "notebook")["content"]["cells"]


async def test_without_a_notebook_a_custom_query_runs_in_a_standalone_kernel(tmp_path):
    from cogym_lab.core.coordinator import Coordinator
    from cogym_lab.core.messages import TeamMember
    from cogym_lab.envs import make_env
    from cogym_lab.envs.tabular_analysis import TabularAnalysisEnv
    from cogym_lab.kernels import LocalKernelExecutor

    (tmp_path / "sales.csv").write_text("amount\n3\n4\n5\n")
    env = TabularAnalysisEnv(query="How much did we sell?", data="sales.csv",
                             workdir=str(tmp_path))
    coordinator = Coordinator(env, [TeamMember(role="agent"), TeamMember(role="user", kind="person")],
                              session_id="own-data")
    start = {n.recipient: n for n in notified(coordinator, coordinator.start(0.0))}
    assert "`sales.csv`" in start["agent"].context.task_description
    try:
        started = coordinator.handle("agent", cell(
            "import pandas as pd\nprint(pd.read_csv('sales.csv')['amount'].sum())"), 1.0)
        (role, deferred), = started.deferred
        landed = coordinator.apply_follow_up(role, await deferred.work(), 2.0)
        assert isinstance(env.executor, LocalKernelExecutor)  # its own kernel, in the workdir
    finally:
        await env.aclose()
    (recorded,) = recorded_cells(notified(coordinator, landed)[0])
    assert recorded["outputs"][0]["text"] == "12\n"
    coordinator.handle("agent", {"name": "EDITOR_UPDATE", "args": {"text": "We sold 12."}}, 3.0)
    assert env.outcome() == "We sold 12." and await env.aevaluate() == {}  # ungraded
    assert env.env_args() == {"query": "How much did we sell?", "data": "sales.csv"}
    assert make_env("tabular_analysis", **env.env_args()).task == env.task  # replayable
    with pytest.raises(ValueError, match="'data' goes with a custom 'query'"):
        TabularAnalysisEnv(data="df")
