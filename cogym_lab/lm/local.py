"""An LM that runs a local GGUF model in this process, through ``llama-cpp-python``.

Chosen with ``provider = "local"`` and ``model = "/path/to/file.gguf"``. It needs the optional
dependency: ``pip install 'cogym_lab[local]'``. ``llama_cpp`` is imported, and the model loaded,
only when the first completion is asked for.

``config.extra`` entries that ``llama_cpp.Llama`` takes (``n_ctx``, ``n_threads``,
``n_gpu_layers``, ``chat_format`` ...) are used when loading the model; the others go to
``create_chat_completion`` (``top_k``, ``repeat_penalty`` ...). ``n_ctx`` defaults to
:data:`DEFAULT_N_CTX`. ``config.seed`` goes to every ``create_chat_completion``, so each call
samples from that seed whatever the model generated before.

Inference runs in a worker thread so the event loop stays free; calls on one model take turns, as
a ``Llama`` object serves one at a time. This module makes one attempt; the retry loop and the
deadline are :class:`~cogym_lab.lm.base.LM`'s. ``config.deadline`` holds for the caller: at the
deadline ``complete`` raises :class:`LMError`, whether the call was still waiting for its turn or
generating. A generation under way cannot be stopped from outside (llama-cpp-python swallows
exceptions raised in its callbacks), so it runs on to ``max_tokens`` in the background and its
answer is dropped; a call abandoned before its turn came is never run. ``config.timeout`` (per
attempt) is not used: a local attempt is one uninterruptible generation. An error from the model
(a prompt longer than the context, say) is final; an unusable reply (no choices, no text) is
retried.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import threading
from pathlib import Path
from typing import Any

from cogym_lab.errors import CogymError
from cogym_lab.lm.base import (
    LM,
    REASON_UNREADABLE,
    AttemptFailed,
    LMError,
    LMNotConfigured,
    Messages,
    Usage,
)
from cogym_lab.lm.config import LMConfig

DEFAULT_N_CTX = 4096
INSTALL_HINT = "pip install 'cogym_lab[local]'"


class _AbandonedError(CogymError):  # internal: the caller gave up before this call's turn came
    """Nobody waits for this generation any more."""


def _as_int(value: Any) -> int:
    try:
        return max(int(value), 0) if value is not None and not isinstance(value, bool) else 0
    except (TypeError, ValueError):
        return 0


class LlamaCppLM(LM):
    """A member's LM: a GGUF model file run by llama.cpp in this process."""

    def __init__(self, config: LMConfig) -> None:
        super().__init__(config)
        if not config.model:
            raise LMNotConfigured('provider = "local" needs model = "/path/to/file.gguf"')
        if importlib.util.find_spec("llama_cpp") is None:
            raise LMNotConfigured(f"provider = \"local\" needs llama-cpp-python, which is not "
                                  f"installed: {INSTALL_HINT}")
        if not Path(config.model).expanduser().is_file():
            raise LMNotConfigured(f"provider = \"local\": the model file {config.model!r} does "
                                  f"not exist; model must be the path of a GGUF file")
        self.model_path = str(Path(config.model).expanduser())
        self._llama: Any = None
        self._per_call: dict[str, Any] = {}
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()
        self._load_error: str | None = None

    # -- the model ---------------------------------------------------------------------------

    def _split_extra(self, llama_class: type) -> tuple[dict[str, Any], dict[str, Any]]:
        """``config.extra`` as (arguments to load the model, arguments for each completion)."""
        load_params = set(inspect.signature(llama_class).parameters)  # its __init__'s, less self
        load: dict[str, Any] = {"n_ctx": DEFAULT_N_CTX}
        per_call: dict[str, Any] = {}
        for name, value in self.config.extra.items():
            (load if name in load_params else per_call)[name] = value
        return load, per_call

    def _model(self) -> tuple[Any, dict[str, Any]]:
        """Load the model once (in the calling worker thread); its per-call arguments."""
        with self._load_lock:
            if self._llama is None:
                if self._load_error is not None:
                    raise LMError(self._load_error)
                try:
                    import llama_cpp
                except ImportError as exc:
                    raise LMNotConfigured(f"llama-cpp-python cannot be imported ({exc}): "
                                          f"{INSTALL_HINT}") from exc
                load, self._per_call = self._split_extra(llama_cpp.Llama)
                load.setdefault("verbose", False)
                try:
                    self._llama = llama_cpp.Llama(model_path=self.model_path, **load)
                except Exception as exc:  # llama.cpp raises ValueError, and others
                    self._load_error = (f"could not load the model {self.model_path!r}: "
                                        f"{type(exc).__name__}: {exc}")
                    raise LMError(self._load_error) from exc
            return self._llama, self._per_call

    def _generate(self, messages: Messages, max_tokens: int | None, stop: list[str] | None,
                  abandoned: threading.Event) -> Any:
        llama, per_call = self._model()
        kwargs: dict[str, Any] = {"temperature": self.config.temperature, **per_call}
        if self.config.seed is not None:
            kwargs["seed"] = self.config.seed
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        if stop:
            kwargs["stop"] = list(stop)
        with self._run_lock:
            if abandoned.is_set():  # its caller's deadline passed while it waited its turn
                raise _AbandonedError
            return llama.create_chat_completion(messages=messages, **kwargs)

    @staticmethod
    def _read(response: Any) -> tuple[str | None, Usage, str]:
        """Text (None if unusable), usage, and what is wrong when the text is None."""
        usage_data = response.get("usage") if isinstance(response, dict) else None
        usage_data = usage_data if isinstance(usage_data, dict) else {}
        usage = Usage(prompt_tokens=_as_int(usage_data.get("prompt_tokens")),
                      completion_tokens=_as_int(usage_data.get("completion_tokens")))
        choices = response.get("choices") if isinstance(response, dict) else None
        if not isinstance(choices, list) or not choices:
            return None, usage, "the reply has no choices"
        first = choices[0] if isinstance(choices[0], dict) else {}
        raw_message = first.get("message")
        message = raw_message if isinstance(raw_message, dict) else {}
        content = message.get("content")
        if not isinstance(content, str):
            reason = first.get("finish_reason")
            return None, usage, f"the reply has no text (finish_reason {reason!r})"
        return content, usage, ""

    # -- one attempt (the retry loop is LM.complete's) -------------------------------------

    @property
    def attempt_timeout(self) -> float | None:
        """None: a local attempt is one generation that cannot be cut short; only the deadline
        bounds it."""
        return None

    async def _attempt(self, messages: Messages, max_tokens: int | None,
                       stop: list[str] | None) -> tuple[str, Usage]:
        abandoned = threading.Event()
        try:
            response = await asyncio.to_thread(self._generate, messages, max_tokens, stop,
                                               abandoned)
        except asyncio.CancelledError:
            abandoned.set()  # the deadline passed: if its turn has not come, it never runs
            raise
        except LMNotConfigured:
            raise  # says what to install; not a failure of the model
        except LMError as exc:
            raise AttemptFailed(str(exc), "the model could not be loaded", final=True) from exc
        except Exception as exc:  # llama.cpp's errors are final
            raise AttemptFailed(f"{self.config.describe()} failed: {type(exc).__name__}: {exc}",
                                "the model failed", final=True) from exc
        text, usage, problem = self._read(response)
        if text is None:
            raise AttemptFailed(f"unusable reply: {problem}", REASON_UNREADABLE,
                                kind="unreadable")
        return text, usage

    async def aclose(self) -> None:
        """Free the model's memory; it is loaded again if asked for another completion."""
        with self._load_lock:
            llama, self._llama = self._llama, None
        if llama is not None and hasattr(llama, "close"):
            llama.close()
