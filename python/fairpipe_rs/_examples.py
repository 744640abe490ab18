"""The data files fairpipe ships (``pipelines/data`` of a fairpipe clone: the UCI Adult file,
the census, bank, COMPAS and credit rows), found from wherever the caller runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import List

from . import _native

__all__ = ["example_data"]


def example_data(name: str) -> Path:
    """The path of the bundled data file ``name`` (e.g. ``"adult.data.csv"``), from any folder.

    Looked for, in order: in the folder ``FAIRPIPE_DATA`` names; in ``pipelines/data`` of the
    fairpipe clone this package was built from; in ``pipelines/data`` of the current folder and
    each folder above it. ``FileNotFoundError`` names every place tried.
    """
    places: List[Path] = []
    if os.environ.get("FAIRPIPE_DATA"):
        places.append(Path(os.environ["FAIRPIPE_DATA"]))
    places.append(Path(_native.source_tree()) / "pipelines" / "data")
    here = Path.cwd().resolve()
    places.extend(folder / "pipelines" / "data" for folder in [here, *here.parents])
    for folder in places:
        if (folder / name).is_file():
            return folder / name
    tried = "\n  ".join(str(p) for p in places)
    raise FileNotFoundError(
        f"{name}: not found in\n  {tried}\nset FAIRPIPE_DATA to the folder holding it (pipelines/data of a fairpipe clone)"
    )
