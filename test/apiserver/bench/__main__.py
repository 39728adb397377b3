"""``python -m test.apiserver.bench``: see ``bench.py``."""

from .bench import main

raise SystemExit(main())
