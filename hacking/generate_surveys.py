# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write surveys/<playbook>.json, the AWX / Automation Platform survey spec of each playbook, from the ``-e`` inputs it
declares (``ascend_playbook_inputs``; plugins/plugin_utils/_surveys.py says how). Run after changing a declaration:

    .venv/bin/python hacking/generate_surveys.py          # write them
    .venv/bin/python hacking/generate_surveys.py --check  # exit 1 naming each file that differs

tests/unit/plugins/plugin_utils/test_surveys.py holds the shipped files to what this writes, byte for byte.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers.collection import install_import_path  # noqa: E402 - the collection importable from this checkout

install_import_path()

from ansible_collections.ascend.cluster.plugins.plugin_utils._surveys import survey_text  # noqa: E402

# The playbooks a job template runs on the servers (sim_cluster builds a local simulated cluster: no survey).
PLAYBOOKS = ("train", "smoke", "rank_table", "prepare", "status", "stop", "diagnose", "collect")
SURVEYS = ROOT / "surveys"


def rendered() -> dict[Path, str]:
    """Each survey file and the text it must hold."""
    return {SURVEYS / f"{name}.json": survey_text(name, (ROOT / "playbooks" / f"{name}.yml").read_text()) for name in PLAYBOOKS}


def main(argv: list[str]) -> int:
    stale = [path for path, text in rendered().items() if not path.is_file() or path.read_text() != text]
    if "--check" in argv:
        for path in stale:
            print(f"{path.relative_to(ROOT)} differs from its playbook's declared inputs: run hacking/generate_surveys.py")
        return 1 if stale else 0
    for path, text in rendered().items():
        if path in stale:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
