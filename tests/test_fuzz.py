"""Fuzzing the two inputs users write: experiment files (`vpeval validate`) and score files
(`vpeval metrics --scores`). Seeded mutations of valid files; each must give exit 0, or exit 2 with error
lines that name the file and no traceback. Validation only, nothing runs, so the suite takes seconds.

Mutations: wrong types, out-of-range numbers, NaN and infinities, unknown keys and plugin names, deleted
keys, deep nesting, random bytes, truncation, aliases (bombs, self-references, bad merges); for score
files: mutated lines, columns and values. A failure lists each input that broke the promise.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from vpeval.cli import main

ROOT = Path(__file__).resolve().parents[1]
SEED = 20261130
EXPERIMENT_CASES = 250
SCORE_CASES = 150

# Small valid experiments over the shipped plugins, besides the shipped experiment files.
BASES = [
    """\
name: fuzz-a
seed: 1
data:
  corpus: {use: synth, params: {preset: tiny, speakers: 8, utterances: 4}}
  attacker_train_speakers: 0.5
  enroll_share: 0.5
anonymizers:
  - {use: mcadams, params: {alpha_range: [0.5, 0.9]}, level: speaker}
attackers:
  - {use: ecapa, params: {channels: [16, 16, 16, 16, 48], epochs: 2, batch_size: 8, crop_seconds: 0.5}}
  - {use: ge2e, train_on: original}
protocols: [O-O, O-A]
enroll_utterances: [1, 2]
metrics: [eer, {use: min-dcf, params: {p_target: [0.01]}}, {use: linkability, params: {bins: 20}}]
""",
    """\
name: fuzz-b
data:
  corpus: {use: synth, params: {preset: tiny}}
anonymizers:
  - chain: [{use: mcadams, params: {alpha: 0.8}}, mcadams]
attackers:
  - {use: token-probe, frontend: {use: fbank-rvq, params: {codebook_size: 16, frame_rate: 12.5}}}
  - {use: xvector, params: &small {channels: [16, 16, 16, 16, 48], epochs: 2}, train_on: anonymized}
  - {use: xvector, params: {<<: *small, epochs: 3}, label: longer}
metrics: [eer, cllr, min-cllr, zebra]
""",
]
SHIPPED = sorted((ROOT / "experiments").glob("*.yaml"))

ODD_VALUES = [
    None,
    True,
    False,
    0,
    -1,
    -7,
    1,
    2,
    10**12,
    -(10**12),
    10**30,
    0.0,
    -0.0,
    1e-300,
    1e308,
    -1e308,
    math.nan,
    math.inf,
    -math.inf,
    "",
    " ",
    "x",
    "ecapa",
    "O-X",
    "../../x",
    "/",
    "a" * 300,
    "ünï\u202ecode",
    [],
    [1],
    [None],
    ["O-O"],
    {},
    {"use": "eer"},
    {"use": "nonexistent-plugin"},
    {"a": {"b": {"c": 1}}},
]
PLUGIN_NAMES = ["eer", "ecapa", "synth", "mcadams", "nonexistent", "fbank-rvq", "ge2e", "whisper", "Eer", "e e r", ""]


def _leaves(node, path=()):
    """(path, value) of every value in a parsed document, containers included."""
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, path + (i,))


def _set(doc, path, value):
    if not path:
        return value
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return doc


def _delete(doc, path):
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    del parent[path[-1]]
    return doc


def _number_mutation(value, rng):
    return rng.choice(
        [
            value * 10**12,
            -value,
            0,
            -1,
            value + 0.5,
            math.nan,
            math.inf,
            -math.inf,
            10**100,
            value * 1e-12,
            str(value),
            [value],
            2**63,
            -(2**63),
        ]
    )


def mutate_document(doc, rng: random.Random):
    """One structural change of a parsed experiment."""
    paths = list(_leaves(doc))
    path, value = rng.choice(paths)
    op = rng.randrange(8)
    if op == 0:  # a wrong type or an odd value anywhere
        return _set(doc, path, rng.choice(ODD_VALUES))
    if op == 1:  # numbers out of range
        numbers = [(p, v) for p, v in paths if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if numbers:
            path, value = rng.choice(numbers)
            return _set(doc, path, _number_mutation(value, rng))
        return _set(doc, path, math.nan)
    mappings = [(p, v) for p, v in paths if isinstance(v, dict)]
    if op == 2 and mappings:  # an unknown key
        path, mapping = rng.choice(mappings)
        mapping[rng.choice(["colour", "param", "params", "use", "seed", "chains", "<<", "1"])] = rng.choice(ODD_VALUES)
        return doc
    if op == 3 and path:  # a deleted key or list element
        return _delete(doc, path)
    if op == 4:  # another plugin name, known or not
        uses = [p for p, v in paths if p and p[-1] == "use"]
        if uses:
            return _set(doc, rng.choice(uses), rng.choice(PLUGIN_NAMES))
    if op == 5:  # deep nesting
        depth = rng.choice([10, 60, 200])
        nested = value
        for _ in range(depth):
            nested = [nested] if rng.random() < 0.5 else {"x": nested}
        return _set(doc, path, nested)
    if op == 6 and isinstance(value, list) and value:  # a list emptied or repeated
        return _set(doc, path, rng.choice([[], value * 3, value[::-1]]))
    return _set(doc, path, rng.choice(ODD_VALUES))


def mutate_text(text: str, rng: random.Random) -> bytes:
    """A change to the bytes of a file: what a typo, a bad copy or an attack gives."""
    data = text.encode()
    op = rng.randrange(9)
    at = rng.randrange(len(data) + 1)
    if op == 0:  # random bytes, control characters included
        return data[:at] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + data[at:]
    if op == 1:
        return data[:at]  # truncated
    if op == 2:
        return data[:at] + rng.choice([b"\x00", b"\xff\xfe", b"\x1b[31m", b"\t", b"\r", "\u2028".encode()]) + data[at:]
    if op == 3:  # a line doubled, dropped or indented differently
        lines = text.splitlines(keepends=True)
        i = rng.randrange(len(lines))
        choice = rng.randrange(3)
        lines[i : i + 1] = [lines[i]] * 2 if choice == 0 else [] if choice == 1 else ["   " + lines[i]]
        return "".join(lines).encode()
    if op == 4:  # an alias bomb next to the experiment
        levels, width = rng.randint(2, 9), rng.randint(2, 12)
        bomb = ["x0: &x0 [lol]"] + [
            f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * width) + "]" for i in range(1, levels + 1)
        ]
        return (text + "\n".join(bomb) + "\n").encode()
    if op == 5:  # self-references and merges of the wrong kind
        return (
            text
            + rng.choice(
                [
                    "loop: &l [*l]\n",
                    "m: {<<: *nothing}\n",
                    "m: &s 3\nn: {<<: *s}\n",
                    "m: &s [1]\nn: {<<: [*s]}\n",
                    "m: {<<: {a: 1}, <<: {b: 2}}\n",
                ]
            )
        ).encode()
    if op == 6:  # tags
        return (
            text
            + rng.choice(
                [
                    "x: !!python/object/apply:os.system [true]\n",
                    "x: !!binary aGk=\n",
                    "x: !custom 3\n",
                    "x: !!set {a, b}\n",
                    "x: 2024-13-45\n",
                ]
            )
        ).encode()
    if op == 7:  # several documents, a top-level list, an empty file
        return rng.choice(
            [text + "---\nname: two\n", "- " + text.replace("\n", "\n  "), "", "# only a comment\n"]
        ).encode()
    return text.replace(":", rng.choice([" :", "::", ":\t"]), 1).encode()


def experiment_inputs():
    rng = random.Random(SEED)
    bases = BASES + [p.read_text() for p in SHIPPED]
    for case in range(EXPERIMENT_CASES):
        text = rng.choice(bases)
        if case % 3 == 2:
            yield mutate_text(text, rng)
            continue
        doc = yaml.safe_load(text)
        for _ in range(rng.choice([1, 1, 2, 3])):
            doc = mutate_document(doc, rng)
        yield _dump_deep(doc).encode()


def _dump_deep(doc) -> str:
    """YAML text of a mutated document; the 200-level nesting mutation inside an already nested spot is
    deeper than PyYAML's recursive dumper reaches at Python's default recursion limit."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))
    try:
        return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    finally:
        sys.setrecursionlimit(limit)


def score_base(rng: random.Random) -> list[list[str]]:
    rows = []
    for e in range(6):
        for t in range(8):
            target = rng.random() < 0.4
            score = rng.gauss(2.0 if target else -1.0, 1.0)
            rows.append(
                [
                    f"spk{e}",
                    f"utt{e}_{t}" if target else f"utt{(e + 1) % 6}_{t}",
                    f"{score:.4f}",
                    "target" if target else "nontarget",
                    "f" if e % 2 else "m",
                ]
            )
    return rows


def mutate_scores(rows: list[list[str]], rng: random.Random) -> bytes:
    op = rng.randrange(10)
    i = rng.randrange(len(rows))
    if op == 0:  # a column dropped or added on one line, or everywhere
        if rng.random() < 0.5:
            rows[i] = rows[i][:-1] if rng.random() < 0.5 else rows[i] + ["extra"]
        else:
            rows = [r[:4] for r in rows]
    elif op == 1:  # odd score values
        rows[i][2] = rng.choice(
            [
                "nan",
                "inf",
                "-inf",
                "1e308",
                "-1e308",
                "1_000",
                "0x10",
                "",
                "１２",
                "1e-400",
                "abc",
                "+.5",
                "5.",
                "1e5000",
                "--1",
            ]
        )
    elif op == 2:  # odd labels or genders
        rows[i][3 if rng.random() < 0.5 else 4] = rng.choice(["TARGET", "tgt", "1", "", "nontarget ", "x"])
    elif op == 3:  # duplicate, contradicting or dropped trials
        choice = rng.randrange(3)
        if choice == 0:
            rows.append(list(rows[i]))
        elif choice == 1:
            rows.append(rows[i][:2] + ["0.5", "nontarget" if rows[i][3] == "target" else "target"] + rows[i][4:])
        else:
            rows = [r for r in rows if r[3] == rows[i][3]]  # one class only
    elif op == 4:
        rows = rows[: rng.randint(0, 3)]  # (almost) nothing
    elif op == 5:  # all scores equal
        for r in rows:
            r[2] = "0.0"
    text = "\n".join(" ".join(r) for r in rows) + "\n"
    if op == 6:
        at = rng.randrange(len(text) + 1)
        return text[:at].encode() + bytes(rng.randrange(256) for _ in range(rng.randint(1, 6))) + text[at:].encode()
    if op == 7:
        return text.replace("\n", "\r\n").encode() if rng.random() < 0.5 else text.replace(" ", "\t").encode()
    if op == 8:
        return b"\xef\xbb\xbf" + text.encode() if rng.random() < 0.5 else text.encode()[: rng.randrange(len(text))]
    if op == 9:
        return ("# comment line\n\n" + text + "\n\n   \n").encode()
    return text.encode()


def score_inputs():
    rng = random.Random(SEED + 1)
    for _ in range(SCORE_CASES):
        yield mutate_scores(score_base(rng), rng)


def _broken_promise(result, path: Path, one_line: bool) -> str | None:
    """What is wrong with how the command ended, or None when it kept the promise."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return f"raised {type(result.exception).__name__}: {result.exception}"
    if result.exit_code == 0:
        return None
    if result.exit_code != 2:
        return f"exit code {result.exit_code}"
    lines = result.stderr.strip().split("\n")  # what a terminal shows as lines
    if not lines or "Traceback" in result.output:
        return f"no sentence or a traceback: {result.output[-300:]!r}"
    if one_line and len(lines) != 1:
        return f"{len(lines)} lines: {result.stderr[:300]!r}"
    if not one_line and not all(str(path) in line for line in lines):
        return f"a line that names no file: {result.stderr[:300]!r}"
    return None


def _check(command: list[str], inputs, tmp_path: Path, name: str, one_line: bool):
    runner = CliRunner()
    failures, exits = [], {0: 0, 2: 0}
    for i, data in enumerate(inputs):
        path = tmp_path / f"{name}-{i}"
        path.write_bytes(data)
        result = runner.invoke(main, command + [str(path)])
        exits[result.exit_code] = exits.get(result.exit_code, 0) + 1
        problem = _broken_promise(result, path, one_line)
        if problem:
            failures.append(f"case {i}: {problem}\n    input: {data[:400]!r}")
    assert not failures, f"{len(failures)} of {i + 1} inputs broke the promise:\n" + "\n".join(failures[:15])
    return exits


@pytest.mark.filterwarnings("ignore")
def test_fuzzed_experiment_files_validate_or_fail_in_sentences(tmp_path):
    exits = _check(["validate"], experiment_inputs(), tmp_path, "exp.yaml", one_line=False)
    assert exits[2] > EXPERIMENT_CASES // 2 and exits[0] > 0  # the mutations reach both outcomes


@pytest.mark.filterwarnings("ignore")
def test_fuzzed_score_files_give_metrics_or_one_sentence(tmp_path):
    exits = _check(["metrics", "--scores"], score_inputs(), tmp_path, "scores.txt", one_line=True)
    assert exits[2] > SCORE_CASES // 4 and exits[0] > 0
