"""The ``fairpipe`` command installed with the package: the Rust binary's command line (every
subcommand, its exit codes and progress bars), run inside the extension module, so that
``pip install fairpipe-rs`` (or ``pipx install fairpipe-rs``) gives the command without a Rust
toolchain. ``python -m fairpipe_rs ARGS`` runs it too.
"""

from __future__ import annotations

import signal
import sys
from typing import Optional, Sequence

from . import _native


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run ``fairpipe ARGV`` (default: this process's arguments) and return its exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    # The command line handles SIGINT itself (stop the searches, then exit 130); Python's handler,
    # which it would chain to, would raise KeyboardInterrupt once it returns.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.stdout.flush()
    return int(_native.cli(["fairpipe", *args]))
