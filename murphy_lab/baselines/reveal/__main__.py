"""`python -m murphy_lab.baselines.reveal --config reproduce/configs/<model>/reveal.yaml --output-dir DIR [--resume]`."""

import sys

from murphy_lab.baselines.reveal.trainer import main

if __name__ == "__main__":
    try:
        main()
    except ValueError as e:  # configuration errors: one clear line, no traceback
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
