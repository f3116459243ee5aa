"""YAML in, with limits: what featlab reads from a config file or a ``key=value`` word.

``yaml.safe_load`` executes nothing, but it trusts the input's size: an alias bomb of a few hundred bytes (each
level ten references to the one before) expands to a billion values, and a 20 MB list takes minutes and gigabytes.
A config is small (a few dozen fields), so :func:`load` refuses

* a text over :data:`MAX_BYTES`,
* a document whose values, with every alias expanded, number more than :data:`MAX_NODES` (counted on the parsed
  node graph, each node once, before anything is built), or that refers to itself (a recursive alias),
* brackets nested more than :data:`MAX_DEPTH` levels (checked on the text, before the parser recurses),
* a key given twice in one mapping (YAML keeps the last one silently),
* a tag other than YAML's plain types (``!!python/object``, ``!custom``): named as such.

It also reads ``1e9`` and ``1e-4`` as numbers (YAML 1.1 wants ``1.0e+9``; researchers write ``1e9``).
"""

from __future__ import annotations

import itertools
import re
import typing
from typing import Any

import yaml

MAX_BYTES = 1 << 20  # 1 MiB: a config of every field of every experiment is a few kB
SMALL = "a config is small (a few dozen fields, a few kB): write each field's value out once"
MAX_NODES = 100_000  # values after alias expansion: a list of seeds is hundreds, a grid of radii thousands
MAX_DEPTH = 100  # levels of [ ] / { }: a config nests two or three


class YamlRefused(yaml.YAMLError):
    """A YAML text featlab does not load: ``reason`` says why in words that complete "the config ...",
    ``line`` (1-based) where, when known, and ``fix`` what to do."""

    def __init__(self, reason: str, line: int | None = None, fix: str = ""):
        super().__init__(reason)
        self.reason, self.line, self.fix = reason, line, fix


# libyaml's parser where PyYAML has it (its wheels do): a 0.9 MB list of 450,000 numbers is parsed and refused in 2 s
# on the loaded 2-core machine, where the pure Python parser took 17 s; construction (safe, Python) is the same
_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LimitedLoader(_BASE):  # type: ignore[valid-type, misc]  # either SafeLoader
    """safe_load that refuses a key given twice in one mapping, and reads 1e9 as a number."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base`: keys it brings may be overridden
                    continue
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, typing.Hashable) and key in seen:
                    raise YamlRefused(f"sets {str(key)!r} twice", key_node.start_mark.line + 1, "keep one of them")
                if isinstance(key, typing.Hashable):
                    seen.add(key)
        return super().construct_mapping(node, deep=deep)


_LimitedLoader.add_implicit_resolver(  # YAML 1.2's floats without a dot: 1e9, -2E-3 (a copy: SafeLoader unchanged)
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$"), list("-+0123456789"))


def expanded_size(node: yaml.Node, budget: int = MAX_NODES) -> int:
    """How many values the node stands for once every alias is expanded (each distinct node visited once; a node
    reached again through an alias counts its whole subtree again). Raises YamlRefused above ``budget`` or on a
    node that contains itself."""
    sizes: dict[int, int] = {}
    busy: set[int] = set()

    def size(n: yaml.Node) -> int:
        key = id(n)
        if key in sizes:
            return sizes[key]
        if key in busy:
            raise YamlRefused("refers to itself (a recursive alias)", n.start_mark.line + 1, "write the value out")
        busy.add(key)
        children = [c for pair in n.value for c in pair] if isinstance(n, yaml.MappingNode) else \
            n.value if isinstance(n, yaml.SequenceNode) else []
        total = 1
        for c in children:
            total += size(c)
            if total > budget:
                raise YamlRefused(f"holds more than {budget:,} values (every alias expanded)",
                                  n.start_mark.line + 1, SMALL)
        busy.discard(key)
        sizes[key] = total
        return total

    return size(node)


def flow_depth(text: str) -> int:
    """The deepest nesting of ``[`` / ``{`` in ``text`` (brackets inside quoted text counted too: an upper bound)."""
    steps = (1 if c in "[{" else -1 for c in re.sub(r"[^\[\]{}]+", "", text))
    return max(itertools.accumulate(steps), default=0)


def load(text: str) -> Any:
    """The YAML document in ``text`` (None when empty), loaded with the limits above."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise YamlRefused(f"is larger than {MAX_BYTES // 2**20} MiB", fix=SMALL)
    if flow_depth(text) > MAX_DEPTH:  # before libyaml, whose parser recurses in C (a stack overflow, no error)
        raise YamlRefused(f"is nested more than {MAX_DEPTH} levels deep", fix=SMALL)
    loader = _LimitedLoader(text)
    try:
        return _load_node(loader)
    except RecursionError:
        raise YamlRefused("is nested too deeply (thousands of levels)", fix=SMALL) from None
    finally:
        loader.dispose()


def _load_node(loader: _LimitedLoader) -> Any:
    node = loader.get_single_node()
    if node is None:
        return None
    expanded_size(node)
    try:
        return loader.construct_document(node)
    except yaml.constructor.ConstructorError as e:
        tag = re.search(r"tag '([^']*)'", str(e.problem or ""))
        if tag is None:
            raise
        line = e.problem_mark.line + 1 if e.problem_mark is not None else None
        name = tag.group(1).replace("tag:yaml.org,2002:", "!!")
        raise YamlRefused(f"uses the tag {name}, which featlab refuses (a config holds plain values: numbers, text, "
                          f"lists and mappings)", line, "remove the tag") from None
