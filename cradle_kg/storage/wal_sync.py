"""fsync of a SQLite database's WAL, made by its writer after it released the write lock.

In WAL mode with ``synchronous = NORMAL`` a commit is written to the WAL but not synced;
a writer that syncs the WAL itself once it has let the next writer in makes its commit
durable without holding the others up for the disk — and one sync covers every commit
written before it began (group commit). A WAL that is gone was checkpointed, and the
checkpoint synced it: nothing is left to sync. A new WAL file's name must be on disk too:
its folder is synced the first time its inode is seen.
"""

from __future__ import annotations

import os
from pathlib import Path


def sync_wal(database: Path, seen_inode: int | None) -> tuple[bool, int | None]:
    """fsync ``<database>-wal`` (and its folder, when its inode is not ``seen_inode``):
    whether it is on disk, and the inode seen (to pass next time)."""
    try:
        fd = os.open(f"{database}-wal", os.O_RDONLY)
    except FileNotFoundError:  # checkpointed and removed: the checkpoint synced it
        return True, seen_inode
    except OSError:
        return False, seen_inode
    try:
        os.fdatasync(fd)  # as SQLite syncs its WAL on Linux: data and the file's size
        inode = os.fstat(fd).st_ino
        if inode != seen_inode:
            folder = os.open(database.parent, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
        return True, inode
    except OSError:
        return False, seen_inode
    finally:
        os.close(fd)
