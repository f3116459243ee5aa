"""`featlab --help` and `--version` answer without importing torch (well under a second), the overview's help text is
the commands' own, and one version string is used everywhere (the package, `--version`, the changelog's top entry)."""

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from featlab import __version__
from featlab.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[1]
_NO_TORCH = """
import sys
from featlab.cli import main
try:
    main({argv!r})
except SystemExit as e:
    code = e.code
assert "torch" not in sys.modules, "torch imported"
print("code", code)
"""


@pytest.mark.parametrize("argv", [["--version"], ["--help"], [], ["no-such-command"]])
def test_help_and_version_never_import_torch(argv):
    out = subprocess.run([sys.executable, "-c", _NO_TORCH.format(argv=argv)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("code 0" if argv and argv[0].startswith("--") else "code 2")


def test_the_overview_lists_each_command_with_its_own_help():
    full = build_parser()
    sub = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
    own = {c.dest: c.help for c in sub._choices_actions}
    table = {name: text for _, commands in COMMANDS for name, text in commands.items()}
    assert table == own


def test_one_version_string_everywhere(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"featlab {__version__}"
    top = re.search(r"^## .*?(\d+\.\d+\.\d+)", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert top and top.group(1) == __version__, "the changelog's top entry and featlab.__version__ differ"
