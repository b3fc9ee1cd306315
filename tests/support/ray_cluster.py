"""A real Ray cluster on this machine, for the tests: a head and a second node, one CPU each.

Each node is a ``ray start --block`` process the tests start themselves, with a temp folder of its
own and every port chosen free, so it never meets another cluster on the machine. The nodes say
they are at 127.0.0.2: Ray turns ``127.0.0.1`` into the machine's outward address, any other
loopback address it keeps, so every connection stays on loopback.

``ray start --block`` owns the node's processes: a SIGTERM stops them all cleanly, and when it
dies (SIGKILL, as :meth:`RayNode.kill` does to take a node down mid-batch) its reaper ends the
node's raylet and workers. ``ray stop`` is never used: it stops every Ray process of the
machine, other clusters' too.

Use the session-scoped fixture ``ray_cluster`` (tests/conftest.py lists this module). A driver
(the test's own process, or one it starts) needs the cluster's ``auth`` variables in its
environment too.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

NODE_IP = "127.0.0.2"
START_SECONDS = 120.0  # a node on a busy two-core machine takes 15-30 s
STOP_SECONDS = 60.0
#: The head notices a dead node within about two seconds (Ray's default is 15 s or more).
HEALTH_CHECKS = {"RAY_health_check_initial_delay_ms": "1000", "RAY_health_check_period_ms": "500",
                 "RAY_health_check_timeout_ms": "500", "RAY_health_check_failure_threshold": "3"}
#: Kept out of the nodes' environment: the driver forwards what its workers need.
PRIVATE_PREFIXES = ("OPENAI_", "COGYM_", "RAY_ADDRESS", "RAY_AUTH")
AUTH_VARIABLES = ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def auth_environment() -> dict[str, str]:
    """How the cluster authenticates, said outright to its nodes and drivers alike.

    Left unsaid, a head started while a token lies in ``~/.ray`` (which any local ``ray.init()``
    leaves) turns token authentication on by itself, and the second node, which does not, cannot
    join. And a process whose own local ``ray.init()`` turned it on keeps it for good (Ray sets
    ``RAY_AUTH_MODE=token`` in its environment and caches it): a driver there can only talk to a
    cluster that asks for the token too. So: token authentication, with the token this process
    uses, when it is on here already; none otherwise.
    """
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        return {"RAY_AUTH_MODE": "token",
                **{name: os.environ[name] for name in AUTH_VARIABLES if name in os.environ}}
    return {"RAY_AUTH_MODE": "disabled"}


def _free_ports(count: int) -> list[int]:
    with ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


def _ray_command() -> list[str]:
    script = Path(sys.executable).with_name("ray")
    if script.exists():
        return [str(script)]
    found = shutil.which("ray")
    if found is None:
        pytest.fail("the `ray` command is missing: install the test extra "
                    "(pip install -e '.[test]')", pytrace=False)
    return [found]


def _node_environment(auth: dict[str, str]) -> dict[str, str]:
    environ = {name: value for name, value in os.environ.items()
               if not name.startswith(PRIVATE_PREFIXES)}
    return {**environ, "RAY_USAGE_STATS_ENABLED": "0", **HEALTH_CHECKS, **auth}


@dataclass
class RayNode:
    """One ``ray start --block`` process and what it started."""

    name: str
    process: subprocess.Popen[bytes]
    temp_dir: Path
    log: Path

    def pids(self) -> list[int]:
        """The node's processes: ``ray start`` and everything under it (raylet, workers)."""
        try:
            root = psutil.Process(self.process.pid)
            return [root.pid, *(child.pid for child in root.children(recursive=True))]
        except psutil.NoSuchProcess:
            return []

    def actor_processes(self, name: str) -> list[psutil.Process]:
        """The node's worker processes running an actor of class ``name``."""
        found = []
        for pid in self.pids():
            try:
                process = psutil.Process(pid)
                if process.name().startswith(f"ray::{name}") or any(
                        part.startswith(f"ray::{name}") for part in process.cmdline()[:1]):
                    found.append(process)
            except psutil.Error:
                continue
        return found

    def process_titles(self) -> list[str]:
        """What each of the node's processes calls itself (Ray names its workers ``ray::...``)."""
        titles = []
        for pid in self.pids():
            try:
                titles.append(" ".join(psutil.Process(pid).cmdline())[:80])
            except psutil.Error:
                continue
        return titles

    def kill(self) -> list[int]:
        """Take the node down at once: SIGKILL its ``ray start``; its reaper ends the rest.
        Waits until every process of the node is gone; their pids."""
        pids = self.pids()
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=STOP_SECONDS)
        _wait_gone(pids, f"{self.name}'s processes")
        return pids

    def stop(self) -> None:
        """Stop the node cleanly (SIGTERM: ``ray start`` ends what it started)."""
        pids = self.pids()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=STOP_SECONDS)
        _wait_gone(pids, f"{self.name}'s processes")


def _running(pid: int) -> bool:
    """Whether ``pid`` is still running (an ended process its parent has not reaped is not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_gone(pids: list[int], what: str) -> None:
    deadline = time.monotonic() + STOP_SECONDS
    alive = pids
    while time.monotonic() < deadline:
        alive = [pid for pid in pids if _running(pid)]
        if not alive:
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} still running after {STOP_SECONDS:.0f} s: {alive}")


@dataclass
class LocalRayCluster:
    """A head and worker nodes on this machine (see the module)."""

    root: Path
    #: The head's GCS (``HOST:PORT``), and its Ray Client server (``ray://HOST:PORT``).
    address: str = ""
    client_address: str = ""
    nodes: list[RayNode] = field(default_factory=list)
    #: The nodes' authentication variables, which a driver needs too (:func:`auth_environment`).
    auth: dict[str, str] = field(default_factory=auth_environment)
    _count: int = 0

    def _start(self, head: bool) -> RayNode:
        self._count += 1
        name = "head" if head else f"node{self._count}"
        temp_dir = self.root / name
        log = self.root / f"{name}.log"
        ports = _free_ports(9)
        command = [*_ray_command(), "start", "--block", "--num-cpus=1",
                   f"--node-ip-address={NODE_IP}", f"--temp-dir={temp_dir}",
                   "--disable-usage-stats", "--min-worker-port=0", "--max-worker-port=0",
                   f"--node-manager-port={ports[0]}", f"--object-manager-port={ports[1]}",
                   f"--dashboard-agent-listen-port={ports[2]}",
                   f"--dashboard-agent-grpc-port={ports[3]}",
                   f"--runtime-env-agent-port={ports[4]}", f"--metrics-export-port={ports[5]}",
                   "--object-store-memory=200000000"]
        if head:
            self.address = f"{NODE_IP}:{ports[6]}"
            self.client_address = f"ray://{NODE_IP}:{ports[7]}"
            command += ["--head", f"--port={ports[6]}", f"--ray-client-server-port={ports[7]}",
                        "--include-dashboard=false", f"--dashboard-port={ports[8]}"]
        else:
            command += [f"--address={self.address}"]
        with log.open("wb") as output:
            process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL,
                                       env=_node_environment(self.auth),
                                       cwd=self.root)
        node = RayNode(name, process, temp_dir, log)
        self.nodes.append(node)
        return node

    def _wait_started(self, node: RayNode) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if node.process.poll() is not None:
                raise AssertionError(f"{node.name} did not start:\n"
                                     f"{node.log.read_text(errors='replace')[-3000:]}")
            if b"will now block forever" in node.log.read_bytes():
                return
            time.sleep(0.3)
        raise AssertionError(f"{node.name} did not start in {START_SECONDS:.0f} s:\n"
                             f"{node.log.read_text(errors='replace')[-3000:]}")

    def start(self) -> None:
        head = self._start(head=True)
        self._wait_started(head)
        self.add_node()

    def add_node(self) -> RayNode:
        node = self._start(head=False)
        self._wait_started(node)
        return node

    @property
    def head(self) -> RayNode:
        return self.nodes[0]

    @property
    def workers(self) -> list[RayNode]:
        """The nodes besides the head that are still up."""
        return [node for node in self.nodes[1:] if node.process.poll() is None]

    def ensure_second_node(self) -> RayNode:
        """The second node, started again if a test took it down."""
        return self.workers[0] if self.workers else self.add_node()

    def wait_registered(self) -> None:
        """Wait until the head counts every node that is up as alive, with its CPU: ``ray start``
        says a node started a little before the head has it. This process joins the cluster
        for that, and leaves it (the cluster's ``auth`` must be in its environment)."""
        import ray

        up = 1 + len(self.workers)
        ray.init(address=self.address, log_to_driver=False, logging_level="ERROR")
        try:
            deadline = time.monotonic() + START_SECONDS
            while True:
                alive = [node for node in ray.nodes() if node.get("Alive")
                         and (node.get("Resources") or {}).get("CPU", 0) > 0]
                if len(alive) == up:
                    return
                if time.monotonic() > deadline:
                    raise AssertionError(f"the head has {len(alive)} of {up} nodes up")
                time.sleep(0.2)
        finally:
            ray.shutdown()

    def stop(self) -> None:
        """Stop every node still up, the head last."""
        for node in reversed(self.nodes):
            node.stop()


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[LocalRayCluster]:
    """A head and a second node (one CPU each) on loopback, stopped cleanly at the end."""
    # A short root: Ray's sockets live under the temp folder, and a Unix socket's path is short.
    root = Path(tempfile.mkdtemp(prefix="cgray-"))
    cluster = LocalRayCluster(root)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
