"""The ``featlab`` command. Each command (or family of commands) is one module of this package with a
``register(subparsers)`` that adds its parser and sets its handler; this module only assembles them, parses, and
turns a user mistake into one line and exit code 2.

Commands that take ``key=value`` words (run, reproduce, sweep) name the argument that collects them
(``set_defaults(trailing=...)``), so such words may also come after the options.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import signal
import sys
from contextlib import contextmanager

from .._version import __version__
from ..errors import FeatlabError
from ..text import safe_streams

# the order of `featlab --help`: find an experiment, run it, read its records, reproduce a paper, sweep, stability,
# data, pack. Each module (imported only when one of its commands runs: torch takes seconds to import, and
# `featlab --help` / `--version` need none of it) with its commands and their one-line help, as the module's
# register() gives them (tests/test_cli_fast.py keeps the two the same).
COMMANDS: tuple[tuple[str, dict[str, str]], ...] = (
    ("catalogue", {"list": "every experiment with its paper reference",
                   "claims": "every claim an experiment judges: statement, source, threshold and why",
                   "config": "every config field of an experiment: type, default, preset value, description"}),
    ("run", {"run": "run one experiment"}),
    ("records", {"show": "reprint a finished run's claims and headline metrics",
                 "runs": "an index of the runs under OUT: experiment, run id, preset, overrides, status, claims held, "
                         "date, elapsed",
                 "compare": "two runs: config diff, metric deltas, claims that changed verdict"}),
    ("reproduce", {"reproduce": "every experiment of a paper, then a short summary and a report page",
                   "report": "one HTML page (and a Markdown twin) of every run under OUT: claims, figures, notes, "
                             "config, provenance"}),
    ("scorecard", {"scorecard": "every numbered result of each paper (Definition … Table): counted (held / failed / "
                                "inconclusive / unverified, with its claims and tier), judged not counted, or not "
                                "tested, with why"}),
    ("sweep", {"sweep": "the cartesian product of config values, each point a cached run"}),
    ("stability", {"stability": "do the verdicts survive the values the paper never gives? (each paper-silent "
                                "field over its range, one at a time)"}),
    ("data", {"data": "image datasets: 'featlab data check [--root DIR]' lists what is present and valid",
              "embed": "CLIP ViT-B-32 embeddings of CIFAR-10 for fa-embeddings (needs open_clip)"}),
    ("pack", {"pack": "pack a runs folder's complete records and kept units into one file",
              "unpack": "add a pack's records and units to a runs folder (never overwrites)"}),
)


def _top_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="featlab", description="Reproduce and check feature-learning theory papers.")
    p.add_argument("--version", action="version", version=f"featlab {__version__}")
    return p


def build_parser() -> argparse.ArgumentParser:
    """The whole parser: every command module imported and registered."""
    p = _top_parser()
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, _ in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return p


def overview_parser() -> argparse.ArgumentParser:
    """``featlab --help`` / ``--version`` / no command: the commands and their help, nothing imported."""
    p = _top_parser()
    sub = p.add_subparsers(dest="cmd", required=True)
    for _, commands in COMMANDS:
        for command, text in commands.items():
            sub.add_parser(command, help=text, add_help=False)
    return p


def _names_a_command(argv: list[str]) -> bool:
    """The first word that is not an option is a command: only then is the whole parser (and torch) needed."""
    first = next((w for w in argv if not w.startswith("-")), None)
    return any(first in commands for _, commands in COMMANDS)


def _dispatch(argv: list[str] | None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    if not _names_a_command(words):
        overview_parser().parse_args(words)  # prints help or the version, or the one-line usage error; exits
    from ..cpus import fit_torch_threads  # torch: only for a command that runs

    fit_torch_threads()  # torch counts the machine's cores: no more threads than this process may use
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)  # key=value may come after options
    trailing = getattr(args, "trailing", None)
    if extra:
        if trailing is None or any(e.startswith("-") or "=" not in e for e in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        setattr(args, trailing, [*getattr(args, trailing), *extra])
    try:
        return args.handler(args)
    except FeatlabError as e:
        print(f"featlab: error: {' '.join(str(e).split())}", file=sys.stderr)  # one line, whatever the message
        return 2
    except OSError as e:
        if e.errno not in PATH_ERRORS or e.filename is None:
            raise  # not about a path the user gave: a bug, with its traceback
        print(f"featlab: error: {path_error(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (a scheduler, `kill`): the same line, its own exit code
        print("featlab: interrupted; completed runs are kept, the unfinished one will be redone", file=sys.stderr)
        return 128 + (e.signum if isinstance(e, Terminated) else signal.SIGINT)


# the OS refusing a path the user gave (a 300-character folder name, a symlink loop, a file where a folder goes, no
# permission, a full or read-only disk): one line on every command, never a traceback
PATH_ERRORS = {errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM, errno.ENOSPC,
               errno.EROFS, errno.EDQUOT}


def path_error(e: OSError) -> str:
    """'cannot use path '/a/…/b' (File name too long): pass a shorter path …' for an OSError about a path."""
    name = str(e.filename)
    shown = repr(name) if len(name) <= 120 else f"{repr(name[:60] + '…' + name[-50:])} ({len(name)} characters)"
    fix = {errno.ENAMETOOLONG: "pass a shorter path (each folder name at most 255 bytes)",
           errno.ELOOP: "the path goes through a symbolic link loop; fix the link or pass another path",
           errno.ENOSPC: "free some space or pass a path on another disk",
           errno.EDQUOT: "free some space or pass a path on another disk"}.get(e.errno or 0, "pass another path")
    return f"cannot use the path {shown}: {e.strerror or e}; {fix}"


class Terminated(KeyboardInterrupt):
    """SIGTERM as an interrupt: the work in hand unwinds as on Ctrl-C (the unfinished run's staging folder removed,
    its lock released) and the command says so, where the default action would end it without a word."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, _frame) -> None:
    signal.signal(signum, signal.SIG_DFL)  # a second SIGTERM while unwinding ends it at once; a rerun recovers
    raise Terminated(signum)


@contextmanager
def _sigterm_as_interrupt():
    try:  # only the main thread may set a handler (main() called from a worker thread: leave it as is)
        old = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)  # main() in a longer process (tests, a notebook): its handler back


def main(argv: list[str] | None = None) -> int:
    code = 141  # 128 + SIGPIPE, as a tool killed by a closed pipe, if the pipe closes before the outcome is known
    safe_streams()  # an ASCII-only terminal or log: δ, √, µ are spelled in ASCII instead of raising
    try:
        with _sigterm_as_interrupt():
            code = _dispatch(argv)
        sys.stdout.flush()  # here, not at exit: a closed pipe (`featlab list | head -1`) is then handled below
        return code
    except BrokenPipeError:  # the reader left: end quietly, no traceback, nothing more on the closed pipe
        from ..utils import silence_stdout

        silence_stdout()
        return code
