"""A SpeechBrain hyperparams.yaml read as inert data: no tag of it ever names, imports or runs Python.

HyperPyYAML turns `!new:pkg.Class`, `!apply:func`, `!name:func` into objects and calls while it loads, so
loading a model folder with it runs whatever the folder's author wrote (`!apply:os.system [...]`). Here
YAML's safe loader reads the file and every tag becomes a `Tagged` record (tag, value, line); the builder
(each plugin's own, with its own allow-list) then decides which records it turns into speechbrain modules.
`HyperParams.resolve` replaces `!ref <name>` references by plain values only (numbers, strings, lists); a
builder that shares built modules by reference (vpeval_speech's Graph) resolves them itself with `REF`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from vpeval.errors import MissingModelError

REF = re.compile(r"<([^<>]+)>")
MAX_BYTES = 2_000_000  # VPC's files are a few kB
MAX_VALUES = 200_000  # values after YAML aliases are expanded: an alias "bomb" must not hang the resolver
_KEY = re.compile(r"^([^\[\]]+)((?:\[[^\[\]]+\])*)$")
PLAIN = (int, float, bool, str, type(None))


@dataclass(frozen=True)
class Tagged:
    """A tagged YAML node kept as data: tag without its "!" (`new:speechbrain.lobes.features.Fbank`, `ref`)."""

    tag: str
    value: Any
    line: int  # 1-based line of the node in the file
    key_lines: dict[str, int] = field(default_factory=dict, compare=False)  # mapping value: line of each key

    @property
    def kind(self) -> str:
        """`new`, `name`, `apply`, `ref`, ... (the part before the colon)."""
        return self.tag.split(":", 1)[0]

    @property
    def target(self) -> str:
        """The dotted name after the colon (`speechbrain.lobes.features.Fbank`), or ""."""
        return self.tag.split(":", 1)[1] if ":" in self.tag else ""


class _InertLoader(yaml.SafeLoader):
    """SafeLoader that keeps every `!tag` as a Tagged record instead of refusing or running it."""


def _construct_tagged(loader: _InertLoader, suffix: str, node: yaml.Node) -> Tagged:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        lines = {str(k.value): k.start_mark.line + 1 for k, _ in node.value if isinstance(k, yaml.ScalarNode)}
        return Tagged(suffix, loader.construct_mapping(node, deep=True), line, lines)
    if isinstance(node, yaml.SequenceNode):
        return Tagged(suffix, loader.construct_sequence(node, deep=True), line)
    return Tagged(suffix, loader.construct_scalar(node), line)


_InertLoader.add_multi_constructor("!", _construct_tagged)


@dataclass
class HyperParams:
    """The top-level mapping of a hyperparams.yaml, tags inert, with the line of each top-level key."""

    path: Path
    values: dict[str, Any]
    lines: dict[str, int]

    @classmethod
    def read(cls, path: Path) -> HyperParams:
        if not path.is_file():
            raise MissingModelError(f"{path} is missing; a SpeechBrain model folder holds hyperparams.yaml.")
        if path.stat().st_size > MAX_BYTES:
            raise MissingModelError(
                f"{path} is over {MAX_BYTES // 1_000_000} MB; a SpeechBrain hyperparams.yaml is a few kB."
            )
        text = path.read_text(encoding="utf-8", errors="replace")
        loader = _InertLoader(text)
        try:
            root = loader.get_single_node()  # one parse: the nodes give the lines, then the values
            if root is not None and _expanded_size(root, {}) > MAX_VALUES:
                raise MissingModelError(
                    f"{path} expands to more than {MAX_VALUES} values through its YAML aliases; give the plain file."
                )
            values = loader.construct_document(root) if root is not None else None
        except yaml.YAMLError as exc:
            raise MissingModelError(f"{path} is not readable YAML ({first_line(exc)}).") from None
        finally:
            loader.dispose()
        if not isinstance(values, dict) or not isinstance(root, yaml.MappingNode):
            raise MissingModelError(f"{path} is not a mapping of hyper-parameters (SpeechBrain's hyperparams.yaml).")
        lines = {str(k.value): k.start_mark.line + 1 for k, _ in root.value if isinstance(k, yaml.ScalarNode)}
        return cls(path, {str(k): v for k, v in values.items()}, lines)

    def where(self, key: str, line: int | None = None) -> str:
        return f"{self.path}, line {line or self.lines.get(key, 1)}"

    def resolve(self, value: Any, where: str, seen: tuple[str, ...] = ()) -> Any:
        """`value` with every `!ref` replaced by the plain value it names (recursively, in lists and
        mappings); any other tag is left as it is for the builder to accept or refuse."""
        if isinstance(value, Tagged) and value.kind == "ref":
            return self._resolve_ref(value, where, seen)
        if isinstance(value, list):
            return [self.resolve(v, where, seen) for v in value]
        if isinstance(value, dict):
            return {k: self.resolve(v, where, seen) for k, v in value.items()}
        return value

    def _resolve_ref(self, ref: Tagged, where: str, seen: tuple[str, ...]) -> Any:
        text = str(ref.value).strip()
        names = REF.findall(text)
        if not names:
            raise MissingModelError(f"{where}: `!ref {text}` names no <key>; write !ref <key>.")
        whole = REF.fullmatch(text)
        resolved = [self._lookup(name, where, seen) for name in names]
        if whole:
            return resolved[0]
        for name, value in zip(names, resolved):
            if isinstance(value, (list, dict)):
                raise MissingModelError(f"{where}: `!ref {text}` puts the list or mapping <{name}> into text.")
        # HyperPyYAML would also evaluate arithmetic here (`!ref <a> * 2`); vpeval never evaluates
        # expressions, so such a value stays text and the builder refuses it by its type.
        return REF.sub(lambda m: str(resolved[names.index(m.group(1))]), text)

    def _lookup(self, name: str, where: str, seen: tuple[str, ...]) -> Any:
        match = _KEY.match(name.strip())
        if match is None:
            raise MissingModelError(f"{where}: the reference <{name}> is not a key name.")
        top, rest = match.group(1).strip(), re.findall(r"\[([^\[\]]+)\]", match.group(2))
        if top in seen:
            raise MissingModelError(f"{where}: the reference <{name}> refers to itself through {' -> '.join(seen)}.")
        if top not in self.values:
            raise MissingModelError(f"{where}: the reference <{name}> names no top-level key of {self.path.name}.")
        value = self.resolve(self.values[top], self.where(top), (*seen, top))
        for key in rest:
            if not isinstance(value, dict) or key not in value:
                raise MissingModelError(f"{where}: the reference <{name}> has no [{key}].")
            value = value[key]
        if not _plain(value):
            raise MissingModelError(
                f"{where}: the reference <{name}> is an object ({_describe(value)}), and only references to "
                "plain values (numbers, text, lists) are resolved; write the value itself."
            )
        return value


def _expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """How many values the node stands for once aliases are expanded (each shared node counted once per use,
    computed once: linear in the file, however deep the aliases nest)."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    sizes[id(node)] = 1  # a node that contains itself (a recursive alias) counts once
    if isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, sizes) + _expanded_size(v, sizes) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(v, sizes) for v in node.value)
    else:
        size = 1
    sizes[id(node)] = min(size, MAX_VALUES + 1)
    return sizes[id(node)]


def tags(value: Any, seen: set[int] | None = None) -> Iterator[Tagged]:
    """Every Tagged record in a value; each container once, so YAML aliases (`*a` repeated) cannot blow the walk up."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, Tagged):
        yield value
        yield from tags(value.value, seen)
    elif isinstance(value, dict):
        for v in value.values():
            yield from tags(v, seen)
    elif isinstance(value, list):
        for v in value:
            yield from tags(v, seen)


def _plain(value: Any) -> bool:
    if isinstance(value, PLAIN):
        return True
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(_plain(v) for v in value.values())
    return False


def _describe(value: Any) -> str:
    if isinstance(value, Tagged):
        return f"!{value.tag}"
    return type(value).__name__


def first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return "; ".join(lines[:2])[:200] if lines else type(exc).__name__
