"""The provider limits of a batch run: those its team file gives with each LM, under the run's own.

A team file may bound a member's LM where it sets it::

    [members.agent.lm]
    model = "gpt-4o"
    max_in_flight = 8            # requests to this model at this endpoint under way at once
    requests_per_minute = 500    # and started per minute

(and so may ``[tools.lm]``). Each becomes a rule for that LM's endpoint and model, shared by every
member that uses the same pair (two members giving different numbers for one pair: the smaller
holds). The run's ``limits=`` (``--max-in-flight``, ``--rpm``) win over the team file's: where
they bound an endpoint and model (by its model, its endpoint, the key or the default), the team
file's number for it is dropped. The limits are laid over the process's gate while the run lasts
(:mod:`cogym_lab.lm.limits`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cogym_lab.lm import LMConfig
from cogym_lab.lm.limit_rules import FIELDS, Limit, ProviderLimits, limit_key

__all__ = ["LIMIT_FIELDS", "batch_limits", "team_limits"]

#: The keys of a team file's LM table that are limits, not LM settings.
LIMIT_FIELDS = FIELDS


def team_limits(lms: Iterable[tuple[LMConfig, Mapping[str, Any]]]) -> ProviderLimits:
    """Rules from team-file LM tables: each ``(config, table)`` pair is an LM's resolved settings
    and the table it came from."""
    rules: dict[str, dict[str, int]] = {}
    for config, table in lms:
        given = {name: table[name] for name in FIELDS if table.get(name) is not None}
        if not given:
            continue
        Limit.model_validate(given)  # says which value is wrong, naming the field
        rule = rules.setdefault(limit_key(config.model, config.base_url, config.provider), {})
        for name, value in given.items():
            rule[name] = min(int(value), rule.get(name, int(value)))
    return ProviderLimits(rules={key: Limit(**rule) for key, rule in rules.items()})


def batch_limits(lms: Iterable[tuple[LMConfig, Mapping[str, Any]]],
                 given: ProviderLimits | Mapping[str, Any] | None) -> ProviderLimits:
    """The limits a batch runs under: the team file's, with the run's ``given`` over them."""
    limits = team_limits(lms)
    if given is None:
        return limits
    if not isinstance(given, ProviderLimits):
        given = ProviderLimits.model_validate(given)
    rules = {}
    for key, rule in limits.rules.items():
        kept = Limit(**{name: getattr(rule, name) for name in FIELDS
                        if given.pool(key, name) is None})
        if not kept.is_empty:
            rules[key] = kept
    return limits.model_copy(update={"rules": rules}).merged(given)
