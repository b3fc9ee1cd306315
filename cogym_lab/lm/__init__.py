"""Language models for agents, simulated users and judges.

:func:`make_lm` turns an :class:`LMConfig` into an :class:`LM`: :class:`OpenAILM` for the OpenAI
API or any OpenAI-compatible server (plain JSON over aiohttp; the ``openai`` package is never
imported), :class:`LlamaCppLM` for a local GGUF file (``provider = "local"``, needs the ``local``
extra). The providers are imported only when first used, so importing this package loads
neither aiohttp nor ``llama_cpp``. OpenAI-compatible LMs on one endpoint share a client per event
loop (:mod:`cogym_lab.lm.shared_clients`): close an LM you made (``await lm.aclose()``) to let
go of it.

Every call goes through the process's gate (:mod:`cogym_lab.lm.limits`): provider limits on
requests in flight and per minute, and a slowdown for everyone after a 429 with ``Retry-After``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cogym_lab.lm.base import LM, Completion, LMError, LMNotConfigured, Messages, Usage, UsageMeter
from cogym_lab.lm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, LMConfig

if TYPE_CHECKING:
    from cogym_lab.lm.local import LlamaCppLM
    from cogym_lab.lm.openai_client import OpenAILM

__all__ = [
    "LM",
    "Completion",
    "LMConfig",
    "LMError",
    "LMNotConfigured",
    "LlamaCppLM",
    "Messages",
    "OpenAILM",
    "Usage",
    "UsageMeter",
    "configured_lm",
    "make_lm",
]


def _not_configured(member: str) -> str:
    return (f"No LM is configured for {member!r}. Set {ENV_MODEL} (for example gpt-4o) and "
            f"{ENV_API_KEY} for OpenAI; for another OpenAI-compatible server (vLLM, Ollama, "
            f"llama.cpp server, LM Studio) also set {ENV_BASE_URL}; or give model and base_url "
            f"in the team file under [members.{member}.lm]; or provider = \"local\" with "
            f"model = \"/path/to/file.gguf\" there (needs pip install 'cogym_lab[local]').")


def make_lm(config: LMConfig, *, member: str = "agent") -> LM:
    """The LM that ``config`` describes, for the team member ``member``.

    Raises :class:`LMNotConfigured`, with a message that says what to set, when no model is
    given, or when the OpenAI API itself is meant but no API key is set.
    """
    if not config.model:
        raise LMNotConfigured(_not_configured(member))
    if config.provider == "local":
        from cogym_lab.lm.local import LlamaCppLM

        return LlamaCppLM(config)
    if config.base_url is None and (config.api_key is None
                                    or not config.api_key.get_secret_value()):
        raise LMNotConfigured(
            f"The LM for {member!r} ({config.describe()}) needs an API key: set {ENV_API_KEY}. "
            f"To use another OpenAI-compatible server instead (vLLM, Ollama, llama.cpp server, "
            f"LM Studio), set {ENV_BASE_URL} or give base_url under [members.{member}.lm] in "
            f"the team file; such servers need no key.")
    from cogym_lab.lm.openai_client import OpenAILM

    return OpenAILM(config)


def __getattr__(name: str) -> Any:
    """Import the providers on first use."""
    if name == "OpenAILM":
        from cogym_lab.lm.openai_client import OpenAILM

        return OpenAILM
    if name == "LlamaCppLM":
        from cogym_lab.lm.local import LlamaCppLM

        return LlamaCppLM
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def configured_lm(purpose: str) -> LM | None:
    """The LM the environment configures (``COGYM_MODEL`` ...), or ``None`` when there is none.

    For tools that can do without one (a task's drafting assistant, judge or plan parser):
    they say so when used, instead of failing at start-up.
    """
    try:
        return make_lm(LMConfig.resolve(), member=purpose)
    except LMNotConfigured:
        return None
