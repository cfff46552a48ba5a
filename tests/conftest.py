"""Shared pytest set-up: the checkout is importable as ``ansible_collections.ascend.cluster``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers.collection import install_import_path

install_import_path()
