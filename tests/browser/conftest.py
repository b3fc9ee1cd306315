"""Fixtures for the real-browser tests: a real ``jupyter lab`` server, Debian's Chromium driven
through Playwright, and the loopback LM the server's agents talk to.

The server, the browser and the LM last for the browser tests only (package scope), so none of
them is left running while the rest of the suite goes on. Chromium is the system one
(``/usr/bin/chromium``, Debian's ``chromium`` package, installed by ``scripts/test.sh``);
Playwright never downloads a browser here.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from cogym_lab.datasets import DATA_ENV_VAR
from cogym_lab.lm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from cogym_lab.notebook.chat_place import CHAT_ENV_VAR
from tests.browser.jupyter_lab import JupyterLabServer
from tests.browser.lab_page import UI_TIMEOUT_MS, LabPage
from tests.browser.screenshots import ARTIFACTS_DIR, REPO_ROOT, StepShots
from tests.browser.scripted_lm import ScriptedLM

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
BROWSER_TEST_TIMEOUT = 900  # seconds: the first test also waits for JupyterLab to start
EXAMPLES_DIR = REPO_ROOT / "examples"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A longer pytest-timeout for browser tests than the suite's default (a module that needs
    longer still says so with its own ``pytestmark``)."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(BROWSER_TEST_TIMEOUT))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator:
    """Keep each phase's report on the item, so fixtures can tell a failed test at teardown."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="package")
def scripted_lm() -> Iterator[ScriptedLM]:
    with ScriptedLM() as lm:
        yield lm


@pytest.fixture
def lm(scripted_lm: ScriptedLM) -> Iterator[ScriptedLM]:
    """The LM of the lab's agents; the test scripts it with ``lm.use(handler)``."""
    scripted_lm.use(None)
    yield scripted_lm
    scripted_lm.use(None)


@pytest.fixture(scope="package")
def lab_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder JupyterLab shows: a copy of the repository's example notebooks."""
    root = tmp_path_factory.mktemp("lab-root")
    if EXAMPLES_DIR.is_dir():
        shutil.copytree(EXAMPLES_DIR, root / "examples",
                        ignore=shutil.ignore_patterns("*.py", ".ipynb_checkpoints",
                                                      "__pycache__"))
    return root


@pytest.fixture(scope="package")
def jupyter_lab(lab_root: Path, datasets_dir: Path, scripted_lm: ScriptedLM,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLabServer]:
    """A real ``jupyter lab`` with the cogym_lab and collaboration extensions, its agents on
    the scripted LM and its tasks on the shared data."""
    # The chat in the cell's panel, where the tests of the panel's parts drive it;
    # test_panel_chat_beside.py puts it beside the notebook with --chat side.
    env = {ENV_BASE_URL: scripted_lm.base_url, ENV_API_KEY: "browser-tests",
           ENV_MODEL: "scripted", DATA_ENV_VAR: str(datasets_dir), CHAT_ENV_VAR: "cell"}
    server = JupyterLabServer(lab_root, tmp_path_factory.mktemp("lab-home"), env)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
        if server.log_path.exists():
            shutil.copyfile(server.log_path, ARTIFACTS_DIR / "jupyter-lab.log")


@pytest.fixture(autouse=True)
def no_session_outlives_its_test(jupyter_lab: JupyterLabServer) -> Iterator[None]:
    """End every session a test left running: the server allows each user a few running
    sessions (c.CogymLab.max_sessions_per_user), and the tests share one server and one user."""
    yield
    status, listing = jupyter_lab.request("GET", "cogym/api/sessions")
    assert status == 200, listing
    for summary in listing["sessions"]:
        if summary.get("status") == "running":
            ended, answer = jupyter_lab.request("DELETE",
                                                f"cogym/api/sessions/{summary['session_id']}")
            assert ended == 200, answer


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `bash scripts/test.sh` installs Debian's "
                    "chromium package (or run `apt-get install chromium`).", pytrace=False)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                             args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A fresh browser context and page; its console is saved, and a failed test's last view
    is kept as a screenshot."""
    context = browser.new_context(viewport={"width": 1600, "height": 1200})
    context.set_default_timeout(UI_TIMEOUT_MS)
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(f"[{message.type}] {message.text}"))
    page.on("pageerror", lambda error: console.append(f"[pageerror] {error}"))
    yield page
    folder = ARTIFACTS_DIR / StepShots.slug(request.node.name)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "console.log").write_text("\n".join(console) + "\n")
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        try:
            page.screenshot(path=str(folder / "failure.png"), full_page=True)
        except Exception:  # noqa: BLE001 - a crashed page: the console log is still saved
            pass
    context.close()


@pytest.fixture
def shots(page: Page, request: pytest.FixtureRequest) -> StepShots:
    """``shots.take("step")`` saves ``test-artifacts/browser/<test>/NN-step.png``."""
    return StepShots(page, request.node.name)


@pytest.fixture
def lab(page: Page, jupyter_lab: JupyterLabServer) -> LabPage:
    """JupyterLab opened in the page, ready to use."""
    lab_page = LabPage(page, jupyter_lab)
    lab_page.open()
    return lab_page
