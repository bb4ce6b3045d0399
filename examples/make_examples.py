"""Regenerate the example programs and their data next to this script.

    python examples/make_examples.py

Writes gcn.se + gcn_data/ and softmax.se + softmax_data/ (the same files as
`sparse-einsum example NAME examples`). The data is seeded and the .npz entries carry
fixed timestamps, so a rerun reproduces the files byte for byte.
"""
from __future__ import annotations

from pathlib import Path

from sparse_einsum.examples import EXAMPLES, write_example

HERE = Path(__file__).resolve().parent


def main() -> None:
    for name in EXAMPLES:
        program, data_dir = write_example(name, HERE)
        files = ", ".join(sorted(p.name for p in data_dir.iterdir()))
        print(f"{program.relative_to(HERE)}  {data_dir.relative_to(HERE)}/ ({files})")


if __name__ == "__main__":
    main()
