"""The report as files: the HTML page and its Markdown twin, side by side."""

from __future__ import annotations

from pathlib import Path

from .html import write_html
from .markdown import write_markdown
from .summary import Report


def write_report(report: Report, html_path: str | Path) -> list[Path]:
    """Write ``html_path`` and the Markdown twin beside it (``.md``); return both paths."""
    html_path = Path(html_path)
    return [write_html(report, html_path), write_markdown(report, html_path.with_suffix(".md"))]
