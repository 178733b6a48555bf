"""Safe YAML loading that remembers the line of every value, so errors can point at it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from vpeval.errors import ConfigError

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
    """Parse with the safe loader only: YAML tags that name Python objects are errors."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"Experiment file {path} does not exist.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Experiment file {path} cannot be read: {exc}.") from None
    return parse_yaml(text, str(path))


def parse_yaml(text: str, name: str = "<string>") -> YamlDocument:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{name}, line {mark.line + 1}" if mark else name
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{where}: invalid YAML: {problem}; fix the syntax there.") from None
    doc = YamlDocument(name, None)
    if node is None:
        raise ConfigError(f"{name}: the file is empty; an experiment needs at least `data` and `attackers`.")
    doc.data = _build(node, (), doc, name)
    return doc


MERGE_TAG = "tag:yaml.org,2002:merge"
SAFE_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("map", "seq", "str", "int", "float", "bool", "null", "timestamp")}


def _build(node: yaml.Node, loc: Loc, doc: YamlDocument, name: str) -> Any:
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
                merged = [value_node] if isinstance(value_node, yaml.MappingNode) else getattr(value_node, "value", [])
                for source in merged:
                    if not isinstance(source, yaml.MappingNode):
                        raise ConfigError(f"{name}, line {key_node.start_mark.line + 1}: `<<` merges mappings only.")
                    for key, value in _build(source, loc, doc, name).items():
                        if key not in explicit:
                            out.setdefault(key, value)
                continue
            key = _scalar(key_node, loc, name)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                raise ConfigError(f"{name}, line {key_node.start_mark.line + 1}: a mapping key must be a plain name.")
            key = str(key)
            if key in explicit:
                raise ConfigError(f"{name}, line {key_node.start_mark.line + 1}: the key '{key}' appears twice; keep one.")
            explicit.add(key)
            doc.lines[loc + (key,)] = key_node.start_mark.line + 1
            out[key] = _build(value_node, loc + (key,), doc, name)
            doc.lines[loc + (key,)] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(child, loc + (i,), doc, name) for i, child in enumerate(node.value)]
    return _scalar(node, loc, name)


def _scalar(node: yaml.Node, loc: Loc, name: str) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        raise ConfigError(f"{name}, line {node.start_mark.line + 1}: a mapping key must be a plain name.")
    try:
        return yaml.SafeLoader(" ").construct_object(node)
    except yaml.constructor.ConstructorError:
        raise ConfigError(
            f"{name}, line {node.start_mark.line + 1}: the tag {node.tag} is not allowed; experiment files "
            "hold plain values and name plugins with `use:`, never Python objects."
        ) from None
