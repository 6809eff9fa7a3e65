"""Names for files netui writes next to the user's own (exports, recordings): never one that
exists, so a second export in the same second, or a recording started twice in one, keeps
the first file whole."""

from __future__ import annotations

from pathlib import Path

MAX_TRIES = 1000


def free_paths(directory: str | Path, stem: str, suffixes: tuple[str, ...]) -> list[Path]:
    """``directory/stem<suffix>`` for each suffix, or with ``-2``, ``-3`` … after the stem:
    the first whose files all do not exist yet. Callers still create them exclusively (mode
    "x"), as another program may take a name meanwhile. FileExistsError after MAX_TRIES."""
    base = Path(directory)
    for n in range(1, MAX_TRIES + 1):
        name = stem if n == 1 else f"{stem}-{n}"
        paths = [base / f"{name}{suffix}" for suffix in suffixes]
        if not any(p.exists() for p in paths):
            return paths
    raise FileExistsError(f"{base / stem}: {MAX_TRIES} files of that name exist already")
