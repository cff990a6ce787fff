"""Seeds reserved for tuning the baseline (`python -m engine tune-baseline`,
engine.autopilot.tune): a tuned baseline chosen on the seeds a comparison or the autopilot
then measures on would carry the luck of those seeds into every speedup against it, so
comparisons' pairs and the autopilot's search, runoff and confirmation never use them.

Four seeds (one round-1 seed and three more for the survivors): the choice rule needs a
configuration to reach the target on at least 3 of 4. They sit far above the small seeds
every comparison starts from (0: pair i on seed i; A/A + 1000), so no default is refused.
"""
from __future__ import annotations

from typing import Iterable

from engine.base.errors import ConfigError

TUNING_SEEDS = (900000, 900001, 900002, 900003)


def refuse_tuning_seeds(seed: int, offsets: Iterable[int], what: str) -> None:
    """Raise ConfigError (field seed, one line) when `seed` + any of `offsets` (the seeds a
    comparison or an autopilot derives from its base `seed`) is a tuning seed; `what` names
    the user, e.g. 'a comparison of 10 pairs'."""
    offs = sorted(set(int(o) for o in offsets))
    hit = sorted(set(seed + o for o in offs) & set(TUNING_SEEDS))
    if not hit:
        return
    lo, hi = min(TUNING_SEEDS), max(TUNING_SEEDS)
    raise ConfigError("seed", seed, f"gives {what} tuning seed {hit[0]} (seeds {lo}-{hi} are reserved "
                                    "for tune-baseline)",
                      f"use a seed of at most {lo - offs[-1] - 1} or above {hi}")
