"""What a provider allows: requests in flight and requests per minute, per endpoint and model.

Every LM call is made under a *key* naming its endpoint and model, ``"gpt-4o @ openai"`` or
``"qwen2.5 @ http://10.0.0.5:8000/v1"`` (:func:`limit_key`). :class:`ProviderLimits` holds rules
by *selector*: a model name (``"gpt-4o"``), an endpoint (``"http://10.0.0.5:8000/v1"``) or a
whole key; and a ``default`` for every key no rule names.

Each of the two limits is looked up on its own, the most specific rule that sets it winning: a
whole key, then its model, then its endpoint, then the default. A rule is a *pool*: every key it
matches shares its count (``"http://10.0.0.5:8000/v1"`` with ``max_in_flight = 32`` allows 32
requests at that server, whatever their models), while the default gives each key a pool of
its own. So ``--max-in-flight 16 --rpm gpt-4o=500`` lets each endpoint and model have 16
requests in flight, and every gpt-4o request together 500 a minute.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["OPENAI_ENDPOINT", "Limit", "LimitName", "ProviderLimits", "limit_key", "parse_limits",
           "split_key"]

#: The endpoint part of the key of an LM with no ``base_url`` (OpenAI's own API).
OPENAI_ENDPOINT = "openai"
#: The endpoint part of the key of a model run in this process (``provider = "local"``).
LOCAL_ENDPOINT = "local"
KEY_SEPARATOR = " @ "
#: The two limits, by their field names.
LimitName = Literal["max_in_flight", "requests_per_minute"]
FIELDS: tuple[LimitName, ...] = ("max_in_flight", "requests_per_minute")


def _endpoint(value: str) -> str:
    """An endpoint as keys spell it: without a trailing slash."""
    return value.rstrip("/") if "://" in value else value


def limit_key(model: str | None, base_url: str | None, provider: str = "openai") -> str:
    """The key of an LM's calls: ``"MODEL @ ENDPOINT"``."""
    if base_url:
        endpoint = _endpoint(base_url)
    else:
        endpoint = LOCAL_ENDPOINT if provider == "local" else OPENAI_ENDPOINT
    return f"{model or '(no model)'}{KEY_SEPARATOR}{endpoint}"


def split_key(key: str) -> tuple[str, str]:
    """``(model, endpoint)`` of a key made by :func:`limit_key`; a string that is not one is
    taken as a model name at no endpoint."""
    model, separator, endpoint = key.partition(KEY_SEPARATOR)
    return (model, endpoint) if separator else (key, "")


class Limit(BaseModel):
    """The limits of one rule; ``None`` leaves that limit to a less specific rule."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_in_flight: int | None = Field(default=None, ge=1)  # requests under way at once
    requests_per_minute: int | None = Field(default=None, ge=1)  # requests started per window

    def over(self, base: Limit) -> Limit:
        """This rule's limits, with ``base``'s for those it leaves unset."""
        return Limit(**{name: getattr(self, name) if getattr(self, name) is not None
                        else getattr(base, name) for name in FIELDS})

    @property
    def is_empty(self) -> bool:
        return all(getattr(self, name) is None for name in FIELDS)


class ProviderLimits(BaseModel):
    """Rules by selector (model, endpoint or key) and a default for every key.

    ``rate_window`` is the span ``requests_per_minute`` counts over, 60 seconds: tests shorten
    it. ``lease`` (seconds) matters only to a cluster-wide gate, which gives back a slot whose
    holder never said it was done (a worker that died) after that long; it must be longer than
    any call's deadline.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    default: Limit = Limit()
    rules: dict[str, Limit] = Field(default_factory=dict)
    rate_window: float = Field(default=60.0, gt=0)
    lease: float = Field(default=900.0, gt=0)

    @field_validator("rules")
    @classmethod
    def _normal_selectors(cls, rules: dict[str, Limit]) -> dict[str, Limit]:
        return {_endpoint(selector.strip()): limit for selector, limit in rules.items()
                if not limit.is_empty}

    @property
    def is_empty(self) -> bool:
        """No limit at all: every request may go at once."""
        return self.default.is_empty and not self.rules

    def merged(self, other: ProviderLimits) -> ProviderLimits:
        """These limits with ``other``'s over them: a rule's limits that ``other`` sets win,
        and so do its ``rate_window`` and ``lease`` when it sets them."""
        rules = dict(self.rules)
        for selector, limit in other.rules.items():
            rules[selector] = limit.over(rules.get(selector, Limit()))
        settings: dict[str, Any] = {name: getattr(other, name) for name in ("rate_window", "lease")
                    if name in other.model_fields_set}
        return self.model_copy(update={"default": other.default.over(self.default),
                                       "rules": rules, **settings})

    def pool(self, key: str, field: LimitName) -> tuple[str, int] | None:
        """The pool that bounds ``field`` for ``key``, and its limit; ``None``: unbounded.

        A pool is named by the rule's selector, or by the key itself under the default.
        """
        model, endpoint = split_key(key)
        for selector in (key, model, endpoint):
            rule = self.rules.get(selector)
            value = getattr(rule, field) if rule is not None else None
            if value is not None:
                return selector, value
        value = getattr(self.default, field)
        return (key, value) if value is not None else None


def _parse_one(text: str, option: str) -> tuple[str | None, int]:
    selector, separator, number = text.rpartition("=")
    try:
        value = int(number.strip())
        if value < 1 or (separator and not selector.strip()):
            raise ValueError
    except ValueError:
        raise ValueError(f"{option} takes [KEY=]N with N a whole number from 1 (KEY a model "
                         f"name or an endpoint URL); got {text!r}") from None
    return (selector.strip() if separator else None), value


def parse_limits(max_in_flight: Iterable[str] = (), requests_per_minute: Iterable[str] = (),
                 ) -> ProviderLimits:
    """Limits from command-line values ``[KEY=]N`` (``--max-in-flight``, ``--rpm``): no KEY sets
    the default for every endpoint and model."""
    default: dict[str, int] = {}
    rules: dict[str, dict[str, int]] = {}
    for field, values, option in (("max_in_flight", max_in_flight, "--max-in-flight"),
                                  ("requests_per_minute", requests_per_minute, "--rpm")):
        for text in values:
            selector, value = _parse_one(text, option)
            target = default if selector is None else rules.setdefault(selector, {})
            target[field] = value
    return ProviderLimits(default=Limit(**default),
                          rules={selector: Limit(**given) for selector, given in rules.items()})
