"""Initiative entropy H_init (Co-Gym Equation 1): how evenly a team's members take initiative.

``p_i`` is member i's share of the initiative-taking messages and N the number of members:

    H_init = -sum_i p_i log_N p_i   when every p_i > 0,   and 0 when some p_i = 0.

Only the team's members are parties; the environment never is. Which messages take initiative is
an LM judge's call (see :mod:`cogym_lab.eval.judging.judges`); this module only counts.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence


def initiative_entropy(counts: Mapping[str, float], parties: Sequence[str], *,
                       without_initiative: float = math.nan) -> float:
    """H_init for initiative-taking message ``counts`` by party.

    Parties missing from ``counts`` have zero share (so H_init = 0); keys of ``counts`` that are
    not ``parties`` (the environment) are ignored. ``without_initiative`` when nobody took
    initiative at all (the scoring protocol decides: 0 in the Co-Gym release, NaN, undefined,
    in cogym_lab's own protocol), and 0 for a team of one, which has no balance to measure.
    """
    members = list(dict.fromkeys(parties))
    total = sum(max(0.0, float(counts.get(party, 0))) for party in members)
    if total == 0:
        return without_initiative
    if len(members) < 2:
        return 0.0
    shares = [float(counts.get(party, 0)) / total for party in members]
    if any(share <= 0 for share in shares):
        return 0.0
    return -sum(share * math.log(share, len(members)) for share in shares)


def initiative_counts(senders: Iterable[str], took_initiative: Iterable[bool]) -> Counter[str]:
    """Initiative-taking messages per sender, from each message's sender and judge label."""
    return Counter(sender for sender, label in zip(senders, took_initiative, strict=True)
                   if label)


def initiative_shares(counts: Mapping[str, float], parties: Sequence[str]) -> dict[str, float]:
    """Each party's share ``p_i`` of the initiative (NaN for all when there was none)."""
    total = sum(float(counts.get(party, 0)) for party in parties)
    return {party: (float(counts.get(party, 0)) / total if total else math.nan)
            for party in parties}
