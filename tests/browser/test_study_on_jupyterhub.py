"""A study on a real JupyterHub: the dummy authenticator, the simple local-process spawner and
configurable-http-proxy (from npm, installed by scripts/test.sh into .cache/). Two participants
log in through Chromium, give consent, meet the two conditions in different orders, play a
session each time in the session panel, answer the questionnaires, and the export has both;
neither sees a condition's name, and one cannot read the other's state.

Slow-ish: the hub, two single-user servers and their kernels start (about a minute and a half
on a small machine). ``COGYM_DOC_SHOTS=1`` also saves the participant's screenshots into
docs/img/studies/.
"""

from __future__ import annotations

import contextlib
import csv
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from cogym_lab.studies.hub.export import export_study
from cogym_lab.studies.hub.serve import hub_config
from tests.browser.jupyter_lab import free_port, write_quiet_settings
from tests.browser.lab_page import LabPage
from tests.browser.screenshots import ARTIFACTS_DIR, REPO_ROOT
from tests.support.hub_study import LABELS, SECRET_NAMES, study_folder

pytestmark = pytest.mark.timeout(600)

PROXY = REPO_ROOT / ".cache" / "configurable-http-proxy" / "node_modules" / ".bin" / \
    "configurable-http-proxy"
DOC_SHOTS = REPO_ROOT / "docs" / "img" / "studies"
#: JupyterHub's servers want the XSRF token with every request a page makes with its cookie.
XSRF = ("const headers = {'X-XSRFToken': decodeURIComponent("
        "(/(?:^|;\\s*)_xsrf=([^;]*)/.exec(document.cookie) || [])[1] || '')};")
UI = 120_000  # ms: a participant's server and kernel start on first login


@pytest.fixture
def no_session_outlives_its_test() -> None:
    """This module runs its own hub, not the package's JupyterLab (its fixture is not needed)."""


class Hub:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.study = study_folder(root / "study")
        self.log_path = root / "jupyterhub.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        if not PROXY.exists():
            pytest.fail(f"{PROXY} is missing: `bash scripts/test.sh` installs "
                        "configurable-http-proxy from npm into .cache/", pytrace=False)
        config = hub_config(self.study, port=self.port, proxy_command=str(PROXY),
                            homes=self.root / "homes")
        settings = self.root / "lab-settings"
        write_quiet_settings(settings)
        with config.open("a") as extra:  # free ports, and JupyterLab without its pop-ups
            extra.write(f"c.JupyterHub.hub_port = {free_port()}\n"
                        f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{free_port()}'\n"
                        f"c.Spawner.environment['JUPYTERLAB_SETTINGS_DIR'] = {str(settings)!r}\n"
                        "c.Spawner.args = "
                        "['--LabApp.extension_manager=readonly', '--allow-root']\n")
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1",
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(config)], cwd=self.root, env=env,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log_path.read_text()
            try:
                with urllib.request.urlopen(f"{self.url}/hub/api", timeout=5) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                time.sleep(0.25)
        raise AssertionError("the hub did not answer:\n" + self.log_path.read_text())

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        # The single-user servers start sessions of their own, out of the hub's process group:
        # noted while the hub lives, so that none (nor its kernels) outlives the test.
        try:
            spawned = psutil.Process(process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            spawned = []
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # the proxy
        for child in spawned:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[Hub]:
    running = Hub(tmp_path)
    try:
        running.start()
        yield running
    finally:
        running.stop()
        ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
        if running.log_path.exists():
            shutil.copyfile(running.log_path, ARTIFACTS_DIR / "jupyterhub.log")


class Participant:
    """One person in a browser context of their own, logged in to the hub."""

    def __init__(self, browser: Browser, hub: Hub, name: str, shots: bool = False) -> None:
        self.hub = hub
        self.name = name
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.context.set_default_timeout(UI)
        self.page: Page = self.context.new_page()
        self.console: list[str] = []
        self.page.on("console", lambda message: self.console.append(message.text))
        self.shots = shots
        self.shot_dir = ARTIFACTS_DIR / f"study-hub-{name}"
        shutil.rmtree(self.shot_dir, ignore_errors=True)
        self.shot_dir.mkdir(parents=True, exist_ok=True)

    @property
    def study(self) -> Locator:
        return self.page.get_by_test_id("study")

    def shot(self, name: str) -> None:
        path = self.shot_dir / f"{name}.png"
        self.study.screenshot(path=str(path))
        if self.shots and os.environ.get("COGYM_DOC_SHOTS"):
            DOC_SHOTS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, DOC_SHOTS / f"{name}.png")

    def no_secret_shown(self) -> None:
        text = self.page.locator("body").inner_text()
        for secret in SECRET_NAMES:
            assert secret not in text, f"{secret} shown to {self.name}"

    def log_in_and_open(self) -> None:
        page = self.page
        page.goto(f"{self.hub.url}/hub/login")
        page.locator("#username_input").fill(self.name)
        page.locator("#password_input").fill("any")
        page.locator("#login_submit").click()
        page.wait_for_url(f"**/user/{self.name}/lab/tree/study.ipynb*", timeout=UI)
        lab = LabPage(page, None)  # type: ignore[arg-type] - only its page is used
        lab.wait_until_ready()
        notebook = lab.current_notebook()
        lab.run_cell(notebook, 1)
        expect(self.study).to_be_visible()

    def step(self, kind: str) -> None:
        expect(self.study).to_have_attribute("data-kind", kind)
        self.no_secret_shown()

    def continue_(self) -> None:
        self.study.get_by_test_id("step-continue").click()

    def play_session(self, message: str) -> str:
        self.step("session")
        title = self.study.get_by_test_id("step-title").inner_text()
        self.study.get_by_test_id("session-start").click()
        chat = self.study.get_by_test_id("chat-input")
        expect(chat).to_be_visible()
        chat.fill(message)
        self.study.get_by_test_id("chat-send").click()
        expect(self.study.locator(".cogym-panel")).to_contain_text(message)
        return title

    def finish_session(self) -> None:
        self.study.get_by_test_id("session-done").click()

    def answer_after_session(self, point: int, comment: str) -> None:
        self.step("questionnaire")
        form = self.study.get_by_test_id("questionnaire")
        form.locator(f'[data-item="satisfied"] label:has-text("{point}")').click()
        box = form.locator('[data-item="comment"] textarea')
        box.fill(comment)
        box.press("Control+Enter")  # Enter is a new line in a text box; Ctrl+Enter submits


def test_two_participants_on_jupyterhub(browser: Browser, hub: Hub) -> None:
    alice = Participant(browser, hub, "alice", shots=True)
    bob = Participant(browser, hub, "bob")
    try:
        alice.log_in_and_open()
        alice.step("consent")
        alice.shot("consent")
        go = alice.study.get_by_test_id("step-continue")
        expect(go).to_be_disabled()
        alice.study.get_by_test_id("consent-agree").check()
        go.click()
        alice.step("instructions")
        alice.study.get_by_test_id("step-continue").press("Enter")

        bob.log_in_and_open()  # bob arrives second: the other row of the Latin square
        bob.study.get_by_test_id("consent-agree").check()
        bob.continue_()
        bob.step("instructions")
        bob.continue_()

        titles: dict[str, list[str]] = {"alice": [], "bob": []}
        for position in range(2):
            for person in (alice, bob):
                titles[person.name].append(person.play_session(f"{person.name} {position}"))
                if person is alice and position == 0:
                    alice.shot("session")
                person.finish_session()
                if person is alice and position == 0:
                    alice.step("questionnaire")
                    alice.shot("questionnaire")
                person.answer_after_session(4 if person is alice else 2, f"<b>{person.name}</b>")
        assert titles["alice"] == list(LABELS)
        assert titles["bob"] == list(reversed(LABELS))

        for person in (alice, bob):
            person.step("questionnaire")
            form = person.study.get_by_test_id("questionnaire")
            rows = form.get_by_test_id("ranking-row")
            expect(rows).to_have_count(2)
            second = rows.nth(1).get_attribute("data-label")  # labels in the order met
            assert second == titles[person.name][1]
            form.get_by_role("button", name=f"Move {second} up").click()
            expect(rows.first).to_have_attribute("data-label", str(second))
            form.locator('[data-item="again"] label:has-text("yes")').click()
            slider = form.locator('[data-scale="mental"] input')
            slider.focus()
            slider.press("ArrowRight")  # 50 -> 55
            expect(form.locator('[data-scale="mental"] output')).to_have_text("55")
            if person is alice:
                alice.shot("end-questionnaire")
            person.continue_()
            person.step("done")
        alice.shot("thanks")

        # no cross-visibility: bob's login reaches neither alice's server nor her state
        _, state = alice.page.evaluate(f"""async () => {{ {XSRF}
            const r = await fetch('/user/alice/cogym/study/api/state', {{headers}});
            return [r.status, await r.json()]; }}""")
        assert "participant" in state, state
        mine = state["participant"]
        other = bob.page.request.get(f"{hub.url}/user/alice/cogym/study/api/state",
                                     max_redirects=5)
        assert other.status == 403 and mine not in other.text(), other.status
        refused = bob.page.evaluate(f"""async () => {{ {XSRF}
            return (await fetch('/user/bob/cogym/study/api/participants/{mine}',
                                {{headers}})).status; }}""")
        assert refused == 403

        out = hub.root / "export"
        counts = export_study(hub.study.root, out)
        assert counts["participants"] == 2 and counts["sessions"] == 4
        with (out / "participants.csv").open() as table:
            sequences = {row["sequence"] for row in csv.DictReader(table)}
        assert sequences == {"|".join(SECRET_NAMES), "|".join(reversed(SECRET_NAMES))}
        with (out / "answers.csv").open() as table:
            answers = list(csv.DictReader(table))
        assert {row["value"] for row in answers if row["item"] == "comment"} == {
            "<b>alice</b>", "<b>bob</b>"}
        assert {row["value"] for row in answers if row["part"] == "mental"} == {"55"}
        with (out / "sessions.csv").open() as table:
            sessions = list(csv.DictReader(table))
        assert all(int(row["person_messages"]) == 1 for row in sessions)
        with (out / "events.csv").open() as table:
            events = {row["event"] for row in csv.DictReader(table)}
        assert {"consented", "session_started", "session_ended", "answer_submitted"} <= events
        for table in out.glob("*.csv"):
            assert "alice" not in table.read_text().replace("<b>alice</b>", "")
    finally:
        for person in (alice, bob):
            (person.shot_dir / "console.log").write_text("\n".join(person.console))
            person.context.close()
