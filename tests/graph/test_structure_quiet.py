"""A graph build over XHTML pages says nothing but its report (issue 27 item 8: bs4's 12-line
XMLParsedAsHTMLWarning on every build)."""

from __future__ import annotations

import warnings
from pathlib import Path

from toolish_rag.graph_builders._structure import _html_links

XHTML = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Handbook</title></head>
<body><p>New staff read <a href="guide.xhtml">the Beta Guide</a> first.</p></body></html>
"""


def test_xhtml_links_are_read_without_a_warning(tmp_path: Path) -> None:
    page = tmp_path / 'handbook.xhtml'
    page.write_text(XHTML)
    tiny = tmp_path / 'tiny.html'
    tiny.write_text('guide.html')  # markup that looks like a file name
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        assert _html_links(page) == (('guide.xhtml', 'the Beta Guide'),)
        assert _html_links(tiny) == ()
    assert [str(w.message)[:60] for w in caught] == []
