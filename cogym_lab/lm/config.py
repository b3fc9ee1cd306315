"""Which model a member uses, and where the settings come from.

Precedence, highest first: explicit arguments, environment variables (``OPENAI_API_KEY``,
``OPENAI_BASE_URL``, ``COGYM_MODEL``), then the team's TOML file.

Time limits. ``timeout`` bounds one attempt, from connecting to the last byte of the reply (a
server that sends its reply a byte at a time is cut off at ``timeout`` too, not only one that says
nothing). ``deadline`` bounds the whole call: every attempt and every wait between retries; unset,
it is twice ``timeout`` (120 s by default), so raising ``timeout`` for a slow server raises it
too. The deadline wins: an attempt gets ``min(timeout, time left before the deadline)``, and a
retry whose backoff wait would end past the deadline is not made; the call then fails at once. So
the caller always has an answer or an :class:`~cogym_lab.lm.LMError` within ``deadline`` seconds.
Waiting for a slot under provider limits (:mod:`cogym_lab.lm.limits`) counts against the deadline
too; ``timeout`` starts once the attempt has its slot.

Seed. ``seed`` goes with every call to an endpoint that takes one (the OpenAI API and servers
that follow it send it on as ``seed``; a local model samples with it). Many endpoints ignore it or
honour it only on a best-effort basis, so it is also written into every record of the call log,
with the ``system_fingerprint`` the server returned when it returned one: a run then says which
seed each call asked for, whether or not the endpoint obeyed. An ``extra`` table's ``seed`` is
read as ``seed`` (one seed, said in one place).

Call log. ``lm_calls.jsonl`` is rotated when the next line would take it past ``log_max_bytes``:
it becomes ``lm_calls.1.jsonl`` (the one before that ``lm_calls.2.jsonl`` ...), and only
``log_backups`` rotated files are kept. A single call too large for the cap is logged with its
longest texts cut in the middle. Token totals never depend on the log: ``usage.json`` is written
from the LM's meter.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

ENV_API_KEY = "OPENAI_API_KEY"
ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_MODEL = "COGYM_MODEL"

DEFAULT_TIMEOUT = 60.0
# An unset deadline allows this many full attempts: a hung server is reported within two minutes.
DEADLINE_IN_TIMEOUTS = 2
DEFAULT_LOG_MAX_BYTES = 4 * 1024 * 1024
DEFAULT_LOG_BACKUPS = 2  # so at most 12 MiB of call log per member by default


class LMConfig(BaseModel):
    """Settings for one member's LM."""

    model_config = ConfigDict(frozen=True)

    provider: Literal["openai", "local"] = "openai"
    model: str | None = None  # for "local": a path to a GGUF file
    base_url: str | None = None
    api_key: SecretStr | None = None
    temperature: float = 0.0
    seed: int | None = Field(default=None, ge=-(2**63), lt=2**63)  # sampling seed; see above
    max_tokens: int | None = 1024
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0)  # seconds per attempt, whole reply
    # seconds per call, retries included; unset: DEADLINE_IN_TIMEOUTS * timeout
    deadline: float = Field(default=DEADLINE_IN_TIMEOUTS * DEFAULT_TIMEOUT, gt=0)
    max_retries: int = Field(default=4, ge=0)
    backoff: float = Field(default=0.5, ge=0)  # first retry delay, doubled each time
    extra: dict[str, Any] = Field(default_factory=dict)  # passed to the provider as is
    log_max_bytes: int = Field(default=DEFAULT_LOG_MAX_BYTES, ge=4096)  # per call-log file
    log_backups: int = Field(default=DEFAULT_LOG_BACKUPS, ge=0)  # rotated call-log files kept

    @model_validator(mode="before")
    @classmethod
    def _gguf_means_local(cls, data: Any) -> Any:
        """A model given as a ``.gguf`` file runs locally unless a provider is named."""
        if isinstance(data, dict) and "provider" not in data \
                and str(data.get("model") or "").lower().endswith(".gguf"):
            return {**data, "provider": "local"}
        return data

    @model_validator(mode="before")
    @classmethod
    def _seed_from_extra(cls, data: Any) -> Any:
        """``extra = {seed = 3}`` is ``seed = 3``: the seed is sent, and logged, from one field.
        A ``seed`` given as such wins over the one in ``extra``."""
        if not isinstance(data, dict) or not isinstance(data.get("extra"), dict) \
                or "seed" not in data["extra"]:
            return data
        extra = dict(data["extra"])
        seed = extra.pop("seed")
        return {**data, "extra": extra, "seed": data["seed"] if data.get("seed") is not None
                else seed}

    @model_validator(mode="before")
    @classmethod
    def _deadline_follows_timeout(cls, data: Any) -> Any:
        """An unset deadline is ``DEADLINE_IN_TIMEOUTS`` times the timeout."""
        if not isinstance(data, dict) or data.get("deadline") is not None:
            return data
        try:
            timeout = float(data.get("timeout", DEFAULT_TIMEOUT))
        except (TypeError, ValueError):
            return data  # the field's own validation says what is wrong with the timeout
        return {**data, "deadline": DEADLINE_IN_TIMEOUTS * timeout}

    @classmethod
    def resolve(cls, *, arguments: Mapping[str, Any] | None = None,
                environ: Mapping[str, str] | None = None,
                toml: Mapping[str, Any] | None = None) -> LMConfig:
        """Merge the three sources: arguments over environment over TOML."""
        environ = os.environ if environ is None else environ
        from_env = {key: environ[name] for key, name in
                     (("api_key", ENV_API_KEY), ("base_url", ENV_BASE_URL), ("model", ENV_MODEL))
                     if environ.get(name)}
        merged: dict[str, Any] = {}
        for source in (toml or {}, from_env, arguments or {}):
            merged.update({k: v for k, v in source.items() if v is not None})
        return cls.model_validate(merged)

    def describe(self) -> str:
        """Model and endpoint, never the key: for logs and error messages."""
        where = self.base_url or ("the OpenAI API" if self.provider == "openai" else "local")
        return f"{self.model or '(no model)'} at {where}"
