"""specproof.stats: goodness of fit against exact laws, with stated error rates.

:func:`goodness_of_fit` rejects a sampler whose law equals the exact one with probability at
most alpha, for every sample size (no asymptotics); :func:`required_samples` is the n that
detects any law at total-variation distance >= delta with probability >= 1 - beta. Derivations
are in :mod:`specproof.stats.bounds`; :mod:`specproof.stats.gof` is the test itself,
:mod:`specproof.stats.calibrate` measures its error rates, :mod:`specproof.stats.partition` tests a
few hash bins when the outcome space is too large, and :mod:`specproof.stats.lengths` gives the
exact law of the accepted length. :mod:`specproof.stats.acceptance` tests a count of accepted
drafts two-sided against the exact acceptance probabilities (a martingale test, valid when each
probability depends on earlier acceptances), with its power.

Paired speed comparisons: :mod:`specproof.stats.sign_test` is the exact one-sided sign test over
per-chunk ratios, with its power; :mod:`specproof.stats.sizing` gives the number of chunks it
needs, the distribution-free interval of a median and the non-inferiority form of the test.
:mod:`specproof.stats.intervals` gives t- and BCa intervals over chunks, the paired t-test and
Holm's correction across a named family of tests.
"""

from .bounds import (
    EXACT_CELLS,
    hoeffding_threshold,
    p_value_bound,
    power_lower_bound,
    rejection_threshold,
    required_samples,
    worst_case_power,
)
from .gof import (
    FitResult,
    detection_power,
    empirical_counts,
    exact_tv,
    goodness_of_fit,
    tv_from_counts,
)
from .lengths import accepted_length_law, lengths_from_rows, sample_accepted_lengths
from .partition import HashPartition

__all__ = [
    "EXACT_CELLS",
    "FitResult",
    "HashPartition",
    "accepted_length_law",
    "detection_power",
    "empirical_counts",
    "exact_tv",
    "goodness_of_fit",
    "hoeffding_threshold",
    "lengths_from_rows",
    "p_value_bound",
    "power_lower_bound",
    "rejection_threshold",
    "required_samples",
    "sample_accepted_lengths",
    "tv_from_counts",
    "worst_case_power",
]
