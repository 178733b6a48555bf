"""Safe YAML loading that remembers the line of every value, so errors can point at it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from vpeval.errors import ConfigError
from vpeval.safepath import regular_file

Loc = tuple[str | int, ...]


@dataclass
class YamlDocument:
    path: str
    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)  # 1-based line of each value (and each key)

    def line_of(self, loc: Loc) -> int | None:
        """The line of the deepest known location on the way to `loc`."""
        loc = tuple(loc)
        while True:
            if loc in self.lines:
                return self.lines[loc]
            if not loc:
                return None
            loc = loc[:-1]

    def where(self, loc: Loc) -> str:
        line = self.line_of(loc)
        dotted = format_loc(loc)
        place = f"{self.path}, line {line}" if line else self.path
        return f"{place} ({dotted})" if dotted else place


def format_loc(loc: Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def load_yaml(path: str | Path) -> YamlDocument:
    """Parse with the safe loader only: YAML tags that name Python objects are errors.

    The path is judged before it is opened: a FIFO or /dev/zero would hang, a folder or a huge file is no
    experiment.
    """
    path = regular_file(path, "Experiment file", max_bytes=MAX_FILE_BYTES, error=ConfigError)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}, line {line}: the file is not UTF-8 text (byte {exc.object[exc.start]:#04x}); save it as UTF-8."
        ) from None
    except OSError as exc:
        raise ConfigError(f"Experiment file {path} cannot be read: {exc.strerror or exc}.") from None
    return parse_yaml(text, str(path))


# Experiment files hold hundreds of values in a few KB. Each bound has a sentence of its own:
# - MAX_FILE_BYTES, judged before the file is read, and MAX_WRITTEN_VALUES, the values the file spells
#   out, counted while composing (so a file of a million values stops early, not after minutes);
# - MAX_ALIAS_VALUES, the values aliases add: an alias shares one node, so a few hundred bytes of nested
#   aliases ("billion laughs") would expand to billions of values. The composed graph is measured, each
#   node once, before anything is expanded; a long list written out in full is no alias bomb;
# - MAX_DEPTH, the nesting.
MAX_FILE_BYTES = 4 << 20
MAX_WRITTEN_VALUES = 200_000  # twice a 100,000-item list; pure-Python composing takes seconds per 100,000
MAX_ALIAS_VALUES = 100_000
MAX_DEPTH = 64


def parse_yaml(text: str, name: str = "<string>") -> YamlDocument:
    loader = None
    try:
        loader = _CountingLoader(text)  # its reader already checks the characters
        node = loader.get_single_node()
    except _TooManyValues as exc:
        raise ConfigError(
            f"{name}, line {exc.line}: the file holds more than {MAX_WRITTEN_VALUES} values, where an experiment "
            "holds hundreds; check that this is the right file, and keep long lists (utterances, trials) in data files."
        ) from None
    except yaml.reader.ReaderError as exc:  # a control character such as NUL, or a lone surrogate
        line = text[: exc.position].count("\n") + 1
        raise ConfigError(
            f"{name}, line {line}: the control character U+{exc.character:04X} is not allowed in YAML; delete it."
        ) from None
    except RecursionError:
        raise ConfigError(f"{name}: the YAML nests deeper than Python can read; flatten it.") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{name}, line {mark.line + 1}" if mark else name
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{where}: invalid YAML: {problem}; fix the syntax there.") from None
    finally:
        if loader is not None:
            loader.dispose()
    doc = YamlDocument(name, None)
    if node is None:
        raise ConfigError(f"{name}: the file is empty; an experiment needs at least `data` and `attackers`.")
    _measure(node, name, {}, set())
    doc.data = _Builder(doc, name).build(node, ())
    return doc


class _TooManyValues(Exception):
    def __init__(self, line: int):
        self.line = line


class _CountingLoader(yaml.SafeLoader):
    """The safe loader, counting the values written out (an alias adds none) and stopping past the bound."""

    written = 0

    def compose_node(self, parent, index):
        if not self.check_event(yaml.AliasEvent):
            self.written += 1
            if self.written > MAX_WRITTEN_VALUES:
                raise _TooManyValues(self.peek_event().start_mark.line + 1)
        return super().compose_node(parent, index)


def _measure(
    node: yaml.Node, name: str, memo: dict[int, tuple[int, int, int]], open_nodes: set[int]
) -> tuple[int, int, int]:
    """(values, depth, added) of `node` once every alias is expanded: `added` counts the values its
    aliases add to what the file spells out. ConfigError past the bounds or on a cycle.

    Each node is measured once (memo), so counting billions of expanded values takes microseconds; a
    node met again (through an alias) adds all its values, a node met the first time only what its own
    aliases add. Nodes are measured children first, so the value named is the innermost culprit.
    """
    key = id(node)
    if key in memo:
        return memo[key]
    line = node.start_mark.line + 1
    if key in open_nodes:
        raise ConfigError(f"{name}, line {line}: an alias refers to the value that contains it; write the value out.")
    open_nodes.add(key)
    children = (
        [part for pair in node.value for part in pair]
        if isinstance(node, yaml.MappingNode)
        else (node.value if isinstance(node, yaml.SequenceNode) else [])
    )
    values, depth, added = 1, 0, 0
    for child in children:
        again = id(child) in memo
        child_values, child_depth, child_added = _measure(child, name, memo, open_nodes)
        values, depth = values + child_values, max(depth, child_depth + 1)
        added += child_values if again else child_added
        if added > MAX_ALIAS_VALUES:
            raise ConfigError(
                f"{name}, line {line}: this value's aliases expand to more than {MAX_ALIAS_VALUES} values (aliases "
                "`*name` inside aliases multiply); share settings with fewer nested aliases."
            )
        if depth > MAX_DEPTH:
            raise ConfigError(f"{name}, line {line}: values nest more than {MAX_DEPTH} levels deep; flatten them.")
    open_nodes.discard(key)
    memo[key] = (values, depth, added)
    return values, depth, added


MERGE_TAG = "tag:yaml.org,2002:merge"
SAFE_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("map", "seq", "str", "int", "float", "bool", "null", "timestamp")}


class _Builder:
    """Turns composed nodes (already measured: finite, bounded) into plain values with their lines."""

    def __init__(self, doc: YamlDocument, name: str):
        self.doc, self.name = doc, name

    def build(self, node: yaml.Node, loc: Loc) -> Any:
        doc, name = self.doc, self.name
        doc.lines.setdefault(loc, node.start_mark.line + 1)
        if node.tag not in SAFE_TAGS:
            raise ConfigError(
                f"{name}, line {node.start_mark.line + 1}: the tag {node.tag} is not allowed; experiment files "
                "hold plain values and name plugins with `use:`, never Python objects."
            )
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            explicit: set[str] = set()
            for key_node, value_node in node.value:
                if key_node.tag == MERGE_TAG:  # `<<: *anchor`: the anchor's keys first, explicit keys override
                    merged = (
                        [value_node] if isinstance(value_node, yaml.MappingNode) else getattr(value_node, "value", [])
                    )
                    if not isinstance(merged, list):
                        merged = [value_node]
                    for source in merged:
                        if not isinstance(source, yaml.MappingNode):
                            raise ConfigError(
                                f"{name}, line {key_node.start_mark.line + 1}: `<<` merges mappings only."
                            )
                        for key, value in self.build(source, loc).items():
                            if key not in explicit:
                                out.setdefault(key, value)
                    continue
                key = _scalar(key_node, loc, name)
                if not isinstance(key, (str, int, float, bool)) or key is None:
                    raise ConfigError(
                        f"{name}, line {key_node.start_mark.line + 1}: a mapping key must be a plain name."
                    )
                key = str(key)
                if key in explicit:
                    raise ConfigError(
                        f"{name}, line {key_node.start_mark.line + 1}: the key '{key}' appears twice; keep one."
                    )
                explicit.add(key)
                doc.lines[loc + (key,)] = key_node.start_mark.line + 1
                out[key] = self.build(value_node, loc + (key,))
                doc.lines[loc + (key,)] = key_node.start_mark.line + 1
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(child, loc + (i,)) for i, child in enumerate(node.value)]
        return _scalar(node, loc, name)


_SCALARS = yaml.constructor.SafeConstructor()  # scalar constructors keep no state: one for all values
SCALAR_TAGS = SAFE_TAGS - {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}


def _scalar(node: yaml.Node, loc: Loc, name: str) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        raise ConfigError(f"{name}, line {node.start_mark.line + 1}: a mapping key must be a plain name.")
    if node.tag not in SCALAR_TAGS:
        raise ConfigError(
            f"{name}, line {node.start_mark.line + 1}: the tag {node.tag} is not allowed; experiment files "
            "hold plain values and name plugins with `use:`, never Python objects."
        )
    try:
        return _SCALARS.yaml_constructors[node.tag](_SCALARS, node)
    except (ValueError, KeyError, AttributeError, TypeError) as exc:
        # a date such as 2024-13-45, an integer of thousands of digits, `!!bool maybe`
        if node.tag.endswith(":int") and "digits" in str(exc):  # quoted, it would be refused as no integer
            raise ConfigError(
                f"{name}, line {node.start_mark.line + 1}: the number {node.value[:20]}... has {len(node.value)} "
                "digits, far beyond any field's upper bound; write a smaller number."
            ) from None
        reason = exc if isinstance(exc, ValueError) else f"not a {node.tag.rsplit(':', 1)[-1]}"
        raise ConfigError(
            f"{name}, line {node.start_mark.line + 1}: the value {node.value[:40]!r} cannot be read ({reason}); "
            "quote it to keep it as text."
        ) from None
