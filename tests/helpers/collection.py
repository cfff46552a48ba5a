"""Make this checkout importable and loadable as the ``ascend.cluster`` collection.

Ansible finds collections only below a directory named ``ansible_collections/<ns>/<name>``.
The repository root is the collection root, so we expose it through a symlink under
``build/collections`` (ignored by git, pytest and galaxy builds) instead of asking
contributors to clone into a special path.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS_DIR = REPO_ROOT / "build" / "collections"
COLLECTION_LINK = COLLECTIONS_DIR / "ansible_collections" / "ascend" / "cluster"


def ensure_collection_link() -> Path:
    """Create (idempotently, race-free) the symlink and return the collections dir."""
    COLLECTION_LINK.parent.mkdir(parents=True, exist_ok=True)
    if not COLLECTION_LINK.is_symlink():
        tmp = COLLECTION_LINK.with_name(f".cluster.{os.getpid()}")
        try:
            tmp.symlink_to(REPO_ROOT, target_is_directory=True)
            os.replace(tmp, COLLECTION_LINK)
        finally:
            if tmp.is_symlink():
                tmp.unlink()
    return COLLECTIONS_DIR


def install_import_path() -> None:
    """Let ``import ansible_collections.ascend.cluster...`` work in this interpreter."""
    path = str(ensure_collection_link())
    if path not in sys.path:
        sys.path.insert(0, path)
