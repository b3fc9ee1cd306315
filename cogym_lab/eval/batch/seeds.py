"""Seeds of a batch run's trials: one per instance, trial and member, the same on every rerun.

A trial is one session of an instance; running an instance K times gives trials 0..K-1. Each LM
member of a trial (and the task's own tools, and the session's environment) gets a seed of its
own, derived from the three, so that:

* two trials of an instance differ (their LMs sample from other seeds, and their environments
  are reset with other seeds), which is what makes repeated trials measure run-to-run noise
  rather than replay one run; and
* a trial run again (resumed, or rerun on purpose) gets the very seeds it had, so a rerun
  reproduces it as far as the endpoints honour seeds.

Seeds reach every LM call (``LMConfig.seed``, sent as ``seed``), not only the order in which
tasks are run: a benchmark whose "seed" shuffled the task order alone left every trial's LM calls
unseeded (tau-bench issue #57).
"""

from __future__ import annotations

import hashlib

#: The role name of the session's own seed: the environment's reset (``[session] seed``).
ENV = "env"
#: Seeds are below 2**31, so every endpoint and library that takes a 32-bit signed seed does.
SEED_BITS = 31


def trial_seed(instance: int, trial: int, role: str) -> int:
    """The seed of ``role`` (a member's role, ``"tools"``, or :data:`ENV`) in ``trial`` of
    ``instance``: the first bytes of the SHA-256 of the three, as a number below 2**31.

    Stable across processes, machines and Python versions (unlike ``hash()``), and unrelated for
    neighbouring trials (unlike ``instance * K + trial``)."""
    if instance < 0 or trial < 0:
        raise ValueError(f"instance and trial are numbers from 0 (got {instance}, {trial})")
    digest = hashlib.sha256(f"{instance}\x1f{trial}\x1f{role}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> (64 - SEED_BITS)


__all__ = ["ENV", "SEED_BITS", "trial_seed"]
