"""Entry point of koord-descheduler (upstream `cmd/koord-descheduler`).

Built as the py_binary `//descheduler:koord-descheduler`. Only `--config` exists so far: the
DeschedulerConfiguration file is loaded and checked as upstream's `loadConfigFromFile` does, so
a bad file stops start-up naming the file and the field; the descheduler itself is not built yet.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from descheduler.apis.config import DeschedulerConfigError, load_descheduler_config

PROG = "koord-descheduler"
DESCRIPTION = (
    "koord-descheduler: the descheduling framework, LowNodeLoad and the "
    "MigrationController. Not implemented yet (only --config is read and checked)."
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION)
    parser.add_argument("--config", default="", metavar="FILE",
                        help="the DeschedulerConfiguration file (strict: unknown and duplicate "
                             "fields are errors)")
    args = parser.parse_args(argv)
    if args.config:
        try:
            text = Path(args.config).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            reason = err.strerror if isinstance(err, OSError) else str(err)
            print(f"{PROG}: {args.config}: cannot read the file: {reason}", file=sys.stderr)
            return 1
        try:
            load_descheduler_config(text, source=args.config)
        except DeschedulerConfigError as err:
            print(f"{PROG}: {err}", file=sys.stderr)
            return 1
    print(f"{PROG}: not implemented yet", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
