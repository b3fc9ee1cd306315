"""The Python API for notebooks: start, attach to, drive and end collaboration sessions.

>>> import cogym_lab
>>> s = cogym_lab.new_session(TASK, instance=3)   # any installed task; you take the "user" seat
>>> s                                                          # shows the session panel
>>> s.send("We are four people; keep dinners cheap.")
>>> s.view["editor"].content                                   # what you see now
>>> s.end()

Sessions run in the Jupyter server that launched this kernel when its cogym_lab extension is
there (the panel then talks to the server directly and stays live while the kernel is busy), and
otherwise inside this kernel. The magics (``%cogym``) are a thin layer over these functions.

Every session started here is sent this kernel's settings (:func:`configure`, which is what
``%cogym config`` calls, over the kernel's ``COGYM_MODEL``/``OPENAI_*``/``COGYM_DATA``): see
:mod:`cogym_lab.notebook.settings`.
"""

from __future__ import annotations

import asyncio
import html
import io
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cogym_lab.envs.registry import task_class
from cogym_lab.notebook.backends import Backend, CreateRequest, SessionError, backend
from cogym_lab.notebook.chat_place import DEFAULT_CHAT, chat_place
from cogym_lab.notebook.data_arg import resolve_data
from cogym_lab.notebook.settings import (
    NotebookSettings,
    SettingsError,
    with_notebook_settings,
)
from cogym_lab.notebook.settings import configure as _configure
from cogym_lab.notebook.settings import current as current_settings
from cogym_lab.runtime.models import validation_message
from cogym_lab.sessions.spec import EVERY_LM, Limits, LMSettings, NotebookRef, SessionSpec

__all__ = ["SessionError", "SessionHandle", "SessionList", "SettingsNote", "attach", "configure",
           "current_settings", "list_sessions", "new_session"]


class SettingsNote(UserWarning):
    """The server did not use some of the settings sent with a session (its administrator
    chose the LM); the message says which."""


def configure(**values: str | None) -> NotebookSettings:
    """Set ``model``, ``base_url``, ``api_key`` or ``data_dir`` for every session this kernel
    starts from now on (``None`` or ``""`` unsets one): ``%cogym config`` from Python. Raises
    :class:`SessionError` for a value that cannot be used (its message never shows a key)."""
    try:
        return _configure(**values)
    except SettingsError as error:
        raise SessionError(str(error)) from None

DEFAULT_ROLE = "user"


def new_session(task: str | SessionSpec, *, instance: int | None = None,
                team: str | None = None, role: str | None = DEFAULT_ROLE,
                query: str | None = None, data: Any = None, model: str | None = None,
                base_url: str | None = None, autonomy: str | None = None,
                env_args: dict[str, Any] | None = None, idle_seconds: float | None = None,
                timeout: float | None = None, agent_step_limit: int | None = None,
                seed: int | None = None, protocol: str | None = None, mode: str = "auto",
                results_dir: str | Path | None = None, chat: str | None = None) -> SessionHandle:
    """Start a session of ``task`` and return its handle.

    ``task`` is a task's name, or a whole :class:`~cogym_lab.sessions.SessionSpec` (then the
    other session arguments are not used; ``role``, ``mode`` and ``results_dir`` still are).
    ``role`` is your seat (``"user"`` by default; ``None`` to only watch a team of agents and
    simulated users). ``team`` defaults to the task's own (``CoEnv.default_team``:
    ``collaborative`` unless the task says otherwise). ``model``/``base_url`` set the LM of every LM
    member and of the task's own tools (drafting assistant, judges, plan parser); else
    ``COGYM_MODEL``, ``OPENAI_BASE_URL`` and the team file decide. For a task that runs in a
    notebook, ``query`` is your question and ``data`` a DataFrame, the name of one in this
    notebook, or a file path. ``autonomy`` is ``"free"`` or ``"ask"`` (the agent asks before
    running code). ``protocol`` names the scoring protocol (``"cogym"``, the paper's, by
    default). ``mode`` is ``"auto"``, ``"server"`` or ``"local"``; ``results_dir`` is used by
    local sessions. ``chat`` is where the handle, displayed, shows your chat: ``"side"``
    (JupyterLab's side area, beside the notebook) or ``"cell"`` (in the panel); by default the
    kernel's ``COGYM_CHAT``, else ``"side"``.

    The spec is sent with this kernel's settings (:func:`configure`, else the kernel's
    ``COGYM_MODEL``, ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and ``COGYM_DATA``) in whatever it
    leaves open. When the server does not use some of them (its administrator chose the LM),
    a :class:`SettingsNote` warning says so, and the handle's ``notes`` keep it.
    """
    chat = _chat_place(chat)
    where = backend(mode, results_dir)
    if isinstance(task, SessionSpec):
        spec = task
        if role and role not in spec.people:
            spec = spec.model_copy(update={"people": [*spec.people, role]})
    else:
        spec = _spec(where, task, instance=instance, team=team, role=role, query=query,
                     data=data, model=model, base_url=base_url, autonomy=autonomy,
                     env_args=env_args, protocol=protocol,
                     limits={"idle_seconds": idle_seconds, "timeout": timeout,
                             "agent_step_limit": agent_step_limit, "seed": seed})
    try:
        spec = with_notebook_settings(spec)
        request = CreateRequest.model_validate(spec.model_dump(exclude_none=True))
    except SettingsError as error:
        raise SessionError(str(error)) from None
    except ValidationError as error:
        raise SessionError(validation_message(error)) from None
    summary = where.create(request)
    handle = SessionHandle(where, summary, role=role, chat=chat)
    for note in handle.notes:
        warnings.warn(note, SettingsNote, stacklevel=2)
    return handle


def _spec(where: Backend, task: str, *, instance: int | None, team: str | None,
          role: str | None, query: str | None, data: Any, model: str | None,
          base_url: str | None, autonomy: str | None, env_args: dict[str, Any] | None,
          protocol: str | None, limits: dict[str, Any]) -> SessionSpec:
    """The spec ``new_session``'s keyword arguments describe. Raises :class:`SessionError`."""
    if autonomy is not None and autonomy not in ("free", "ask"):
        raise SessionError(f"autonomy must be 'free' or 'ask', not {autonomy!r}.")
    arguments = dict(env_args or {})
    if query is not None:
        arguments["query"] = query
    if autonomy is not None:
        arguments["autonomy"] = autonomy
    task_type = task_class(task)
    notebook = _notebook(where) if getattr(task_type, "runs_in_notebook", False) else None
    if data is not None:
        try:
            arguments["data"] = resolve_data(data, share_kernel=notebook is not None)
        except ValueError as error:
            raise SessionError(str(error)) from None
    lm = LMSettings(model=model or None, base_url=base_url or None)
    try:
        return SessionSpec(task=task, instance=instance, team=team,
                           people=[role] if role else [], env_args=arguments,
                           lm={EVERY_LM: lm} if lm.settings() else {},
                           notebook=NotebookRef(**notebook) if notebook else None,
                           protocol=protocol,
                           limits=Limits(**{k: v for k, v in limits.items() if v is not None}))
    except ValidationError as error:
        raise SessionError(validation_message(error)) from None


def _notebook(where: Backend) -> dict[str, str] | None:
    finder = getattr(where, "notebook", None)
    return finder() if finder else None


def attach(session_id: str, role: str | None = None, *, mode: str = "auto",
           chat: str | None = None) -> SessionHandle:
    """A handle on a running (or ended) session; ``role`` defaults to your first person seat
    (a server says which seats are yours; in this kernel every seat is). ``chat``: where the
    handle, displayed, shows your chat (see :func:`new_session`)."""
    chat = _chat_place(chat)
    where = backend(mode)
    summary = where.snapshot(session_id)
    mine = summary.get("seats", summary.get("people")) or []
    if role is None:
        role = mine[0] if mine else None
    elif role not in mine:
        seats = ", ".join(mine) or "none"
        raise SessionError(f"{role!r} is not a person seat of yours in session {session_id} "
                           f"(your seats: {seats}).")
    return SessionHandle(where, summary, role=role, chat=chat)


def _chat_place(chat: str | None) -> str:
    try:
        return chat_place(chat)
    except ValueError as error:
        raise SessionError(str(error)) from None


def list_sessions(*, mode: str = "auto") -> SessionList:
    """The sessions of the server (or of this kernel), newest last."""
    return SessionList(sorted(backend(mode).list(), key=lambda s: s.get("created_at") or 0))


class SessionList(list):
    """Session summaries that show as a table in a notebook."""

    columns = ("session_id", "task", "team", "people", "status", "end_reason")

    def _cell(self, summary: dict[str, Any], column: str) -> str:
        value = summary.get(column)
        return ", ".join(value) if isinstance(value, list) else "" if value is None else str(value)

    def __repr__(self) -> str:
        if not self:
            return "No sessions."
        rows = [[self._cell(s, c) for c in self.columns] for s in self]
        widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(self.columns)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(self.columns, widths, strict=True))]
        lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        if not self:
            return "<p>No sessions.</p>"
        head = "".join(f"<th>{c}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(self._cell(s, c))}</td>"
                                        for c in self.columns) + "</tr>" for s in self)
        return f"<table><tr>{head}</tr>{body}</table>"


class SessionHandle:
    """One session, seen from one seat (``role``).

    Reading ``view``, ``chat``, ``status`` or ``result`` asks for the current state; ``send``,
    ``act`` and ``finish`` act as ``role``; ``await wait()`` waits for the end. In a notebook the
    handle shows as the session panel.
    """

    def __init__(self, where: Backend, summary: dict[str, Any], role: str | None,
                 chat: str = DEFAULT_CHAT) -> None:
        self.backend = where
        self.session_id: str = summary["session_id"]
        self.task: str = summary.get("task", "")
        self.role = role
        self._summary = summary
        self._panel: Any = None
        self._watching: str | None = None  # the member a seatless handle's panel watches
        #: Where displaying the handle shows your chat: "side" or "cell" (see chat_beside).
        self.chat_place = chat
        #: What the server said about the settings sent with the create request (settings
        #: it did not use); empty when it used them all.
        self.notes: list[str] = [str(note) for note in summary.get("notes") or []]
        #: On the small sample of the task's data that comes with cogym_lab: the paragraph that
        #: says so and how to get the full data (the panel shows it too); else ``None``.
        self.data_notice: str | None = summary.get("data_notice") or None

    def __repr__(self) -> str:
        return (f"<cogym_lab session {self.session_id} ({self.task}, {self.backend.kind}) "
                f"seat={self.role!r} status={self._summary.get('status')}>")

    # -- state ---------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The session's summary with its full state (``state``) and, once ended, ``result``."""
        self._summary = self.backend.snapshot(self.session_id)
        return self._summary

    def _state(self) -> dict[str, Any]:
        """The current state; waits (up to a minute) for a session that is still starting."""
        deadline = time.monotonic() + 60
        while True:
            snapshot = self.snapshot()
            if snapshot.get("state") is not None or snapshot.get("status") != "running":
                return snapshot.get("state") or {"views": {}, "chat": []}
            if not self.backend.can_block or time.monotonic() > deadline:
                raise SessionError("The session is still starting: its state is ready once "
                                   "this cell has finished (or after `await handle.started()`).")
            time.sleep(0.1)

    async def started(self, timeout: float = 60.0) -> None:
        """Wait until the session has started (its members have joined)."""
        await self.wait_until(lambda s: s.get("state") is not None or s.get("status") != "running",
                              timeout)

    @property
    def people(self) -> list[str]:
        return list(self._summary.get("people") or [])

    @property
    def members(self) -> dict[str, str]:
        """Each member's role and kind (agent, user or person)."""
        return {m["role"]: m["kind"] for m in self._summary.get("members") or []}

    @property
    def status(self) -> str:
        return self.snapshot().get("status", "unknown")

    @property
    def end_reason(self) -> str | None:
        return self.snapshot().get("end_reason")

    def _seat(self) -> str:
        return self.role or next(iter(self.members), "")

    @property
    def view(self) -> Any:
        """What your seat sees now: an :class:`~cogym_lab.core.observation.Observation`
        (``view["editor"].content`` ...). Without a seat, the first member's view."""
        from cogym_lab.core.observation import Observation

        views = self._state()["views"]
        return Observation.model_validate(views.get(self._seat()) or {})

    @property
    def chat(self) -> list[Any]:
        """The messages your seat can see, oldest first."""
        from cogym_lab.core.messages import ChatMessage

        seat = self._seat()
        messages = [ChatMessage.model_validate(m) for m in self._state()["chat"]]
        return [m for m in messages if not self.role or m.visible_to(seat)]

    @property
    def plan(self) -> dict[str, Any] | None:
        """The session's first interactive plan as your seat sees it (docs/plans.md):
        proposals, steps with their status and output, the plan output; ``None`` in a task made
        without plans. A session may hold several plans: :attr:`plans` has them all."""
        return _plan_in(self._state(), self._seat())

    @property
    def plans(self) -> dict[str, dict[str, Any]]:
        """Every interactive plan of the session by component name (``interactive_plan``,
        ``interactive_plan_2``, ...), in the order they were started; empty without plans.
        The name is what plan actions take as ``plan``."""
        return _plans_in(self._state(), self._seat())

    @property
    def result(self) -> dict[str, Any] | None:
        """The session's result (outcome, scores, ...) once it has ended."""
        return self.snapshot().get("result")

    @property
    def scores(self) -> dict[str, float]:
        return (self.result or {}).get("scores") or {}

    @property
    def results_dir(self) -> Path | None:
        folder = self._summary.get("results_dir")
        return Path(folder) if folder else None

    # -- acting ------------------------------------------------------------------------------

    def _require_seat(self) -> str:
        if not self.role:
            raise SessionError("This handle only watches the session: attach with a person "
                               "seat (role=...) to act.")
        return self.role

    def act(self, action: str | dict[str, Any]) -> None:
        """Take an action as your seat: ``'EDITOR_UPDATE(text="...")'`` or
        ``{"name": ..., "args": {...}}``. The env answers on your seat's notifications.

        Raises :class:`SessionError` when the session refused it: it had ended, or ended before
        the action was applied (the message says how). A session hosted inside a running
        kernel cannot be waited on from a cell: there the refusal is logged as a warning."""
        self.backend.act(self.session_id, self._require_seat(), action)

    def send(self, message: str, to: str | None = None) -> None:
        """Say something in the chat (to everyone, or to the member ``to``)."""
        args: dict[str, Any] = {"message": message}
        if to:
            args["to"] = to
        self.act({"name": "SEND_TEAMMATE_MESSAGE", "args": args})

    def finish(self) -> None:
        """Declare the task done: the session ends and is graded."""
        self.act({"name": "FINISH", "args": {}})

    def end(self) -> dict[str, Any]:
        """Stop the session now (it is still graded on what it has)."""
        self._summary = self.backend.end(self.session_id)
        return self._summary

    # -- waiting -------------------------------------------------------------------------------

    async def wait_until(self, predicate: Callable[[dict[str, Any]], bool],
                         timeout: float = 600.0, poll: float = 0.25) -> dict[str, Any]:
        """Wait until ``predicate(snapshot)`` holds; returns that snapshot. Use with ``await``
        (a notebook cell can await at top level)."""
        deadline = time.monotonic() + timeout
        while True:
            snapshot = await self.backend.asnapshot(self.session_id)
            self._summary = snapshot
            if predicate(snapshot):
                return snapshot
            if time.monotonic() > deadline:
                raise TimeoutError(f"Session {self.session_id} did not get there within "
                                   f"{timeout:.0f} s (status: {snapshot.get('status')}).")
            await asyncio.sleep(poll)

    async def wait_for_plan(self, predicate: Callable[[dict[str, Any]], Any],
                            timeout: float = 600.0, plan: str = "") -> dict[str, Any]:
        """Wait until ``predicate(plan)`` holds for an interactive plan (see :attr:`plan`):
        the one named ``plan`` (its component name; empty: the first); returns the plan then.
        Use with ``await``."""
        seat = self._seat()

        def holds(snapshot: dict[str, Any]) -> bool:
            found = _plan_in(snapshot.get("state") or {}, seat, plan)
            return found is not None and bool(predicate(found))

        return _plan_in((await self.wait_until(holds, timeout)).get("state") or {}, seat,
                        plan) or {}

    async def wait(self, timeout: float = 600.0) -> dict[str, Any] | None:
        """Wait for the session to end; returns its result."""
        snapshot = await self.wait_until(lambda s: s.get("status") != "running", timeout)
        return snapshot.get("result")

    async def wait_for_reply(self, timeout: float = 300.0) -> Any:
        """Wait for the next chat message to your seat from someone else; returns it. For a
        session still setting up (building a search index, say), that is its first message."""
        starting = self.snapshot().get("state") is None
        await self.started(timeout)
        seen = 0 if starting else len(self.chat)
        seat = self._require_seat()

        def replied(snapshot: dict[str, Any]) -> bool:
            fresh = (snapshot.get("state") or {"chat": []})["chat"][seen:]
            return any(m["sender"] != seat and m.get("to") in (None, seat) for m in fresh) \
                or snapshot.get("status") != "running"

        await self.wait_until(replied, timeout)
        return next((m for m in self.chat[seen:] if m.sender != seat), None)

    # -- reading the record --------------------------------------------------------------------

    def transcript(self) -> str:
        """Every event so far, one line each, from the results directory's event log."""
        from rich.console import Console

        from cogym_lab.nodes.results import read_events
        from cogym_lab.nodes.transcript import Transcript

        folder = self.results_dir
        if folder is None or not (folder / "events.jsonl").is_file():
            return "(no event log yet)"
        console = Console(file=io.StringIO(), width=120, highlight=False, color_system=None,
                          force_jupyter=False)
        show = Transcript(console, self.task)
        for event in read_events(folder):
            show(event)
        return console.file.getvalue()  # type: ignore[attr-defined]

    # -- display -----------------------------------------------------------------------------

    @property
    def panel(self) -> Any:
        """The session panel for your seat; without a seat, a read-only panel watching a
        member (see :meth:`watch`). ``None`` when the panels are not installed."""
        if self._panel is None:
            try:
                if self.role:
                    self._panel = self.backend.panel(self.session_id, self.role)
                elif self._watched():
                    self._panel = self.backend.panel(self.session_id, self._watched(),
                                                     readonly=True)
            except ImportError:
                return None
            _describe(self._panel, self._summary)
        return self._panel

    def watch(self, role: str | None = None) -> Any:
        """A read-only panel that follows member ``role`` live, as that member sees the
        session (chat, workspace, agent status), and acts in nothing; the handle then shows
        it when displayed. By default the simulated user (the human side of the team), else
        the first member. On a server, only the session's creator may watch.

        ``run.watch("agent")`` as the last line of a cell shows the agent's view instead.
        """
        members = self.members
        if role is not None and role not in members:
            raise SessionError(f"{role!r} is not a member of session {self.session_id} "
                               f"(its members: {', '.join(members) or 'none'}).")
        self._watching = role or self._default_watch()
        if self._panel is not None and getattr(self._panel, "readonly", False):
            self._panel = None  # the next display follows the member just chosen
        if self.role:  # a seated handle keeps its seat's panel: give the watch panel directly
            try:
                panel = self.backend.panel(self.session_id, self._watching, readonly=True)
            except ImportError:
                return None
            _describe(panel, self._summary)
            return panel
        return self.panel

    def chat_beside(self) -> None:
        """Show your chat and the agent's status in JupyterLab's right side area, beside the
        notebook, while the workspace stays in the cell's panel: they stay in sight while you
        scroll the notebook and watch what the agent changes. The cell's panel leaves its chat
        to the side area while that shows it, and takes it back when you close the side tab.
        A reloaded page puts it back. Calling it again replaces the side chat of this seat.

        Where there is no side area (no ``sidecar`` package in this kernel) it says so, and the
        chat stays in the panel."""
        from cogym_lab.widgets.beside import show_beside

        role = self._require_seat()
        try:
            chat = self.backend.panel(self.session_id, role, part="chat")
        except ImportError:
            return
        _describe(chat, self._summary)
        if not show_beside(chat, title=f"Chat · {self.task or self.session_id}"):
            chat.close()
            print("The chat stays in the panel: showing it beside the notebook needs the "
                  "`sidecar` package in this kernel's environment and JupyterLab.")

    def chat_in_cell(self) -> None:
        """Close the side chat of your seat: the cell's panel shows the chat again."""
        from cogym_lab.widgets.beside import close_beside

        close_beside(self.session_id, self._require_seat())

    def _default_watch(self) -> str:
        """The simulated user (it sees what a person would), else the first member."""
        kinds = self.members
        return next((role for role, kind in kinds.items() if kind == "user"),
                    next(iter(kinds), ""))

    def _watched(self) -> str:
        if not self._watching:
            self._watching = self._default_watch()
        return self._watching

    def _ipython_display_(self) -> None:
        from IPython.display import HTML, display

        from cogym_lab.widgets.beside import side_area_available

        panel = self.panel
        if panel is not None:
            display(panel)
            if (self.chat_place == "side" and self.role and not getattr(panel, "readonly", False)
                    and side_area_available()):
                self.chat_beside()
        else:
            display(HTML(self._summary_html()))

    def _summary_html(self) -> str:
        try:
            snapshot = self.snapshot()
        except SessionError as error:
            return f"<p>Session {html.escape(self.session_id)}: {html.escape(str(error))}</p>"
        chat = "".join(f"<li><b>{html.escape(m['sender'])}</b>: {html.escape(m['text'])}</li>"
                       for m in (snapshot.get("state") or {}).get("chat", []))
        return (f"<p><b>Session {html.escape(self.session_id)}</b> — "
                f"{html.escape(self.task)}, {html.escape(str(snapshot.get('status')))}"
                f" ({html.escape(self.backend.kind)})</p><ul>{chat}</ul>")


def _describe(panel: Any, summary: dict[str, Any]) -> None:
    """Tell a panel what its session is, for the words its output shows where it cannot be
    drawn (see :mod:`cogym_lab.widgets.fallback`)."""
    describe = getattr(panel, "describe", None)
    if callable(describe):
        describe(summary)


def _plan_in(state: dict[str, Any], seat: str, name: str = "") -> dict[str, Any] | None:
    """The content of the interactive plan ``name`` (empty: the first) in a snapshot's
    ``state`` as ``seat`` sees it."""
    from cogym_lab.core.plan_env import PLAN_COMPONENT

    return _plans_in(state, seat).get(name or PLAN_COMPONENT)


def _plans_in(state: dict[str, Any], seat: str) -> dict[str, dict[str, Any]]:
    """Every interactive plan's content in a snapshot's ``state`` as ``seat`` sees it, by
    component name, in the view's order."""
    from cogym_lab.core.plan_env import is_plan_component

    view = (state.get("views") or {}).get(seat) or {}
    return {c["name"]: c["content"] for c in view.get("components", ())
            if is_plan_component(str(c.get("name", ""))) and isinstance(c.get("content"), dict)}
