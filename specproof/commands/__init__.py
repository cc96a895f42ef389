"""The commands: every argparse front of specproof, above the machinery they drive.

``cli`` (the ``specproof`` program and its subcommands), ``audit`` (``specproof audit``),
``audit_engine`` (``specproof audit-engine --hf ...``), ``engines`` (``specproof engines`` and
``specproof audit-engine ENGINE --model ...``), ``golden`` (``specproof golden``),
``parity_report`` (``specproof parity-report``), and ``command_rules``: the argument types,
one-line usage errors and exit of every command and runner (:mod:`specproof.runners`).
Nothing below this package imports it (``tests/test_layering.py``).
"""
