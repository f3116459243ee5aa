"""The report as files: the HTML page and its Markdown twin, side by side, with the twin's figures folder."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from ..utils import check_writable, writing
from .html import write_html
from .markdown import files_dir, write_markdown
from .summary import Report


def check_report(html_path: str | Path, flag: str = "--out") -> Path:
    """Before the work: refuse (one line) a report destination that cannot be written — a folder named as the page,
    a file where its figures folder goes, a folder that is read-only or missing behind a file."""
    html_path = Path(html_path)
    if html_path.suffix.lower() == ".md":  # the twin would overwrite the page
        raise ConfigError(f"{flag}: {str(html_path)!r} names the Markdown twin; name the HTML file (e.g. "
                          f"{str(html_path.with_suffix('.html'))!r}), the .md goes beside it")
    check_writable(html_path, flag, example="report.html")
    md = html_path.with_suffix(".md")
    check_writable(md, flag)
    check_writable(files_dir(md), flag, folder=True)
    return html_path


def write_report(report: Report, html_path: str | Path, flag: str = "--out", kept: str = "") -> list[Path]:
    """Write ``html_path`` and the Markdown twin beside it (``.md``); return both paths. Each file is written whole
    or not at all (figures first, so the twin never links a missing one); a full disk or a read-only folder is
    one line naming the file (``flag``: the option that chose the destination; ``kept``: what the user keeps)."""
    html_path = check_report(html_path, flag)
    with writing(flag, kept):
        md = write_markdown(report, html_path.with_suffix(".md"))
        return [write_html(report, html_path), md]
