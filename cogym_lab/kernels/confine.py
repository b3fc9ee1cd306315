"""Start a kernel where no other process and no hidden folder can be seen (Linux).

A kernel runs as the same user as the session that starts it, so a cell could read
``/proc/<pid>/environ`` and ``/proc/<pid>/cmdline`` of its parent, of the shell that started the
session or of any other process of that user, and find ``COGYM_DATA`` or ``--data-dir`` there;
knowing the path, it could open the answer key. Clearing the kernel's own environment
(:mod:`cogym_lab.kernels.sandbox`) cannot stop that. This launcher wraps the kernel's command:

* new user, mount and PID namespaces (unprivileged, as ``unshare -U -m -p`` makes them): the
  kernel is process 1 of its own PID namespace and ``/proc`` is mounted afresh for it, so it
  sees itself and the processes it starts, nothing else; no ancestor, no sibling;
* every hidden folder (the data directory, the folder ``COGYM_DATA`` names, the data cache) is
  covered by an empty read-only ``tmpfs`` in the kernel's mount namespace: the files are not
  there for the kernel, whatever path it tries;
* the kernel keeps no capability (the bounding set is emptied, ``SECBIT_NOROOT`` locked, no new
  privileges), so it cannot unmount the covers or mount anything;
* ``JPY_PARENT_PID`` is dropped: it names a process the kernel cannot see.

What it still shows: ``/proc/self/mountinfo`` lists the covered folders' paths (empty, but
named). The launcher's own process stays outside the namespace, waits for the kernel and ends
with it; a kernel whose launcher is killed is killed too.

This file is run as a script by its path (``python confine.py --hide DIR -- cmd ...``): it imports
the standard library only, so it starts fast and needs nothing from the kernel's environment.
``--check`` only tries the namespaces and says whether they work here.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import signal
import subprocess
import sys
from collections.abc import Iterable, Sequence

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS = 1, 24, 28, 38
SECBIT_NOROOT, SECBIT_NOROOT_LOCKED = 1 << 0, 1 << 1
#: The exit status of a launcher that could not confine the kernel (the kernel never ran).
NOT_CONFINED = 125

__all__ = ["NOT_CONFINED", "confined_command", "confinement_available", "main"]


def confined_command(command: Sequence[str], hidden: Iterable[str]) -> list[str]:
    """``command`` run through this launcher, with ``hidden`` folders covered."""
    hides = [arg for folder in dict.fromkeys(map(str, hidden)) for arg in ("--hide", folder)]
    return [sys.executable, os.path.abspath(__file__), *hides, "--", *command]


@functools.cache
def confinement_available() -> bool:
    """Whether this machine lets a process make the namespaces (tried once per process)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        done = subprocess.run([sys.executable, os.path.abspath(__file__), "--check"],
                              capture_output=True, timeout=30, check=False,
                              env={"PATH": os.environ.get("PATH", "")})
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def _call(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        # A builtin error, not a class of the package's: this script imports nothing of
        # cogym_lab (see the module docstring), so it cannot derive from CogymError.
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _enter_namespaces(libc: ctypes.CDLL) -> None:
    uid, gid = os.getuid(), os.getgid()
    _call(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID), "unshare")
    # The same ids inside as outside: files keep their owners.
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        try:
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
        except FileNotFoundError:  # no setgroups file on old kernels
            if name != "setgroups":
                raise
    # Nothing mounted here may reach the session's own mount namespace.
    _call(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")


def _cover(libc: ctypes.CDLL, folders: Iterable[str]) -> None:
    """An empty read-only tmpfs over each existing folder."""
    for folder in folders:
        if not os.path.isdir(folder):
            continue
        _call(libc.mount(b"tmpfs", os.fsencode(folder), b"tmpfs",
                         MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, b"size=4k,mode=0555"),
              f"cover {folder}")


def _drop_privileges(libc: ctypes.CDLL) -> None:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            last = int(handle.read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        _call(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "drop a capability")
    _call(libc.prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED, 0, 0, 0),
          "lock out root's capabilities")
    _call(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no new privileges")


def _child(libc: ctypes.CDLL, command: list[str] | None) -> None:
    """Process 1 of the new PID namespace: its own /proc, no privileges, then the kernel."""
    try:
        _call(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "die with the launcher")
        _call(libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None),
              "mount /proc")
        _drop_privileges(libc)
        if command is None:  # --check: it worked
            os._exit(0)
        environ = {k: v for k, v in os.environ.items() if k != "JPY_PARENT_PID"}
        os.execvpe(command[0], command, environ)
    except OSError as error:  # a step failed: the kernel must not start unconfined
        print(f"cogym_lab: could not confine the kernel: {error}", file=sys.stderr)
        os._exit(NOT_CONFINED)


def _wait(child: int) -> int:
    """Wait for the kernel, passing on the signals sent to the launcher alone; its status."""
    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signum)

    # An interrupt reaches the kernel from the process group jupyter_client signals: passing
    # it on as well would interrupt twice.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                   signal.SIGUSR2):
        signal.signal(signum, forward)
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code  # killed by a signal: as a shell reports it


def main(argv: Sequence[str]) -> int:
    """``[--check] [--hide DIR]... -- command ...``: run ``command`` confined."""
    args = list(argv)
    check = "--check" in args[:1]
    hidden: list[str] = []
    command: list[str] | None = None
    if not check:
        while args and args[0] == "--hide" and len(args) > 1:
            hidden.append(args[1])
            args = args[2:]
        if not args or args[0] != "--" or len(args) < 2:
            print("usage: confine.py [--check] [--hide DIR]... -- command ...", file=sys.stderr)
            return 2
        command = args[1:]
    libc = _libc()
    try:
        _enter_namespaces(libc)
        _cover(libc, hidden)
    except OSError as error:  # a step failed: the kernel must not start unconfined
        print(f"cogym_lab: could not confine the kernel: {error}", file=sys.stderr)
        return NOT_CONFINED
    child = os.fork()
    if child == 0:
        _child(libc, command)
    return _wait(child)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
