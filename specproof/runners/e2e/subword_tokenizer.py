"""The sub-word vocabulary: a byte-level BPE tokenizer (Hugging Face ``tokenizers``) trained
here on the three domains' training documents, and the token streams of the corpora under it.

    python -m specproof.runners.e2e.subword_tokenizer [--out FILE] [--check]

trains it and writes ``specproof/e2e/subword_tokenizer.json`` (``--check`` retrains and exits 1
unless the committed file's vocabulary and merges are the ones retrained). The byte-level path
(:mod:`specproof.e2e.data.corpora`, vocabulary 256) is unchanged and stays the default of every
other command.

How it works: :mod:`specproof.e2e.data.subword`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from specproof.commands.command_rules import OneLineParser, output_path_problem
from specproof.e2e.data.subword import (
    PROG,
    TOKENIZER_FILE,
    VOCAB_SIZE,
    train_tokenizer,
    training_documents,
)


def main(argv: Sequence[str] | None = None) -> int:
    from specproof.e2e.data.corpora import load_corpora

    parser = OneLineParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=TOKENIZER_FILE)
    parser.add_argument(
        "--check", action="store_true", help="retrain and compare with --out; write nothing"
    )
    args = parser.parse_args(argv)
    if not args.check and (problem := output_path_problem("--out", str(args.out))):
        parser.error(problem)
    text = train_tokenizer(training_documents(load_corpora()))
    if args.check:
        import json

        if not args.out.is_file():
            parser.error(f"argument --out: no file {args.out} to check")
        same = json.loads(text)["model"] == json.loads(args.out.read_text())["model"]
        print(f"{args.out}: {'matches' if same else 'DIFFERS FROM'} the retrained tokenizer")
        return 0 if same else 1
    args.out.write_text(text)
    print(f"wrote {args.out} ({len(text)} bytes, vocabulary {VOCAB_SIZE})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
