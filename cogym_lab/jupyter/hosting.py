"""SessionHost: runs sessions inside the Jupyter server's event loop.

Each hosted session has its own bus (in-process unless a Redis URL is given), runs
``Session.run()`` as a background task and writes its results under ``results_dir/<session_id>``.
People (members of kind ``person``) hold seats that the host joins on their behalf, so the session
starts at once; a person's browser then follows the seat over a websocket and acts through
``act``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogym_lab.bus import Bus, connect_bus
from cogym_lab.core.messages import StepRequest, step_channel
from cogym_lab.nodes.session import Session, SessionResult

log = logging.getLogger(__name__)

_CONFIG_OVERRIDES = ("idle_seconds", "timeout", "max_idle_ticks", "max_events",
                     "agent_step_limit", "join_timeout", "seed")


class HostingError(Exception):
    """A request the host refuses; ``status`` is the HTTP status that fits it."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass
class HostedSession:
    session: Session
    bus: Bus
    team: str
    task: str
    people: list[str]
    created_at: float = field(default_factory=time.time)
    runner: asyncio.Task[SessionResult] | None = None
    result: SessionResult | None = None
    error: str | None = None

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def status(self) -> str:
        if self.runner is None or not self.runner.done():
            return "running"
        return "failed" if self.error else "finished"

    @property
    def end_reason(self) -> str | None:
        if self.result is not None:
            return self.result.end_reason
        return self.session.coordinator.end_reason

    def summary(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "task": self.task,
            "team": self.team,
            "members": [member.model_dump() for member in self.session.team],
            "people": list(self.people),
            "status": self.status,
            "end_reason": self.end_reason,
            "error": self.error,
            "created_at": self.created_at,
            "results_dir": str(self.session.results_dir) if self.session.results_dir else None,
        }


class SessionHost:
    """Creates, lists, follows and ends sessions. Use it from the server's event loop."""

    def __init__(self, results_dir: str | Path, redis_url: str | None = None,
                 default_team: str = "example") -> None:
        self.results_dir = Path(results_dir)
        self.redis_url = redis_url
        self.default_team = default_team
        self.sessions: dict[str, HostedSession] = {}

    async def create(self, task: str, instance: int | None = None,
                     env_args: dict[str, Any] | None = None, team: str | None = None,
                     people: list[str] | None = None, **overrides: Any) -> HostedSession:
        """Build the env and team and start the session in the background.

        ``people`` names roles played by a person: a team member of that role becomes a person
        seat, any other name adds a person seat to the team. Raises ``HostingError``.
        """
        from cogym_lab.envs.registry import make_env
        from cogym_lab.teams import load_team
        from cogym_lab.teams.build import build_team, session_config
        from cogym_lab.teams.config import MemberConfig

        team = team or self.default_team
        people = list(people or [])
        if not isinstance(task, str) or not task:
            raise HostingError("'task' is required: the name of a task (see `cogym-lab tasks`).")
        unknown = set(overrides) - set(_CONFIG_OVERRIDES)
        if unknown:
            raise HostingError(f"Unknown session settings: {', '.join(sorted(unknown))}.")
        try:
            team_config = load_team(team)
        except Exception as error:
            raise HostingError(_message(error)) from error
        try:
            env = make_env(task, instance=instance, **(env_args or {}))
        except Exception as error:
            raise HostingError(_message(error)) from error
        if team_config.name == "example" and task != "todo":
            raise HostingError("The example team plays only the 'todo' task.")
        members = dict(team_config.members)
        for role in people:
            if not isinstance(role, str):
                raise HostingError(f"'people' must list role names, got {role!r}.")
            members[role] = MemberConfig(kind="person")
        team_config = team_config.model_copy(update={"members": members})
        try:
            teammates, kinds = build_team(team_config, env)
            config = session_config(team_config, **overrides)
            session = Session(env, teammates, kinds=kinds, task=task, config=config)
        except Exception as error:  # unknown member types, a missing LM, a bad role name
            raise HostingError(_message(error)) from error
        session.results_dir = self.results_dir / session.session_id
        bus = connect_bus(self.redis_url)
        await bus.connect()
        seats = [member.role for member in session.team if member.kind == "person"]
        hosted = HostedSession(session=session, bus=bus, team=team_config.name, task=task,
                               people=seats)
        session.bus = bus
        for role in seats:  # the host holds the seat: the session need not wait for a browser
            await bus.publish(step_channel(session.session_id),
                              StepRequest(role=role, kind="join").model_dump(mode="json"))
        hosted.runner = asyncio.create_task(self._run(hosted))
        self.sessions[session.session_id] = hosted
        return hosted

    async def _run(self, hosted: HostedSession) -> SessionResult | None:
        try:
            hosted.result = await hosted.session.run()
        except asyncio.CancelledError:
            hosted.error = "cancelled"
            raise
        except Exception as error:
            log.exception("session %s failed", hosted.session_id)
            hosted.error = f"{type(error).__name__}: {error}"
        finally:
            try:
                await hosted.bus.close()
            except Exception:  # closing a lost connection must not hide the result
                log.exception("closing the bus of session %s failed", hosted.session_id)
        return hosted.result

    def list(self) -> list[dict[str, Any]]:
        return [hosted.summary() for hosted in self.sessions.values()]

    def get(self, session_id: str) -> HostedSession:
        try:
            return self.sessions[session_id]
        except KeyError:
            raise HostingError(f"No session {session_id!r}.", status=404) from None

    def snapshot(self, session_id: str) -> dict[str, Any]:
        hosted = self.get(session_id)
        return hosted.summary() | {
            "state": hosted.session.coordinator.snapshot(),
            "result": hosted.result.model_dump(mode="json") if hosted.result else None,
        }

    async def end(self, session_id: str, reason: str = "ended by the user",
                  wait: float = 10.0) -> HostedSession:
        """Stop a running session and wait (up to ``wait`` seconds) for it to finish."""
        hosted = self.get(session_id)
        if hosted.status != "running" or hosted.runner is None:
            return hosted
        deadline = time.monotonic() + wait
        while hosted.session.env_node is None and not hosted.runner.done():
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.01)  # run() has not built its env node yet
        if hosted.session.env_node is not None:
            await hosted.session.env_node.stop(reason)
        else:
            hosted.runner.cancel()
        await asyncio.wait({hosted.runner}, timeout=max(0.0, deadline - time.monotonic()))
        return hosted

    def check_seat(self, session_id: str, role: Any) -> HostedSession:
        hosted = self.get(session_id)
        if not isinstance(role, str) or role not in hosted.people:
            seats = ", ".join(hosted.people) or "none"
            raise HostingError(f"{role!r} is not a person seat of this session "
                               f"(person seats: {seats}).", status=400)
        return hosted

    async def act(self, session_id: str, role: Any, action: Any) -> StepRequest:
        """Publish a person's action as a ``StepRequest``; the env answers on the obs channel."""
        hosted = self.check_seat(session_id, role)
        if hosted.status != "running":
            raise HostingError(f"Session {session_id!r} has ended.", status=409)
        request = _request(role, "action", action)
        await hosted.bus.publish(step_channel(session_id), request.model_dump(mode="json"))
        return request

    async def sync(self, session_id: str, role: str) -> None:
        """Ask the env for ``role``'s current state (a reconnecting browser)."""
        hosted = self.check_seat(session_id, role)
        if hosted.status == "running":
            await hosted.bus.publish(step_channel(session_id),
                                     StepRequest(role=role, kind="sync").model_dump(mode="json"))

    async def close(self) -> None:
        """End every running session (the server is shutting down)."""
        running = [hosted for hosted in self.sessions.values() if hosted.status == "running"]
        await asyncio.gather(*(self.end(h.session_id, "server shutting down") for h in running),
                             return_exceptions=True)


def _request(role: str, kind: str, action: Any) -> StepRequest:
    if isinstance(action, dict):
        if not isinstance(action.get("name"), str):
            raise HostingError("An action object needs a 'name' (and optional 'args').")
        if not isinstance(action.get("args", {}), dict):
            raise HostingError("An action's 'args' must be an object.")
    elif not isinstance(action, str) or not action.strip():
        raise HostingError("'action' must be an action string or {\"name\": ..., \"args\": {...}}.")
    return StepRequest(role=role, kind=kind, action=action)


def _message(error: BaseException) -> str:
    if isinstance(error, KeyError) and error.args:
        return str(error.args[0])
    return str(error) or type(error).__name__
