"""specproof.parity: a statistical parity report for a pull request.

``specproof parity-report verifier MODULE:FN --signature SIG --out DIR`` (function level) or
``specproof parity-report engine MODULE:FN --out DIR`` (engine level) runs the audit and writes
``DIR/report.md``: the verdict on its first line, the exact command, versions, seed, alpha and
power, the audit's row table, and per position the observed token frequencies against the
exact law with simultaneous intervals (:mod:`.positions`), drawn as PNG plots when matplotlib
is installed (:mod:`.plots`, imported lazily). :mod:`.run` runs the audits and draws the
samples; :mod:`.report` writes report.md.
"""
