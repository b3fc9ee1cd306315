"""The settings a notebook sends with every session it starts: ``%cogym config``.

A session started from a notebook usually runs in the Jupyter server, whose environment the
notebook cannot change: ``%env COGYM_MODEL=...`` in a cell sets the kernel's environment, not the
server's. So the kernel keeps its own settings, here, and sends them with every create request
(``%cogym new`` and ``cogym_lab.new_session()``) as fields of the session's spec: ``model``,
``base_url`` and ``api_key`` in its ``lm`` table for every LM, ``data_dir`` as the spec's data
folder. The request goes over the server's authenticated REST API, the same call that creates
the session; the server never writes the key to disk.

For each setting, the first of these that has a value is sent:

1. what this session's own arguments say (``--model``, ``--base-url``, ``model=``),
2. what ``%cogym config`` (or :func:`configure`) set in this kernel,
3. this kernel's environment: ``COGYM_MODEL``, ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
   ``COGYM_DATA`` (the names the LM layer and the data folder read), so ``%env`` works too.

A setting none of them gives is not sent, and the server's own (its environment, its team
files) applies. An administrator's settings on the server win over all of these.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from cogym_lab.datasets import DATA_ENV_VAR
from cogym_lab.errors import CogymError
from cogym_lab.lm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from cogym_lab.sessions.spec import (
    EVERY_LM,
    MAX_KEY_LENGTH,
    ApiKey,
    LMSettings,
    SessionSpec,
    check_plain_text,
)

__all__ = ["ENVIRONMENT", "KEYS", "NotebookSettings", "SettingsError", "clear", "configure",
           "current", "describe", "effective", "with_notebook_settings"]

Key = Literal["model", "base_url", "api_key", "data_dir"]
#: The settings, by the names the spec uses (``LMSettings`` and ``SessionSpec.data_dir``).
KEYS: tuple[Key, ...] = ("model", "base_url", "api_key", "data_dir")
#: The kernel's environment variable read for each setting that ``%cogym config`` leaves unset.
ENVIRONMENT: dict[Key, str] = {"model": ENV_MODEL, "base_url": ENV_BASE_URL,
                               "api_key": ENV_API_KEY, "data_dir": DATA_ENV_VAR}
_LIMITS = {"model": 500, "base_url": 2_000, "api_key": MAX_KEY_LENGTH, "data_dir": 4_096}


class SettingsError(CogymError, ValueError):
    """A setting that cannot be used; the message names it and never repeats a key."""


class NotebookSettings(BaseModel):
    """What ``%cogym config`` set in this kernel (each ``None`` when it is not set). The key is
    a ``SecretStr``: masked in ``repr`` and in every message."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True,
                              hide_input_in_errors=True)

    model: str | None = None
    base_url: str | None = None
    api_key: ApiKey = None
    data_dir: str | None = None

    @field_validator("model", "base_url", "data_dir")
    @classmethod
    def _one_line(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        name = str(info.field_name)
        if not value.strip():
            raise ValueError(f"{name} is empty")
        if len(value) > _LIMITS[name]:
            raise ValueError(f"{name} is {len(value)} characters long; at most "
                             f"{_LIMITS[name]}")
        return check_plain_text(value, name)

    def given(self) -> dict[str, Any]:
        """The settings that are set, by name."""
        return {key: value for key in KEYS if (value := getattr(self, key)) is not None}


_settings = NotebookSettings()


def _validated(values: Mapping[str, Any]) -> NotebookSettings:
    unknown = sorted(set(values) - set(KEYS))
    if unknown:
        raise SettingsError(f"Unknown setting {', '.join(map(repr, unknown))}; the settings "
                            f"are {', '.join(KEYS)}.")
    fixed = dict(values)
    if isinstance(fixed.get("data_dir"), str) and fixed["data_dir"].strip():
        fixed["data_dir"] = _absolute(fixed["data_dir"])
    try:
        return NotebookSettings.model_validate(fixed)
    except ValidationError as error:  # its text holds no input: hide_input_in_errors
        raise SettingsError("; ".join(_problem(problem) for problem in error.errors())) from None


def _problem(problem: Any) -> str:
    """One validation problem as a sentence (the validators' own messages name the setting;
    pydantic's own get its name in front). Never the value."""
    message = str(problem["msg"])
    if message.startswith("Value error, "):
        return message.removeprefix("Value error, ")
    return f"{'.'.join(map(str, problem['loc'])) or 'settings'}: {message}"


def _absolute(path: str) -> str:
    """A folder as the server must read it: absolute, ``~`` expanded, ``..`` resolved (the
    server's working folder is not the notebook's)."""
    if any(ord(c) < 32 for c in path):
        return path  # refused by the validation, with a message that does not echo it
    return os.path.abspath(os.path.expanduser(path))


def current() -> NotebookSettings:
    """What ``%cogym config`` set in this kernel."""
    return _settings


def configure(**values: str | None) -> NotebookSettings:
    """Set some of ``model``, ``base_url``, ``api_key`` and ``data_dir`` for the sessions this
    kernel starts from now on; ``None`` or ``""`` unsets one. ``data_dir`` is made absolute.
    Returns the settings; raises :class:`SettingsError` (nothing changes then)."""
    global _settings
    merged = {**_settings.given()}
    for key, value in values.items():
        if value is None or value == "":
            merged.pop(key, None)
            if key not in KEYS:
                raise SettingsError(f"Unknown setting {key!r}; the settings are "
                                    f"{', '.join(KEYS)}.")
        else:
            merged[key] = value
    _settings = _validated(merged)
    return _settings


def clear(*keys: str) -> NotebookSettings:
    """Unset ``keys`` (all settings when none are named)."""
    return configure(**dict.fromkeys(keys or KEYS))


def from_environment(environ: Mapping[str, str] | None = None,
                     skip: tuple[str, ...] = ()) -> NotebookSettings:
    """The settings this kernel's environment gives (empty variables count as unset), but for
    those named in ``skip``. :class:`SettingsError` names a variable whose value cannot be
    used, and how to get past it."""
    environ = os.environ if environ is None else environ
    values: dict[str, str] = {}
    for key, name in ENVIRONMENT.items():
        value = environ.get(name, "").strip()
        if not value or key in skip:
            continue
        try:
            _validated({key: value})
        except SettingsError as error:
            raise SettingsError(f"{name} in this kernel's environment cannot be sent: {error}. "
                                f"Run `%cogym config {key}=VALUE` (it wins over the "
                                f"environment), or `%env {name}=` to empty it.") from None
        values[key] = value
    return _validated(values)


def effective(environ: Mapping[str, str] | None = None
              ) -> tuple[NotebookSettings, dict[str, str]]:
    """The settings a session started now is sent (``%cogym config`` over this kernel's
    environment), and where each comes from (``"%cogym config"`` or the variable's name).
    :class:`SettingsError` for an environment variable that cannot be sent."""
    explicit = _settings.given()
    ambient = from_environment(environ, skip=tuple(explicit)).given()
    sources: dict[str, str] = {key: "%cogym config" if key in explicit else ENVIRONMENT[key]
                               for key in KEYS if key in explicit or key in ambient}
    return NotebookSettings.model_validate({**ambient, **explicit}), sources


def with_notebook_settings(spec: SessionSpec,
                           environ: Mapping[str, str] | None = None) -> SessionSpec:
    """``spec`` as a notebook sends it: marked as made in a notebook, with the effective
    settings filling what it leaves open (its ``lm`` table for every LM; its ``data_dir``).
    A setting the spec gives itself (``--model``, a role's own table) is kept."""
    settings, _ = effective(environ)
    every = spec.lm.get(EVERY_LM, LMSettings())
    filled = {key: value for key in ("model", "base_url", "api_key")
              if getattr(every, key) is None and (value := getattr(settings, key)) is not None}
    update: dict[str, Any] = {"origin": "notebook"}
    if filled:
        update["lm"] = {**spec.lm, EVERY_LM: every.model_copy(update=filled)}
    if spec.data_dir is None and settings.data_dir is not None:
        update["data_dir"] = settings.data_dir
    return spec.model_copy(update=update)


def describe(environ: Mapping[str, str] | None = None) -> str:
    """What ``%cogym config`` prints: each setting a session started now is sent, with where
    it comes from; the key masked."""
    try:
        settings, sources = effective(environ)
    except SettingsError as error:
        return str(error)
    lines = ["Sent with each session this notebook starts (%cogym config wins over this "
             "kernel's environment; a session's own --model/--base-url win over both):"]
    for key in KEYS:
        value = getattr(settings, key)
        if value is None:
            shown, source = "(not sent: where the session runs decides)", ""
        else:
            shown = "********** (hidden)" if key == "api_key" else str(value)
            source = f"  [{sources[key]}]"
        lines.append(f"  {key:<9} {shown}{source}")
    return "\n".join(lines)
