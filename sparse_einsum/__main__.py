"""``python -m sparse_einsum``: the same command line as ``sparse-einsum``."""
import sys

from .cli import main

sys.exit(main())
