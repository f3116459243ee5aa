"""The ``featlab`` command. Each command (or family of commands) is one module of this package with a
``register(subparsers)`` that adds its parser and sets its handler; this module only assembles them, parses, and
turns a user mistake into one line and exit code 2.

Commands that take ``key=value`` words (run, reproduce, sweep) name the argument that collects them
(``set_defaults(trailing=...)``), so such words may also come after the options.
"""

from __future__ import annotations

import argparse
import signal
import sys
from contextlib import contextmanager

from .._version import __version__
from ..cpus import fit_torch_threads
from ..errors import FeatlabError
from ..text import safe_streams
from ..utils import silence_stdout
from . import catalogue, data, records, reproduce, run, stability, sweep

# the order of `featlab --help`: find an experiment, run it, read its records, reproduce a paper, sweep, stability,
# data
COMMANDS = (catalogue, run, records, reproduce, sweep, stability, data)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="featlab", description="Reproduce and check feature-learning theory papers.")
    p.add_argument("--version", action="version", version=f"featlab {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    for module in COMMANDS:
        module.register(sub)
    return p


def _dispatch(argv: list[str] | None) -> int:
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
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (a scheduler, `kill`): the same line, its own exit code
        print("featlab: interrupted; completed runs are kept, the unfinished one will be redone", file=sys.stderr)
        return 128 + (e.signum if isinstance(e, Terminated) else signal.SIGINT)


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
    fit_torch_threads()  # torch counts the machine's cores: no more threads than this process may use
    try:
        with _sigterm_as_interrupt():
            code = _dispatch(argv)
        sys.stdout.flush()  # here, not at exit: a closed pipe (`featlab list | head -1`) is then handled below
        return code
    except BrokenPipeError:  # the reader left: end quietly, no traceback, nothing more on the closed pipe
        silence_stdout()
        return code
