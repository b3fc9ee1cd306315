"""LocalKernelExecutor against a real IPython kernel (jupyter_client + ipykernel)."""

from __future__ import annotations

import asyncio
import base64
import json
import os

import pytest
import pytest_asyncio

from cogym_lab.kernels import (
    CellOutput,
    CellResult,
    KernelExecutor,
    LocalKernelExecutor,
)

pytestmark = [pytest.mark.timeout(120), pytest.mark.asyncio(loop_scope="module")]

# a valid 1x1 RGBA PNG
TINY_PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(tmp_path_factory):
    """One kernel for tests that do not disturb its state."""
    ex = LocalKernelExecutor(tmp_path_factory.mktemp("kernel_cwd"), timeout=60)
    await ex.start()
    yield ex
    await ex.shutdown()


@pytest_asyncio.fixture(loop_scope="module")
async def fresh(tmp_path):
    """A private kernel for tests that interrupt, restart or kill it."""
    async with LocalKernelExecutor(tmp_path, timeout=60) as ex:
        yield ex


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_stdout_and_stderr(shared):
    r = await shared.execute("import sys\nprint('hello')\nprint('world')\nprint('oops', file=sys.stderr)")
    assert r.status == "ok" and r.error is None
    streams = {o.name: o.text for o in r.outputs if o.kind == "stream"}
    assert streams["stdout"] == "hello\nworld\n"  # consecutive chunks merged
    assert streams["stderr"] == "oops\n"
    assert "hello" in r.text() and "oops" in r.text()
    assert isinstance(r.execution_count, int)
    json.dumps(r.to_dict())


async def test_expression_result(shared):
    r = await shared.execute("21 * 2")
    assert r.status == "ok"
    results = [o for o in r.outputs if o.kind == "result"]
    assert len(results) == 1 and results[0].text == "42"
    assert r.text() == "42"


async def test_dataframe_result_has_text_and_html(shared):
    r = await shared.execute("import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})")
    assert r.status == "ok", r.text()
    (res,) = [o for o in r.outputs if o.kind == "result"]
    assert "a" in res.text and "x" in res.text
    assert res.html is not None and "<table" in res.html


async def test_png_display(shared):
    code = (
        "import base64\nfrom IPython.display import Image, display\n"
        f"display(Image(data=base64.b64decode({TINY_PNG_B64!r})))"
    )
    r = await shared.execute(code)
    assert r.status == "ok", r.text()
    (disp,) = [o for o in r.outputs if o.kind == "display"]
    assert disp.png is not None
    assert base64.b64decode(disp.png).startswith(b"\x89PNG")
    json.dumps(r.to_dict())


async def test_error_then_kernel_still_usable(shared):
    r = await shared.execute("def f():\n    raise ValueError('bad value')\nf()")
    assert r.status == "error"
    assert r.error == "ValueError: bad value"
    (err,) = [o for o in r.outputs if o.kind == "error"]
    assert err.name == "ValueError"
    assert err.traceback and "bad value" in err.traceback
    assert "\x1b[" not in err.traceback  # ANSI stripped
    assert "ValueError" in r.text() and "\x1b[" not in r.text()
    r2 = await shared.execute("print('still here')")
    assert r2.status == "ok" and r2.text() == "still here"


async def test_variables_persist(shared):
    assert (await shared.execute("persisted = [1, 2, 3]")).status == "ok"
    r = await shared.execute("sum(persisted)")
    assert r.text() == "6"


async def test_cwd_is_the_given_folder(shared):
    (shared.cwd / "data.csv").write_text("x,y\n1,2\n3,4\n")
    r = await shared.execute("import os, pandas as pd\nprint(os.getcwd())\nprint(pd.read_csv('data.csv')['y'].sum())")
    assert r.status == "ok", r.text()
    cwd_line, total = r.text().splitlines()
    assert os.path.realpath(cwd_line) == os.path.realpath(shared.cwd)
    assert total == "6"


async def test_huge_output_is_truncated(shared):
    r = await shared.execute("for i in range(20):\n    print('y' * 9999)")
    assert r.status == "ok"
    assert r.truncated
    total = 20 * 10_000
    dropped = total - shared.max_output_chars
    assert f"[... output truncated: {dropped} more characters]" in r.text()
    assert sum(len(o.text) for o in r.outputs) < shared.max_output_chars + 200


async def test_small_output_not_truncated(shared):
    r = await shared.execute("print('short')")
    assert not r.truncated and "truncated" not in r.text()


async def test_concurrent_executes_run_one_at_a_time(shared):
    first = shared.execute("import time\ntime.sleep(0.5)\norder_flag = 'first done'")
    second = shared.execute("print(order_flag)")
    r1, r2 = await asyncio.gather(first, second)
    assert r1.status == "ok"
    assert r2.status == "ok" and r2.text() == "first done"


async def test_timeout_interrupts_and_keeps_state(fresh):
    await fresh.execute("kept = 'yes'")
    r = await fresh.execute("import time\ntime.sleep(30)", timeout=1)
    assert r.status == "timeout"
    assert "interrupted" in r.error and "restarted" not in r.error
    assert fresh.alive
    assert fresh.restarts == 0
    r2 = await fresh.execute("print(kept)")
    assert r2.status == "ok" and r2.text() == "yes"


async def test_timeout_ignoring_sigint_restarts_kernel(fresh):
    fresh.interrupt_grace = 2.0
    await fresh.execute("lost = 1")
    pid_before = fresh.pid
    code = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)"
    r = await fresh.execute(code, timeout=1)
    assert r.status == "timeout"
    assert "restarted" in r.error and "lost" in r.error
    assert fresh.alive and fresh.restarts == 1
    assert fresh.pid != pid_before
    r2 = await fresh.execute("lost")
    assert r2.status == "error" and r2.error.startswith("NameError")


async def test_kernel_death_is_detected_and_restarted(fresh):
    await fresh.execute("before_death = 1")
    r = await fresh.execute("import os\nos._exit(1)")
    assert r.status == "died"
    assert "died" in r.error and "restarted" in r.error
    assert fresh.alive and fresh.restarts == 1
    r2 = await fresh.execute("print(1 + 1)")
    assert r2.status == "ok" and r2.text() == "2"
    r3 = await fresh.execute("before_death")
    assert r3.status == "error" and "NameError" in r3.error


async def test_explicit_restart_and_interrupt(fresh):
    await fresh.execute("a = 5")
    await fresh.restart()
    r = await fresh.execute("a")
    assert r.status == "error"
    task = asyncio.create_task(fresh.execute("import time\ntime.sleep(30)"))
    await asyncio.sleep(1.0)
    await fresh.interrupt()
    r2 = await task
    assert r2.status == "error" and "KeyboardInterrupt" in r2.error


async def test_shutdown_kills_kernel_and_is_idempotent(tmp_path):
    ex = LocalKernelExecutor(tmp_path)
    assert isinstance(ex, KernelExecutor)
    assert not ex.alive
    await ex.start()
    km, pid = ex.kernel_manager, ex.pid
    assert ex.alive and pid is not None and _pid_exists(pid)
    await ex.shutdown()
    assert not ex.alive
    assert not await km.is_alive()
    assert not _pid_exists(pid)
    await ex.shutdown()  # idempotent


async def test_execute_starts_kernel_lazily(tmp_path):
    ex = LocalKernelExecutor(tmp_path)
    try:
        r = await ex.execute("print('lazy')")
        assert r.status == "ok" and r.text() == "lazy"
    finally:
        await ex.shutdown()


async def test_result_text_and_dict():
    r = CellResult(
        code="x",
        status="error",
        execution_count=3,
        outputs=[
            CellOutput(kind="stream", name="stdout", text="out\n"),
            CellOutput(kind="error", name="KeyError", text="KeyError: 'x'", traceback="line1\nKeyError: 'x'"),
        ],
        error="KeyError: 'x'",
    )
    assert r.text() == "out\nline1\nKeyError: 'x'"
    d = json.loads(json.dumps(r.to_dict()))
    assert d["outputs"][1]["name"] == "KeyError" and d["execution_count"] == 3


ENV_PROBE = ("import json, os, tempfile\n"
             "print(json.dumps({'env': dict(os.environ), 'home': os.path.expanduser('~'),"
             " 'temp': tempfile.gettempdir(), 'cwd': os.getcwd()}))")


async def test_an_isolated_kernel_has_its_own_home_temp_and_a_short_environment(
        tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("COGYM_DATA", str(data))
    monkeypatch.setenv("SOME_TOKEN", "not for kernels")
    ex = LocalKernelExecutor(tmp_path / "cwd", hidden_paths=[tmp_path / "elsewhere"])
    try:
        seen = json.loads((await ex.execute(ENV_PROBE)).text())
        sandbox = ex.sandbox
        assert sandbox is not None and sandbox.owns_root  # a private folder of its own
        await ex.restart()  # a restart keeps the same sandbox
        again = json.loads((await ex.execute(ENV_PROBE)).text())
    finally:
        await ex.shutdown()
    assert seen["home"] == str(sandbox.home) and seen["temp"] == str(sandbox.tmp)
    assert seen["cwd"] == str(tmp_path / "cwd")
    assert "COGYM_DATA" not in seen["env"] and "SOME_TOKEN" not in seen["env"]
    assert str(data) not in json.dumps(seen["env"])
    assert again["home"] == seen["home"]
    assert ex.sandbox is None and not sandbox.root.exists()  # removed at shutdown


async def test_a_kernel_that_is_not_isolated_keeps_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SOME_TOKEN", "for this kernel")
    ex = LocalKernelExecutor(tmp_path, isolated=False)
    try:
        seen = json.loads((await ex.execute(ENV_PROBE)).text())
    finally:
        await ex.shutdown()
    assert seen["env"]["SOME_TOKEN"] == "for this kernel"
    assert seen["home"] == os.path.expanduser("~") and ex.sandbox is None
