# Module moves of the e2e reorganisation (issue 43, item 4), for prose that names the old paths:
#   sed -i -f tools/e2e_moves.sed README.md docs/*.md        (GNU sed: \b and \| are GNU extensions)
# Dotted names (specproof.e2e.evaluation.tau), file paths (specproof/e2e/evaluation/tau.py) and
# the short forms prose uses (`evaluation.tau`). Names that moved out of a module come first, so
# the module's own line does not rewrite them; \b keeps evaluation.sts from matching sts_claims.
#
# Names moved out of a module that itself moved or stayed:
s/specproof\.e2e\.training\.sweep\.teacher_forced_score\b/specproof.e2e.evaluation.agreement.teacher_forced_score/g
s/specproof\.e2e\.evaluation\.held_out\.\(held_out_statistics\|prediction_statistics\|WINDOW_BATCHES\)\b/specproof.e2e.evaluation.prediction.\1/g
# The sign test and its sample sizing: with the other statistics.
s/specproof\.e2e\.evaluation\.sign_test\b/specproof.stats.sign_test/g
s/specproof\.e2e\.evaluation\.sizing\b/specproof.stats.sizing/g
s/specproof\/e2e\/evaluation\/sign_test\.py/specproof\/stats\/sign_test.py/g
s/specproof\/e2e\/evaluation\/sizing\.py/specproof\/stats\/sizing.py/g
# The renderer of the headline and scheduler-clocks sections of BENCHMARKS.md: with the reports.
s/specproof\.e2e\.evaluation\.speed_sections\b/specproof.e2e.report.headline_and_clocks/g
s/specproof\/e2e\/evaluation\/speed_sections\.py/specproof\/e2e\/report\/headline_and_clocks.py/g
s/`evaluation\.speed_sections`/`report.headline_and_clocks`/g
# The toy models, used only by tests (which import them as e2e.toy_models).
s/specproof\.e2e\.models\.toy\b/e2e.toy_models/g
s/specproof\/e2e\/models\/toy\.py/tests\/e2e\/toy_models.py/g
# The python -m experiment commands: from evaluation/ (the shared library) to experiments/.
s/specproof\.e2e\.evaluation\.\(ceiling\|depth_draft_time\|draft_time\|drafter_tau\|headline\|held_out\|scheduler_clocks\|sts_claims\|tau\|walk_cost\)\b/specproof.e2e.experiments.\1/g
s/specproof\/e2e\/evaluation\/\(ceiling\|depth_draft_time\|draft_time\|drafter_tau\|headline\|held_out\|scheduler_clocks\|sts_claims\|tau\|walk_cost\)\.py/specproof\/e2e\/experiments\/\1.py/g
s/`evaluation\.\(ceiling\|depth_draft_time\|draft_time\|drafter_tau\|headline\|held_out\|scheduler_clocks\|sts_claims\|tau\|walk_cost\)`/`experiments.\1`/g
