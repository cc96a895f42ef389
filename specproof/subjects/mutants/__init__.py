"""Mutation testing of the audit: the flagged verifier with vLLM's signature and one mutant of
the catalogue (:data:`specproof.subjects.bugs.MUTANTS`) switched on, their exact laws
(reference rules with the same bugs) and the search for adversarial cases; the table ``nox -s
mutants`` writes is :mod:`specproof.runners.mutant_table`'s."""

from specproof.subjects.mutants.verifier import make_verifier, rejection_sample

__all__ = ["make_verifier", "rejection_sample"]
