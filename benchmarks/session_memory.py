"""Memory a Jupyter server keeps for the sessions it hosted, once they have ended.

Run from the repository root::

    python benchmarks/session_memory.py [--sessions 10 100 200] [--sizes 10 100 1000] [--edits 300]

It prints figures and checks nothing.

1. Server RSS: a real ``jupyter server`` with the extension (a subprocess) hosts todo sessions
   of the example team (no LM) one after another over REST, each run to its end; the server's
   RSS is printed after each count in ``--sessions``.
2. Kept per ended session: in a fresh process per size, a SessionHost hosts one session of a
   one-document task (an agent that never acts and a person seat) whose person replaces the
   whole text ``--edits`` times, each a document of ``--sizes`` KB with one word changed, then
   ends it. The figure is the Python memory still allocated afterwards (``tracemalloc``, after
   a garbage collection) minus what was allocated before the session was created; a first small
   session warms the caches up. Where the host has ``finished_session_ttl``, the figure is also
   given once the session was evicted.

To compare with an older tree, run the same script with that tree first on ``PYTHONPATH`` (the
server subprocess inherits it); the script says which tree it imported.
"""

from __future__ import annotations

import argparse
import inspect
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO))  # for tests.support; appended, so a tree on PYTHONPATH comes first


# -- 1. a real server -------------------------------------------------------------------------

def server_rss(counts: list[int]) -> None:
    from tests.support.jupyter_process import JupyterServerProcess

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "root"
        root.mkdir()
        server = JupyterServerProcess(root).start()
        try:
            assert server.process is not None
            pid = server.process.pid
            print(f"server RSS (pid {pid}), todo sessions of the example team, one at a time:")
            print(f"  after 0 sessions: {rss_of(pid):7.1f} MB")
            done = 0
            for count in sorted(counts):
                while done < count:
                    run_one(server)
                    done += 1
                print(f"  after {count:3d} sessions: {rss_of(pid):7.1f} MB")
        finally:
            server.stop()


def run_one(server: Any) -> None:
    created = server.request("POST", "cogym/api/sessions", {"task": "todo", "team": "example"})
    session_id = created["session_id"]
    deadline = time.monotonic() + 60
    while server.request("GET", f"cogym/api/sessions/{session_id}")["status"] == "running":
        if time.monotonic() > deadline:
            raise RuntimeError(f"session {session_id} did not end")
        time.sleep(0.02)


def rss_of(pid: int) -> float:
    """The resident set size of process ``pid``, in MB."""
    import resource

    pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


# -- 2. one document session per size, in a child process -------------------------------------

CHILD = r'''
import asyncio, gc, inspect, json, sys, tempfile, tracemalloc
from pathlib import Path
from cogym_lab.core import CoEnv, Component, RenderType, action
from cogym_lab.envs.registry import register_env
from cogym_lab.members import MemberType, register_member
from cogym_lab.runtime.hosting import SessionHost

class Document(CoEnv):
    """One shared document that a whole-text action replaces."""
    name = "bench_document"
    def __init__(self, size_kb: int = 10, **kwargs):
        super().__init__(**kwargs)
        self.size = size_kb * 1000
    @property
    def task_description(self):
        return "Edit the document."
    def _reset(self, seed):
        self.text = document(self.size, 0)
    def public_components(self):
        return [Component(name="editor", render_type=RenderType.EDITOR, content=self.text)]
    def outcome(self):
        return self.text
    @action("Replace the whole text.", replaces="editor", text="The full text")
    def editor_update(self, role, text):
        self.text = text

class Idle:
    """An agent that never acts: it only receives every edit, as a real one would."""
    def start(self, context): pass
    async def act(self, notification): return None
    def end(self, final): pass

def document(size, version):
    words = [f"w{i % 997}" for i in range(size // 5)]
    words[len(words) // 2] = f"edit{version}"
    return " ".join(words)[:size]

register_env("bench_document", Document)
register_member(MemberType(name="bench-idle", kind="agent", uses_lm=False,
                           build=lambda setup: Idle()))

async def main(size_kb, edits):
    results = Path(tempfile.mkdtemp())
    global TEAM
    TEAM = str(results / "team.toml")
    Path(TEAM).write_text('name = "bench"\ntasks = ["bench_document"]\n'
                          '[members.agent]\ntype = "bench-idle"\n'
                          '[members.user]\nkind = "person"\n')
    options = {"build_in_thread": False}
    evicts = "finished_session_ttl" in inspect.signature(SessionHost).parameters
    if evicts:
        options["finished_session_ttl"] = None  # evicted below, when this script says
    host = SessionHost(results / "results", **options)
    await session_of(host, 10, 5)  # warm-up: imports, caches
    tracemalloc.start()
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    session_id = await session_of(host, size_kb, edits)
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - before
    evicted = None
    if evicts:
        host._evict(session_id)
        gc.collect()
        evicted = tracemalloc.get_traced_memory()[0] - before
    print(json.dumps({"kept": kept, "evicted": evicted}))

async def session_of(host, size_kb, edits):
    from cogym_lab.sessions.spec import SessionSpec
    spec = SessionSpec.model_validate({"task": "bench_document", "team": TEAM,
                                       "people": ["user"], "env_args": {"size_kb": size_kb},
                                       "idle_seconds": 600})
    hosted = await host.create(spec)
    session = hosted.session
    size = size_kb * 1000
    previous = document(size, 0)
    while not session.coordinator.started_at:
        await asyncio.sleep(0.01)
    for version in range(1, edits + 1):
        text = document(size, version)
        await host.act(hosted.session_id, "user",
                       {"name": "EDITOR_UPDATE", "args": {"text": text}}, base=previous)
        previous = text
        while session.coordinator.seq < version + 1:
            await asyncio.sleep(0.002)
    del session
    await host.end(hosted.session_id)
    await asyncio.sleep(0.05)
    return hosted.session_id

asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
'''


def kept_per_session(sizes: list[int], edits: int) -> None:
    print(f"memory kept per ended session ({edits} whole-text edits of one document):")
    for size in sizes:
        # Run outside the repository: ``-c`` puts the working folder first on the path, and
        # the tree to measure is the one on PYTHONPATH (or the installed one).
        done = subprocess.run([sys.executable, "-c", CHILD, str(size), str(edits)],
                              check=False, capture_output=True, text=True,
                              cwd=tempfile.gettempdir(), timeout=1800)
        if done.returncode != 0:
            print(f"  {size:5d} KB: failed\n{done.stderr[-3000:]}")
            continue
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        line = f"  {size:5d} KB document: {figures['kept'] / 2**20:8.2f} MiB kept"
        if figures["evicted"] is not None:
            line += f", {figures['evicted'] / 2**20:8.3f} MiB once evicted"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[10, 100, 200])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--edits", type=int, default=300)
    args = parser.parse_args()
    import cogym_lab
    from cogym_lab.runtime.hosting import SessionHost

    hosting = inspect.signature(SessionHost).parameters
    print(f"cogym_lab from {Path(cogym_lab.__file__).parent.parent.name}/; finished_session_ttl:"
          f" {'yes' if 'finished_session_ttl' in hosting else 'no (before lean sessions)'}")
    server_rss(args.sessions)
    kept_per_session(args.sizes, args.edits)


if __name__ == "__main__":
    main()
