"""The docsite's extra docs (docs/docsite/): every docs/*.md page converted to RST by hacking/docsite.py, as shipped.

``make docs-lint`` (antsibull-docs lint-collection-docs) lints the RST; this holds the files to the Markdown."""

from __future__ import annotations

from hacking.docsite import DOCS, PREFIX, SECTIONS, convert, rendered


def test_the_shipped_pages_are_the_markdown_converted():
    for path, text in rendered().items():
        assert path.is_file(), f"{path.name} is missing: run hacking/docsite.py"
        assert path.read_text() == text, f"{path.name} is stale: run hacking/docsite.py"
    assert sorted(p.stem for p in DOCS.glob("*.md")) == sorted(page for _title, pages in SECTIONS for page in pages)


def test_a_page_converts_with_its_label_tables_code_and_links_to_other_pages():
    markdown = (
        "# Title with `code`\n\nSee [the launch](launch.md) and [torch](https://pytorch.org/x), **bold** text_name.\n\n"
        "| a | b |\n|---|---|\n| `x\\|y` | `tls[P](...)` |\n\n```console\n$ echo hi\n```\n\n- one\n- two `t`.\n"
    )
    rst = convert("page", markdown)
    assert rst.splitlines()[2] == f".. _{PREFIX}page:"
    assert "Title with ``code``\n" in rst
    assert f":ref:`the launch <{PREFIX}launch>`" in rst and "`torch <https://pytorch.org/x>`__" in rst
    assert "**bold** text\\_name." in rst
    assert ".. list-table::\n   :header-rows: 1\n\n   * - a\n     - b\n   * - ``x|y``\n     - :literal:`tls[P]\\(...)`" in rst
    assert ".. code-block:: console\n\n    $ echo hi\n" in rst
    assert "- one\n- two ``t``." in rst
