# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``ascend.cluster.text_table``; documentation in ``text_table.yml``."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def text_table(rows, columns, headers=None, ok_column=None, ok_values=("OK",), max_ok=None, more_hint=""):
    # imported when called, not when Ansible loads the file (docs/contracts.md, filter files)
    from ansible_collections.ascend.cluster.plugins.plugin_utils._text_table import TableError
    from ansible_collections.ascend.cluster.plugins.plugin_utils._text_table import text_table as _text_table

    try:
        return _text_table(rows, columns, headers, ok_column=ok_column, ok_values=ok_values, max_ok=max_ok, more_hint=more_hint)
    except TableError as exc:
        raise AnsibleFilterError(f"text_table: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"text_table": text_table}
