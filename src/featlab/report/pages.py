"""The report as files: the HTML page and its Markdown twin, side by side, with the twin's figures folder."""

from __future__ import annotations

from contextlib import suppress
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
    md_path = html_path.with_suffix(".md")
    figures = files_dir(md_path)
    had = {p for p in (md_path, figures) if p.exists()} | (set(figures.iterdir()) if figures.is_dir() else set())
    try:
        with writing(flag, kept):
            md = write_markdown(report, md_path)
            return [write_html(report, html_path), md]
    except BaseException:  # refused half-way (a full disk): nothing of this report stays, a user's files do
        _remove_new(md_path, figures, had)
        raise


def _remove_new(md_path: Path, figures: Path, had: set[Path]) -> None:
    """Remove what a failed :func:`write_report` added: figures copied into the files folder (the folder too when
    it made it and it is empty), and the Markdown twin when there was none before."""
    for p in (list(figures.iterdir()) if figures.is_dir() else []):
        if p not in had and p.is_file():
            p.unlink(missing_ok=True)
    if figures not in had:
        with suppress(OSError):
            figures.rmdir()
    if md_path not in had:
        md_path.unlink(missing_ok=True)
