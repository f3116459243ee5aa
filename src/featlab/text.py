"""Text for people, in one style: the one number formatter, the plain-text table every command prints, and the
ASCII spellings used where the output stream cannot encode δ, √, µ (an ASCII-only terminal or log)."""

from __future__ import annotations

import codecs
import io
import json
import sys
import textwrap
import unicodedata
from typing import Any, TextIO


def fmt_value(v: Any) -> str:
    """A value as every command and page prints it: 4 significant digits, scientific outside [1e-3, 1e4), nan as
    ``nan``, None as blank, lists and mappings as JSON."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        if v != v:
            return "nan"
        return f"{v:.4g}" if v == 0 or 1e-3 <= abs(v) < 1e4 else f"{v:.3e}"
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return str(v)


def table(rows: list[list[str]], header: list[str], widths: list[int] | None = None) -> str:
    """A text table; cells longer than their column width are wrapped."""
    cols = len(header)
    widths = widths or [max(len(str(r[i])) for r in rows + [header]) for i in range(cols)]
    out: list[str] = []

    def emit(cells):
        wrapped = [textwrap.wrap(str(c), w) or [""] for c, w in zip(cells, widths)]
        for line in range(max(len(w) for w in wrapped)):
            out.append("  ".join((w[line] if line < len(w) else "").ljust(wd) for w, wd in zip(wrapped, widths)))

    emit(header)
    out.append("  ".join("-" * w for w in widths))
    for r in rows:
        emit(r)
    return "\n".join(out)


# ------------------------------------------------------------------------------------------ any terminal
ASCII_ERRORS = "featlab-ascii"  # the codec error handler: a character the stream cannot encode → its ASCII spelling
_SPELL = {"−": "-", "·": "*", "√": "sqrt", "‖": "||", "µ": "u", "≤": "<=", "≥": ">=", "×": "x", "§": "S", "→": "->",
          "←": "<-", "—": "--", "–": "-", "≈": "~", "ℓ": "l", "∈": "in", "∉": "not in", "±": "+-", "≫": ">>",
          "≪": "<<", "…": "...", "½": "1/2", "✗": "X", "✓": "ok", "≠": "!=", "∞": "inf", "∝": "~", "∂": "d",
          "∇": "grad", "⇔": "<=>", "↔": "<->", "↦": "|->", "∼": "~", "≳": ">~", "≲": "<~", "°": "deg", "≡": "==",
          "⌊": "floor(", "⌋": ")", "⌈": "ceil(", "⌉": ")", "⊥": "_|_", "⟂": "_|_", "∪": "u", "⊂": "in", "ᵀ": "^T",
          "λ": "lambda", "Λ": "Lambda", "“": '"', "”": '"', "‘": "'", "’": "'", "█": "#", "▏": "|", "•": "*"}


def _spell(ch: str) -> str:
    if ch in _SPELL:
        return _SPELL[ch]
    name = unicodedata.name(ch, "")
    if name.startswith("GREEK SMALL LETTER ") or name.startswith("GREEK CAPITAL LETTER "):
        word = name.rsplit(" ", 1)[-1].lower()
        return word if "SMALL" in name else word.capitalize()
    plain = unicodedata.normalize("NFKD", ch)
    plain = "".join(_SPELL.get(c, c) for c in plain if not unicodedata.combining(c))  # é → e, ⁻ → − → -
    return plain if plain.isascii() and plain else "?"


def ascii_spelling(text: str) -> str:
    """``text`` in ASCII: δ → delta, √ → sqrt, µ → u, ≥ → >=, d⁻¹ → d^-1; anything else unknown → ?."""
    out, sup = [], False
    for ch in text:
        if ch.isascii():
            out.append(ch)
            sup = False
            continue
        is_sup = unicodedata.name(ch, "").startswith("SUPERSCRIPT")
        out.append(("^" if is_sup and not sup else "") + _spell(ch))
        sup = is_sup
    return "".join(out)


def _handler(err: UnicodeError) -> tuple[str, int]:
    if not isinstance(err, UnicodeEncodeError):
        raise err
    return ascii_spelling(err.object[err.start:err.end]), err.end


def _register() -> None:
    try:
        codecs.lookup_error(ASCII_ERRORS)
    except LookupError:
        codecs.register_error(ASCII_ERRORS, _handler)


def safe_streams() -> None:
    """The CLI's start: stdout and stderr that cannot encode every character (not UTF) spell the others in ASCII
    instead of raising UnicodeEncodeError, so no command (and no run, part-way through) dies of its own printing."""
    _register()
    for stream in (sys.stdout, sys.stderr):
        enc = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
        if isinstance(stream, io.TextIOWrapper) and not enc.startswith("utf"):
            try:
                stream.reconfigure(errors=ASCII_ERRORS)
            except (ValueError, OSError, io.UnsupportedOperation):  # detached or closed: nothing to print there
                pass


def safe_print(text: str, file: TextIO | None = None, flush: bool = True) -> None:
    """``print(text)`` that never raises UnicodeEncodeError: library code (``featlab.run`` from a script whose
    stream is ASCII-only) prints the characters it cannot encode in their ASCII spelling."""
    out = file if file is not None else sys.stdout
    try:
        print(text, file=out, flush=flush)
    except UnicodeEncodeError:  # nothing was written: TextIOWrapper encodes the whole text before writing
        _register()
        enc = getattr(out, "encoding", None) or "ascii"
        print(text.encode(enc, errors=ASCII_ERRORS).decode(enc, errors="replace"), file=out, flush=flush)
