"""``%cogym config``: the model, endpoint, key and data folder a notebook sends with every session.

Real parts: a ``jupyter server`` process with the cogym_lab extension, started WITHOUT any LM or
data settings in its environment (and with an empty user cache), notebook kernels it launched, and
the scripted OpenAI-compatible server on loopback, reached through our real LM client (over
aiohttp). What the kernel sets must reach the session in the server; the API key must reach the LM
endpoint and nothing else: not ``hosting.json``, ``session.json``, ``events.jsonl`` or any other
file of the session, not the server's log, not an error message, not a ``repr``.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cogym_lab.datasets import DATA_ENV_VAR
from cogym_lab.lm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from cogym_lab.runtime.hosting import HostingError
from cogym_lab.runtime.models import CreateRequest
from cogym_lab.server.create_policy import CreatePolicy
from cogym_lab.sessions.spec import SessionSpec
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.jupyter_process import JupyterServerProcess, Kernel
from tests.support.lm_scripts import TodoRolePlay

pytestmark = pytest.mark.timeout(300)

#: A key no real service issues, distinctive enough to grep for.
FAKE_KEY = "sk-cogymFAKE-4c1d9e7a2b6f40e8a3d5c7b9e1f2a4c6"
#: What must never be shown or written: the key, and a piece of it that survives truncation.
SECRET_PARTS = (FAKE_KEY, FAKE_KEY[-20:])


def wait_for(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def bare_env(cache: Path) -> dict[str, str]:
    """This process's environment without LM or data settings, and with an empty user cache,
    so that the server has no model, no endpoint, no key and no task data of its own."""
    drop = (ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, DATA_ENV_VAR)
    return {k: v for k, v in os.environ.items() if k not in drop} | {
        "XDG_CACHE_HOME": str(cache)}


def assert_no_secret(text: str, where: str) -> None:
    for part in SECRET_PARTS:
        assert part not in text, f"the API key appears in {where}"


def auth_of(request: Any) -> str:
    return next((value for name, value in request.headers.items()
                 if name.lower() == "authorization"), "")


def calls_with_model(lm: ScriptedOpenAIServer, model: str) -> list[Any]:
    return [r for r in lm.chat_requests
            if isinstance(r.body, dict) and r.body.get("model") == model]


# -- fixtures: two real servers, kernels they launch -----------------------------------------------

@pytest.fixture(scope="module")
def scripted_lm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(responder=TodoRolePlay()) as server:
        yield server


@pytest.fixture(scope="module")
def empty_data_dir(tmp_path_factory) -> Path:
    """A data folder with nothing in it."""
    return tmp_path_factory.mktemp("empty-data")


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory, datasets_dir, empty_data_dir) -> Iterator[JupyterServerProcess]:
    """A server with no LM and no data of its own; its administrator allows the shared
    datasets folder and an empty one as data folders requests may name."""
    base = tmp_path_factory.mktemp("plain")
    (base / "notebooks").mkdir()
    server = JupyterServerProcess(base / "notebooks", bare_env(base / "cache"),
                                  cogym={"data_dirs": [str(datasets_dir), str(empty_data_dir)]})
    with server:
        yield server


@pytest.fixture(scope="module")
def admin_server(tmp_path_factory, scripted_lm) -> Iterator[JupyterServerProcess]:
    """A server whose administrator set the model and the endpoint of every session."""
    base = tmp_path_factory.mktemp("admin")
    (base / "notebooks").mkdir()
    server = JupyterServerProcess(base / "notebooks", bare_env(base / "cache"), cogym={
        "lm_model": "admin-model", "lm_base_url": scripted_lm.base_url})
    with server:
        yield server


def notebook_kernel(server: JupyterServerProcess) -> Iterator[Kernel]:
    kernel_id, kernel = server.open_notebook_kernel(f"nb-{uuid.uuid4().hex[:8]}.ipynb")
    kernel.run("%load_ext cogym_lab")
    yield kernel
    kernel.client.stop_channels()
    server.request("DELETE", f"api/kernels/{kernel_id}")


@pytest.fixture
def kernel(plain_server) -> Iterator[Kernel]:
    yield from notebook_kernel(plain_server)


@pytest.fixture
def admin_kernel(admin_server) -> Iterator[Kernel]:
    yield from notebook_kernel(admin_server)


def session_of(server: JupyterServerProcess, kernel: Kernel) -> dict[str, Any]:
    session_id = kernel.value("cogym_session.session_id")
    return server.request("GET", f"cogym/api/sessions/{session_id}")


def end(server: JupyterServerProcess, session: dict[str, Any]) -> dict[str, Any]:
    session_id = session["session_id"]
    server.request("DELETE", f"cogym/api/sessions/{session_id}")
    return wait_for(lambda: (s := server.request("GET", f"cogym/api/sessions/{session_id}"))
                    ["status"] != "running" and s, "the session to end")


def stored_spec(session: dict[str, Any]) -> dict[str, Any]:
    return json.loads((Path(session["results_dir"]) / "hosting.json").read_text())["spec"]


def stored_lm(session: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The LM settings in ``hosting.json``, without the fields left unset."""
    return {key: {name: value for name, value in settings.items() if value is not None}
            for key, settings in (stored_spec(session).get("lm") or {}).items()}


def refusal(server: JupyterServerProcess, body: Any) -> tuple[int, str]:
    """POST a create request that must be refused: its status and message."""
    with pytest.raises(urllib.error.HTTPError) as refused:
        server.request("POST", "cogym/api/sessions", body)
    return refused.value.code, json.loads(refused.value.read())["message"]


# -- what the kernel sets reaches the server -------------------------------------------------------


def test_config_reaches_the_servers_session_and_the_key_only_the_lm(plain_server, kernel,
                                                                    scripted_lm):
    base_url = scripted_lm.base_url
    set_out = kernel.run(f"%cogym config model=cfg-model base_url={base_url} api_key={FAKE_KEY}")
    shown = kernel.run("%cogym config").stdout
    assert "cfg-model" in shown and base_url in shown and "hidden" in shown, shown
    assert "[%cogym config]" in shown
    assert_no_secret(set_out.stdout + shown, "what %cogym config prints")
    assert_no_secret(kernel.value("repr(__import__('cogym_lab.api').api.current_settings())"),
                     "the settings' repr")

    started = kernel.run("%cogym new todo --team collaborative --idle-seconds 30")
    assert "started in the Jupyter server" in started.stdout, started.stdout
    assert_no_secret(started.text, "the output of %cogym new")
    calls = wait_for(lambda: calls_with_model(scripted_lm, "cfg-model"),
                     "an LM call with the model set by %cogym config")
    assert all(auth_of(call) == f"Bearer {FAKE_KEY}" for call in calls)  # the key reached it
    session = session_of(plain_server, kernel)
    spec = stored_spec(session)
    assert stored_lm(session) == {"*": {"model": "cfg-model", "base_url": base_url}}
    assert spec["origin"] == "notebook"

    final = end(plain_server, session)
    folder = Path(final["results_dir"])
    written = sorted(path.name for path in folder.rglob("*") if path.is_file())
    assert {"hosting.json", "session.json", "events.jsonl"} <= set(written), written
    for path in folder.rglob("*"):
        if path.is_file():
            assert_no_secret(path.read_text(errors="replace"), str(path.name))
    assert_no_secret(plain_server.log_path.read_text(errors="replace"), "the server's log")


def test_the_kernel_environment_is_sent_unless_config_says_otherwise(plain_server, kernel,
                                                                     scripted_lm):
    kernel.run(f"%env {ENV_MODEL}=env-model")
    kernel.run(f"%env {ENV_BASE_URL}={scripted_lm.base_url}")
    shown = kernel.run("%cogym config").stdout
    assert "env-model" in shown and f"[{ENV_MODEL}]" in shown, shown

    kernel.run("%cogym new todo --team collaborative --idle-seconds 30")
    wait_for(lambda: calls_with_model(scripted_lm, "env-model"),
             "an LM call with the kernel's COGYM_MODEL")
    first = session_of(plain_server, kernel)
    assert stored_lm(first)["*"]["model"] == "env-model"
    end(plain_server, first)

    # %cogym config wins over the kernel's environment; clearing it falls back to it.
    kernel.run("%cogym config model=config-wins")
    kernel.run("%cogym new todo --team collaborative --idle-seconds 30")
    wait_for(lambda: calls_with_model(scripted_lm, "config-wins"), "an LM call with the model "
             "set by %cogym config over COGYM_MODEL")
    end(plain_server, session_of(plain_server, kernel))
    assert "env-model" in kernel.run("%cogym config --clear model").stdout

    # The session's own --model wins over both.
    kernel.run("%cogym new todo --team collaborative --model flag-wins --idle-seconds 30")
    wait_for(lambda: calls_with_model(scripted_lm, "flag-wins"), "an LM call with --model")
    end(plain_server, session_of(plain_server, kernel))


def test_the_data_folder_is_set_from_the_notebook_and_checked(plain_server, kernel,
                                                              datasets_dir, empty_data_dir,
                                                              tmp_path):
    # The server has no data: the sample that comes with the package stands in.
    started = kernel.run("%cogym new travel_planning --instance 0 --idle-seconds 30").stdout
    assert "started in the Jupyter server" in started, started
    session = session_of(plain_server, kernel)
    assert stored_spec(session).get("data_dir") is None
    end(plain_server, session)

    # A chosen folder without the data: the message says what works from a notebook.
    kernel.run(f"%cogym config data_dir={empty_data_dir}")
    missing = kernel.run("%cogym new travel_planning --instance 0 --idle-seconds 30").stdout
    assert "travel_planning task needs data" in missing, missing
    assert "%cogym data download travel_planning" in missing and "(HTTP" not in missing
    assert "%cogym config data_dir=" in missing
    assert "environment variable" not in missing and "--data-dir or" not in missing

    # A folder the server does not allow is refused, saying which it allows and what to run.
    kernel.run(f"%cogym config data_dir={tmp_path}")
    outside = kernel.run("%cogym new travel_planning --instance 0").stdout
    assert "is outside the folders this server reads task data from" in outside, outside
    assert "%cogym config data_dir=" in outside and str(datasets_dir) in outside
    assert "c.CogymLab.data_dirs" in outside

    # An allowed one reaches the session: the env reads its data from there.
    kernel.run(f"%cogym config data_dir={datasets_dir}")
    started = kernel.run("%cogym new travel_planning --instance 0 --idle-seconds 30").stdout
    assert "started in the Jupyter server" in started, started
    session = session_of(plain_server, kernel)
    assert stored_spec(session)["data_dir"] == str(datasets_dir.resolve())
    final = end(plain_server, session)
    config = json.loads((Path(final["results_dir"]) / "session.json").read_text())
    assert config["env_args"]["data_dir"] == str(datasets_dir.resolve())


def test_without_a_model_the_agent_names_cogym_config(plain_server, kernel):
    kernel.run("%cogym new todo --team collaborative --idle-seconds 30")
    said = wait_for(lambda: [m["text"] for m in (session_of(plain_server, kernel).get("state")
                                                  or {}).get("chat", [])
                             if m["sender"] == "agent"], "the agent to explain the missing LM")
    assert "%cogym config model=" in said[0] and ENV_MODEL not in said[0], said[0]
    end(plain_server, session_of(plain_server, kernel))


def test_an_administrators_model_and_endpoint_win(admin_server, admin_kernel, scripted_lm):
    kernel = admin_kernel
    kernel.run(f"%cogym config model=mine base_url=http://127.0.0.1:9/v1 api_key={FAKE_KEY}")
    started = kernel.run("%cogym new todo --team collaborative --idle-seconds 30").stdout
    assert "started in the Jupyter server" in started, started
    assert "c.CogymLab.lm_model" in started and "not used: 'mine'" in started, started
    assert "c.CogymLab.lm_base_url" in started and "API key" in started
    assert_no_secret(started, "the notes")
    calls = wait_for(lambda: calls_with_model(scripted_lm, "admin-model"),
                     "an LM call with the administrator's model")
    assert not calls_with_model(scripted_lm, "mine")
    # The key was given for another endpoint: it is never sent to the administrator's.
    assert all(FAKE_KEY not in auth_of(call) for call in calls)
    session = session_of(admin_server, kernel)
    assert stored_lm(session) == {"*": {"model": "admin-model",
                                        "base_url": scripted_lm.base_url}}
    end(admin_server, session)

    # From Python, the same notes come as a warning and stay on the handle.
    kernel.run("import warnings, cogym_lab\n"
               "with warnings.catch_warnings(record=True) as caught:\n"
               "    warnings.simplefilter('always')\n"
               "    s = cogym_lab.new_session('todo', team='collaborative', idle_seconds=30)")
    assert set(kernel.value("[w.category.__name__ for w in caught]")) == {"SettingsNote"}
    assert any("not used: 'mine'" in note for note in kernel.value("s.notes"))
    end(admin_server, admin_server.request("GET", "cogym/api/sessions/"
                                           + kernel.value("s.session_id")))
    assert_no_secret(admin_server.log_path.read_text(errors="replace"), "the server's log")


# -- hostile settings -----------------------------------------------------------------------------

HOSTILE_KEYS = ["sk-cogymFAKE-line\u2028sep", "sk-cogymFAKE-nul\x00byte",
                "sk-cogymFAKE-" + "x" * 1_000_000]


def test_hostile_settings_are_refused_cleanly_and_never_echoed(plain_server, kernel):
    kernel.run("import cogym_lab.api as api")
    for value in HOSTILE_KEYS:
        out = kernel.run("try:\n"
                         f"    api.configure(api_key={value!r})\n"
                         "except api.SessionError as error:\n"
                         "    print('refused:', error)").stdout
        assert out.startswith("refused: api_key"), out[:300]
        assert "cogymFAKE" not in out and len(out) < 500
    long = kernel.run("%cogym config api_key=" + HOSTILE_KEYS[2][:5_000]).stdout
    assert "at most 1000" in long and "cogymFAKE" not in long, long[:300]
    typo = kernel.run(f"%cogym config {FAKE_KEY}").stdout  # "api_key=" forgotten
    assert "KEY=VALUE" in typo
    assert_no_secret(typo, "a usage error")
    bad_path = kernel.run("try:\n    api.configure(data_dir='/tmp/a\\x00b')\n"
                          "except api.SessionError as error:\n    print('refused:', error)")
    assert "control characters" in bad_path.stdout
    assert kernel.value("list(api.current_settings().given())") == []  # nothing was set

    # A hostile value in the kernel's environment: the session is not started, and the
    # message names the variable and the fix, not the value.
    kernel.run(f"import os\nos.environ[{ENV_API_KEY!r}] = {HOSTILE_KEYS[0]!r}")
    out = kernel.run("%cogym new todo --idle-seconds 30").stdout
    assert ENV_API_KEY in out and "%cogym config api_key=" in out, out
    assert "cogymFAKE" not in out
    assert kernel.run("print('cogym_session' in dir())").stdout.strip() == "False"

    # The same values sent straight to the REST API: 400, naming the field, never the value.
    for value in HOSTILE_KEYS:
        status, message = refusal(plain_server, {"task": "todo", "lm": {"api_key": value}})
        assert status == 400 and "lm.*.api_key" in message, (status, message[:300])
        assert "cogymFAKE" not in message
    status, message = refusal(plain_server, {"task": "todo", "data_dir": "/tmp/\u2028x"})
    assert status == 400 and "data_dir" in message
    log = plain_server.log_path.read_text(errors="replace")
    assert "cogymFAKE" not in log


# -- the policy and the settings, as functions -----------------------------------------------------


def test_the_policy_puts_the_administrators_lm_in_place_of_the_requests(tmp_path):
    request = CreateRequest.model_validate({"task": "todo", "origin": "notebook", "lm": {
        "*": {"model": "mine", "base_url": "http://127.0.0.1:9/v1", "api_key": FAKE_KEY},
        "user": {"model": "user-model", "temperature": 0.5}}})
    closed = CreatePolicy(results_root=tmp_path, allow_request_lm=False).check(request)
    assert closed.request.lm_arguments() == {"*": {}, "user": {"temperature": 0.5}}
    assert "allow_request_lm" in closed.notes[0] and "%cogym config --clear" in closed.notes[0]

    admin = CreatePolicy(results_root=tmp_path, lm_model="admin-model",
                         lm_base_url="http://127.0.0.1:9/v1").check(request)
    lm = admin.request.lm_arguments()
    assert lm["*"]["model"] == "admin-model" and lm["*"]["base_url"] == "http://127.0.0.1:9/v1"
    assert lm["*"]["api_key"].get_secret_value() == FAKE_KEY  # given for that very endpoint
    assert "model" not in lm["user"]
    assert len(admin.notes) == 1 and "not used: 'mine', 'user-model'" in admin.notes[0]


def test_a_data_folder_must_be_inside_an_allowed_one(tmp_path):
    allowed, other = tmp_path / "data", tmp_path / "other"
    allowed.mkdir()
    other.mkdir()
    (allowed / "escape").symlink_to(other, target_is_directory=True)
    policy = CreatePolicy(results_root=tmp_path / "results", data_root=allowed)
    inside = policy.check(CreateRequest(task="todo", data_dir=str(allowed / "sub")))
    assert inside.request.data_dir == str((allowed / "sub").resolve())
    for value, words in [(str(other), "is outside"), (str(allowed / "escape"), "is outside"),
                         ("../other", "'..'"), (str(allowed / ".." / "other"), "'..'")]:
        with pytest.raises(HostingError, match=words) as refused:
            policy.check(CreateRequest(task="todo", data_dir=value, origin="notebook"))
        assert "%cogym config data_dir=" in str(refused.value), value
    with pytest.raises(HostingError, match="is outside") as refused:
        policy.check(CreateRequest(task="todo", env_args={"data_dir": str(other)}))
    assert "env_args.data_dir" in str(refused.value) and "%cogym" not in str(refused.value)


def test_the_notebooks_settings_fill_only_what_the_spec_leaves_open(monkeypatch):
    from cogym_lab.notebook import settings

    monkeypatch.setattr(settings, "_settings", settings.NotebookSettings())
    environ = {ENV_MODEL: "env-model", ENV_BASE_URL: "http://127.0.0.1:8/v1",
               ENV_API_KEY: FAKE_KEY, DATA_ENV_VAR: "relative/data"}
    settings.configure(model="cfg-model")
    sent = settings.with_notebook_settings(
        SessionSpec(task="todo", lm={"*": {"base_url": "http://127.0.0.1:7/v1"}}), environ)
    every = sent.lm["*"]
    assert (every.model, every.base_url) == ("cfg-model", "http://127.0.0.1:7/v1")
    assert every.api_key is not None and every.api_key.get_secret_value() == FAKE_KEY
    assert sent.origin == "notebook" and sent.data_dir == os.path.abspath("relative/data")
    assert_no_secret(repr(sent) + repr(settings.current()), "a repr")
    assert_no_secret(settings.describe(environ), "the description")
    body = CreateRequest.model_validate(sent.model_dump()).body()
    assert body["lm"]["*"]["api_key"] == FAKE_KEY  # only the wire form holds it
    assert_no_secret(json.dumps(sent.stored()) + sent.model_dump_json(), "the stored spec")
    settings.clear()
    assert settings.current().given() == {}
