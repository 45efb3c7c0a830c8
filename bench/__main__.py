"""Entry point: python -m bench [--quick] [--json PATH] [--compare OLD.json] ..."""

import sys

from bench.runner import main

sys.exit(main())
