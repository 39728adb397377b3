"""``python -m manager.bench``: the noderesource benchmark."""

import sys

from manager.bench.noderesource import main

sys.exit(main())
