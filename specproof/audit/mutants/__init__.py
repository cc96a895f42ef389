"""Mutation testing of the audit: the flagged verifier with vLLM's signature and one mutant of
the catalogue (:data:`specproof.audit.bugclasses.MUTANTS`) switched on, their exact laws
(reference rules with the same bugs) and the table ``nox -s mutants`` writes."""

from .verifier import make_verifier, rejection_sample

__all__ = ["make_verifier", "rejection_sample"]
