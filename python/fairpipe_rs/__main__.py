"""``python -m fairpipe_rs ARGS``: the ``fairpipe`` command line (see ``fairpipe_rs._cli``)."""

from ._cli import main

raise SystemExit(main())
