"""``python -m solver ...`` -- see :mod:`solver.io.cli`."""

import sys

from .io.cli import main

if __name__ == "__main__":
    sys.exit(main())
