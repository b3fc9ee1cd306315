"""``%cogym``: start, list, attach to and end sessions from a notebook cell.

    %load_ext cogym_lab
    %cogym new TASK --instance 3        # any installed task (`cogym-lab tasks`)
    %cogym new TASK --query "Which factors predict churn?" --data df   # one that analyses data
    %cogym list
    %cogym attach 20250101-120000-abc123
    %cogym new TASK --chat cell         # the chat in the panel, not beside the notebook
    %cogym end 20250101-120000-abc123
    %cogym config model=gpt-4o api_key=sk-...   # sent with every session this notebook starts
    %cogym config                               # what is sent (the key masked)
    %cogym config --clear                       # forget it all (or name the settings to forget)
    %cogym view results/run1                    # a finished session's trajectory, event by event
    %cogym data                                 # which task data is here, what is missing
    %cogym data download travel_planning        # fetch a task's data (`cogym-lab data --help`)

Each command that starts or attaches to a session shows its panel, and keeps the handle in the
notebook variable ``cogym_session`` (the same object ``cogym_lab.new_session`` returns).
"""

from __future__ import annotations

import argparse
import json
import shlex
import warnings
from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class
from IPython.display import display

from cogym_lab.core.protocol import PROTOCOLS
from cogym_lab.errors import CogymError
from cogym_lab.notebook.chat_place import CHAT_ENV_VAR, CHAT_PLACES, DEFAULT_CHAT
from cogym_lab.notebook.client import running_cell_id

HANDLE_VARIABLE = "cogym_session"
VIEWER_VARIABLE = "cogym_viewer"


class UsageError(CogymError):
    """A command line the parser cannot use; the message carries the usage line."""


class _HelpShown(CogymError):
    """``--help`` printed its text: nothing more to do."""


class _Parser(argparse.ArgumentParser):
    """An argparse parser that reports problems as exceptions instead of exiting the kernel."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.format_usage().strip()}\n{self.prog}: error: {message}")

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        if message:
            raise UsageError(message.strip())
        raise _HelpShown()


def _key_value(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="%cogym", description="Collaborate with an agent on a task, in a "
                     "session panel. Sessions run in the Jupyter server when its cogym_lab "
                     "extension is there, else in this kernel.", add_help=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    new = commands.add_parser("new", help="Start a session and show its panel.",
                              description="Start a session of TASK with you in one seat.")
    new.add_argument("task", help="The task: any installed one (`cogym-lab tasks` lists "
                                  "them).")
    new.add_argument("--instance", type=int, help="Which benchmark instance of the task.")
    new.add_argument("--team", help="A ready team (`cogym-lab teams` lists them) or a team "
                                    "file's path. Default: the task's own.")
    new.add_argument("--role", default="user",
                     help="Your seat in the team (default: user). Use --watch to take none.")
    new.add_argument("--watch", action="store_true",
                     help="Take no seat: the team's agent and simulated user work alone.")
    new.add_argument("--model", help="The LM of every LM member and of the task's tools "
                                     "(drafting, judges); else COGYM_MODEL and the team file "
                                     "decide.")
    new.add_argument("--base-url", help="An OpenAI-compatible endpoint for that model.")
    new.add_argument("--query", help="For a task that analyses data: your question about it.")
    new.add_argument("--data", help="For a task that analyses data: a DataFrame variable or a "
                                    "file path.")
    new.add_argument("--autonomy", choices=("ask", "free"),
                     help="ask: the agent asks before it runs code; free: it just runs it.")
    new.add_argument("--env-arg", action="append", type=_key_value, default=[],
                     metavar="KEY=VALUE", help="Another argument for the task (repeatable).")
    new.add_argument("--protocol", choices=sorted(PROTOCOLS),
                     help="Scoring protocol (default: cogym, the Co-Gym paper's).")
    new.add_argument("--idle-seconds", type=float,
                     help="Quiet time before everyone is nudged (the team's default otherwise).")
    new.add_argument("--again", action="store_true",
                     help="Start another session even if this cell's last one still runs "
                          "(by default, running the cell again shows that one again).")
    new.add_argument("--chat", choices=CHAT_PLACES,
                     help="Where your chat and the agent's status show: beside the notebook "
                          "in JupyterLab's side area (side) or in the panel (cell); default: "
                          f"the kernel's {CHAT_ENV_VAR}, else {DEFAULT_CHAT}.")
    new.add_argument("--mode", choices=("auto", "server", "local"), default="auto",
                     help="Where the session runs (default: the server when reachable).")

    attach = commands.add_parser("attach", help="Show the panel of an existing session.")
    attach.add_argument("session_id")
    attach.add_argument("--role", help="Your seat (default: the session's first person seat).")
    attach.add_argument("--chat", choices=CHAT_PLACES,
                        help="Where your chat shows: side or cell (see %%cogym new --help).")
    attach.add_argument("--mode", choices=("auto", "server", "local"), default="auto")

    end = commands.add_parser("end", help="End a session now.")
    end.add_argument("session_id")
    end.add_argument("--mode", choices=("auto", "server", "local"), default="auto")

    listing = commands.add_parser("list", help="List the sessions.")
    listing.add_argument("--mode", choices=("auto", "server", "local"), default="auto")

    viewer = commands.add_parser(
        "view", help="Show a finished session's trajectory, event by event.",
        description="The trajectory viewer of a session folder, or of a run folder's sessions "
                    "(pick one in the viewer, or with --session). The viewer is kept in the "
                    "notebook variable cogym_viewer; cogym_viewer.export_html(PATH) writes it "
                    "as one HTML file.")
    viewer.add_argument("folder", help="A session's results folder, or a run folder.")
    viewer.add_argument("--session", help="Which session of a run folder (as the viewer "
                                          "names it, e.g. 003); default: the first.")

    config = commands.add_parser(
        "config", help="Set the model, endpoint, API key or data folder sent with every "
                       "session this notebook starts.",
        description="Settings kept in this kernel and sent with every session it starts, "
                    "wherever the session runs (the Jupyter server's environment cannot be set "
                    "from a notebook). They win over this kernel's COGYM_MODEL, "
                    "OPENAI_BASE_URL, OPENAI_API_KEY and COGYM_DATA, which are sent otherwise; "
                    "a session's own --model/--base-url win over both. Without arguments: "
                    "show what is sent, the key masked.")
    config.add_argument("settings", nargs="*", metavar="KEY=VALUE",
                        help="model=NAME, base_url=URL, api_key=KEY or data_dir=PATH (a folder "
                             "on the machine the session runs on); KEY= unsets one. A bare "
                             "api_key asks for the key without showing it or keeping it in "
                             "the notebook.")
    config.add_argument("--clear", action="store_true",
                        help="Unset the settings named (all of them when none is named).")

    # Listed for --help only: `cogym` hands everything after `data` to `cogym-lab data`.
    data = commands.add_parser(
        "data", add_help=False,
        help="Which task data is present or missing, and fetch it: `cogym-lab data` run by "
             "this kernel's Python (`%%cogym data --help` shows its options).")
    data.add_argument("arguments", nargs=argparse.REMAINDER,
                      help="[download|prepare] [TASK]... and the options of `cogym-lab data`.")
    return parser


@magics_class
class CogymMagics(Magics):
    """The ``%cogym`` line magic."""

    def __init__(self, shell: Any = None) -> None:
        super().__init__(shell)
        #: The session each notebook cell started last, by the cell's id.
        self.started_in_cell: dict[str, str] = {}

    @line_magic
    def cogym(self, line: str) -> Any:
        """Start, list, attach to and end collaboration sessions. ``%cogym --help`` explains."""
        from cogym_lab.api import SessionError

        parser = build_parser()
        try:
            words = shlex.split(line)
            if words[:1] == ["data"]:  # all of it is the data command's, options included
                return self._data(argparse.Namespace(command="data", arguments=words[1:]))
            arguments = parser.parse_args(words)
        except _HelpShown:
            return None
        except (UsageError, ValueError) as error:  # ValueError: unbalanced quotes
            if line.split(maxsplit=1)[:1] == ["config"]:  # the line may hold a key: not echoed
                print("%cogym config: could not read the settings; give each as KEY=VALUE "
                      "(see %cogym config --help).")
                return None
            print(f"%cogym: {error}\n(see %cogym --help)")
            return None
        if arguments.command is None:
            parser.print_help()
            return None
        try:
            return getattr(self, f"_{arguments.command}")(arguments)
        except SessionError as error:
            print(f"%cogym {arguments.command}: {error}")
            return None

    def _keep(self, handle: Any) -> None:
        assert self.shell is not None  # a magic runs in a shell
        self.shell.user_ns[HANDLE_VARIABLE] = handle
        display(handle)

    def _new(self, arguments: argparse.Namespace) -> None:
        from cogym_lab.api import new_session

        cell = running_cell_id()
        if cell is not None and not arguments.again and self._show_again(cell, arguments):
            return
        from cogym_lab.api import SettingsNote

        data: Any = arguments.data
        with warnings.catch_warnings():  # printed below, as plain lines
            warnings.simplefilter("ignore", SettingsNote)
            handle = new_session(
                arguments.task, instance=arguments.instance, team=arguments.team,
                role=None if arguments.watch else arguments.role, query=arguments.query,
                data=data, model=arguments.model, base_url=arguments.base_url,
                autonomy=arguments.autonomy, env_args=dict(arguments.env_arg),
                idle_seconds=arguments.idle_seconds, protocol=arguments.protocol,
                mode=arguments.mode, chat=arguments.chat)
        print(f"Session {handle.session_id} ({handle.task}) started "
              f"{'in the Jupyter server' if handle.backend.kind == 'server' else 'in this kernel'}"
              f"; your seat: {handle.role or 'none (watching)'}. "
              f"The handle is in `{HANDLE_VARIABLE}`.")
        for note in handle.notes:
            print(f"Note: {note}")
        if handle.data_notice:
            print(handle.data_notice)
        if cell is not None:
            self.started_in_cell[cell] = handle.session_id
        self._keep(handle)

    def _show_again(self, cell: str, arguments: argparse.Namespace) -> bool:
        """Running a ``%cogym new`` cell again (Shift+Enter out of habit, or after a kernel
        restart or reopening the notebook, when its panel could not be shown) must not start a
        second session beside the first, unseen: while the cell's last session runs, show it
        again instead. The server remembers which cell started a session, so this works in a
        new kernel too. Returns whether it did."""
        from cogym_lab.api import SessionError, attach

        session_id = self.started_in_cell.get(cell) or self._started_on_server(cell, arguments)
        if session_id is None:
            return False
        try:
            handle = attach(session_id, None if arguments.watch else arguments.role,
                            mode=arguments.mode, chat=arguments.chat)
        except SessionError:  # gone (a restarted server) or no longer yours: start afresh
            return False
        if handle.status != "running":
            return False
        print(f"Session {session_id} ({handle.task}), started by this cell, is still running: "
              "here it is again. Add --again to start another one.")
        self._keep(handle)
        return True

    def _started_on_server(self, cell: str, arguments: argparse.Namespace) -> str | None:
        """The running session this cell started, as the Jupyter server remembers it (an
        earlier kernel of this notebook may have started it); ``None`` in local mode."""
        from cogym_lab.api import SessionError
        from cogym_lab.notebook.backends import server_backend

        if arguments.mode == "local":
            return None
        found = server_backend()
        if found is None:
            return None
        try:
            summary = found.started_in_cell(cell)
        except SessionError:
            return None
        return summary["session_id"] if summary else None

    def _attach(self, arguments: argparse.Namespace) -> None:
        from cogym_lab.api import attach

        self._keep(attach(arguments.session_id, arguments.role, mode=arguments.mode,
                          chat=arguments.chat))

    def _end(self, arguments: argparse.Namespace) -> None:
        from cogym_lab.notebook.backends import backend

        summary = backend(arguments.mode).end(arguments.session_id)
        if summary.get("status") == "running":
            print(f"Session {summary['session_id']} is ending.")
        else:
            print(f"Session {summary['session_id']}: {summary.get('status')} "
                  f"({summary.get('end_reason')}).")

    def _view(self, arguments: argparse.Namespace) -> None:
        from cogym_lab.widgets.trajectory_viewer import view

        try:
            viewer = view(arguments.folder, session=arguments.session)
        except (FileNotFoundError, ValueError) as error:
            print(f"%cogym view: {error}")
            return
        assert self.shell is not None  # a magic runs in a shell
        self.shell.user_ns[VIEWER_VARIABLE] = viewer
        display(viewer)

    def _list(self, arguments: argparse.Namespace) -> None:
        from cogym_lab.api import list_sessions

        display(list_sessions(mode=arguments.mode))

    def _data(self, arguments: argparse.Namespace) -> None:
        from cogym_lab.datasets.checks import ASKED_FROM_ENV_VAR

        # The command's messages then name `%cogym data ...` (its retry line, say).
        _run_streaming(data_command_line(list(arguments.arguments)),
                       {ASKED_FROM_ENV_VAR: "notebook"})

    def _config(self, arguments: argparse.Namespace) -> None:
        from cogym_lab.api import SessionError
        from cogym_lab.notebook import settings

        try:
            if arguments.clear:
                named = [name for name in arguments.settings if "=" not in name]
                if len(named) != len(arguments.settings):
                    raise SessionError("--clear takes setting names (model, base_url, api_key, "
                                       "data_dir), not KEY=VALUE.")
                settings.clear(*named)
            elif arguments.settings:
                settings.configure(**_settings_given(arguments.settings))
        except settings.SettingsError as error:
            raise SessionError(str(error)) from None
        print(settings.describe())


def data_command_line(arguments: list[str]) -> list[str]:
    """The ``cogym-lab data`` command that ``%cogym data ARGUMENTS`` runs: with this kernel's
    own Python (nothing depends on PATH) and, unless the arguments name one, the data folder
    ``%cogym config data_dir=...`` set."""
    import sys

    from cogym_lab.notebook import settings

    command = [sys.executable, "-m", "cogym_lab", "data", *arguments]
    folder = settings.current().data_dir
    named = any(a == "--data-dir" or a.startswith("--data-dir=") for a in arguments)
    if folder and not named and "--help" not in arguments:
        command += ["--data-dir", folder]
    return command


def _run_streaming(command: list[str], added: dict[str, str] | None = None) -> int:
    """Run ``command`` (with the ``added`` variables in this kernel's environment), its output
    (stdout and stderr, carriage returns kept for progress bars) written to this cell as it
    comes; its exit code."""
    import codecs
    import os
    import subprocess
    import sys

    environment = {**os.environ, **(added or {}), "PYTHONUNBUFFERED": "1"}
    text = codecs.getincrementaldecoder("utf-8")("replace")  # a character may span two reads
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=environment) as child:
        assert child.stdout is not None
        while chunk := child.stdout.read1(4096):  # type: ignore[attr-defined]
            sys.stdout.write(text.decode(chunk))
            sys.stdout.flush()
        sys.stdout.write(text.decode(b"", final=True))
        return child.wait()


def _settings_given(texts: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` texts as settings; a bare ``api_key`` is asked for, unseen. Raises
    ``SessionError``, whose message never holds a value."""
    from cogym_lab.api import SessionError

    values: dict[str, str] = {}
    for text in texts:
        key, sep, value = text.partition("=")
        if not sep and key == "api_key":
            value = _ask_for_key()
        elif not sep or not key:  # not echoed: it may be a key typed without "api_key="
            raise SessionError("expected KEY=VALUE for each setting (model=, base_url=, "
                               "api_key=, data_dir=).")
        values[key] = value
    return values


def _ask_for_key() -> str:
    """The API key, typed into a password field of the notebook (never shown, never in a
    cell)."""
    import getpass

    from cogym_lab.api import SessionError

    try:
        return getpass.getpass("API key: ")
    except Exception:  # noqa: BLE001 - a front end that cannot ask (no stdin): say what to do
        raise SessionError("This front end cannot ask for the key. Give it as "
                           "`%cogym config api_key=KEY`, or from Python: "
                           "`cogym_lab.api.configure(api_key=...)`.") from None


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext cogym_lab``: register ``%cogym``."""
    shell.register_magics(CogymMagics)
