"""Mutation testing of the audit: a correct vectorised chain verifier, its mutants, their exact
laws (reference rules with the same bugs) and the table ``nox -s mutants`` writes."""

from .catalogue import MUTANTS, SAMPLE, Mutant, by_name, make_drafter
from .verifier import make_verifier, rejection_sample

__all__ = [
    "MUTANTS",
    "SAMPLE",
    "Mutant",
    "by_name",
    "make_drafter",
    "make_verifier",
    "rejection_sample",
]
