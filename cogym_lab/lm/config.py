"""Which model a member uses, and where the settings come from.

Precedence, highest first: explicit arguments, environment variables (``OPENAI_API_KEY``,
``OPENAI_BASE_URL``, ``COGYM_MODEL``), then the team's TOML file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

ENV_API_KEY = "OPENAI_API_KEY"
ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_MODEL = "COGYM_MODEL"


class LMConfig(BaseModel):
    """Settings for one member's LM."""

    model_config = ConfigDict(frozen=True)

    provider: Literal["openai", "local"] = "openai"
    model: str | None = None  # for "local": a path to a GGUF file
    base_url: str | None = None
    api_key: SecretStr | None = None
    temperature: float = 0.0
    max_tokens: int | None = 1024
    timeout: float = Field(default=60.0, gt=0)  # seconds per attempt
    max_retries: int = Field(default=4, ge=0)
    backoff: float = Field(default=0.5, ge=0)  # first retry delay, doubled each time
    extra: dict[str, Any] = Field(default_factory=dict)  # passed to the provider as is

    @model_validator(mode="before")
    @classmethod
    def _gguf_means_local(cls, data: Any) -> Any:
        """A model given as a ``.gguf`` file runs locally unless a provider is named."""
        if isinstance(data, dict) and "provider" not in data \
                and str(data.get("model") or "").lower().endswith(".gguf"):
            return {**data, "provider": "local"}
        return data

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
