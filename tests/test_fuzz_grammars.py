"""Property-based fuzzing (hypothesis) of the inputs users write, generated from each format's grammar.

Experiment files, score files, CSV and JSONL manifests, Kaldi data folders and damaged cache entries.
Every generated input is either valid by construction or carries one known defect:
- a valid input must be accepted with the right answer: the experiment validates, the corpus read equals
  what was written, the EER equals an independent computation, a damaged cache entry is recomputed and
  the run gives the undamaged run's values;
- a defective input must be refused: a UserError (exit 2 on the command line) whose every line names the
  file, no traceback;
- every case ends within a time bound (a hang fails the test instead of hanging the suite).
`derandomize=True`: the same examples on every run, so CI is reproducible; the whole module takes well
under a minute.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import signal
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from vpeval.cli import main
from vpeval.errors import UserError

FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
SECONDS = 20  # per case; valid inputs here take well under a second


@pytest.fixture(autouse=True)
def _settled(settled_modules):
    """Hypothesis looks at every loaded module; see tests/conftest.py."""


class Hang(BaseException):
    """Raised by the alarm: a BaseException, so no error boundary can turn it into a sentence."""


@contextmanager
def time_bound(seconds: float = SECONDS):
    def expired(signum, frame):
        raise Hang(f"the case took over {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def refused_in_sentences(result, path: Path, one_line: bool) -> None:
    """The command ended with exit 2 and sentences naming the file, no traceback."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, (result.exit_code, result.output[-600:])
    assert "Traceback" not in result.output, result.output[-600:]
    lines = result.stderr.strip().splitlines()
    assert lines, "no sentence on stderr"
    if one_line:
        assert len(lines) == 1, result.stderr
    assert all(path.name in line for line in lines), result.stderr


def refused_reading(exc: UserError, path: Path) -> None:
    text = str(exc)
    assert "\n" not in text.strip(), text
    assert path.name in text, text


# -- score files: `enroll test score target|nontarget [f|m]` ----------------------------------------

SCORE_DEFECTS = [
    "nan",
    "inf",
    "underscore",
    "word",
    "huge",
    "short line",
    "long line",
    "label",
    "gender",
    "duplicate pair",
    "nul",
    "latin-1",
    "one class",
    "empty",
]
SCORE_VARIANTS = ["plain", "bom", "crlf", "tabs", "blank lines", "padded"]


@st.composite
def score_files(draw, defect):
    n = draw(st.integers(4, 30))
    gendered = draw(st.booleans())
    values = draw(st.lists(st.floats(-60, 60, allow_nan=False, allow_subnormal=False), min_size=n, max_size=n))
    # both classes in each gender (rows alternate f, m): a metric per gender needs both
    labels = ["target", "target", "nontarget", "nontarget"] + draw(
        st.lists(st.sampled_from(["target", "nontarget"]), min_size=n - 4, max_size=n - 4)
    )
    style = draw(st.sampled_from(["{:.6f}", "{:.4e}", "{!r}", "{:g}"]))
    rows = [
        [f"spk{i % 4}", f"utt{i}", style.format(v), lab] + ([("f", "m")[i % 2]] if gendered else [])
        for i, (v, lab) in enumerate(zip(values, labels))
    ]
    parsed = [float(r[2]) for r in rows]  # what the file says, after formatting
    targets = [r[3] == "target" for r in rows]
    groups = [parsed[0::2], parsed[1::2]] if gendered else [parsed]
    if defect is None and any(len(set(g)) == 1 for g in groups):
        defect = "all scores equal"  # nothing to separate (in a gender): refused with a sentence
    variant = draw(st.sampled_from(SCORE_VARIANTS))
    i = draw(st.integers(0, n - 1))
    if defect in ("nan", "inf", "underscore", "word", "huge"):
        rows[i][2] = {"nan": "nan", "inf": "-inf", "underscore": "1_000", "word": "high", "huge": "1e400"}[defect]
    elif defect == "short line":
        rows[i] = rows[i][:3]
    elif defect == "long line":
        rows[i] = rows[i] + ["extra", "columns"]
    elif defect == "label":
        rows[i][3] = draw(st.sampled_from(["TARGET", "tgt", "1", "non-target"]))
    elif defect == "gender":
        rows[i] = rows[i][:4] + ["x"]
    elif defect == "duplicate pair":
        rows.append(list(rows[i]))
    elif defect == "one class":
        rows = [r for r in rows if r[3] == "target"]
    sep = "\t" if variant == "tabs" else " "
    lines = [sep.join(r) for r in rows]
    if variant == "padded":
        lines = [f"  {line}  " for line in lines]
    if variant == "blank lines":
        lines = ["", *lines, "", "   "]
    text = ("\r\n" if variant == "crlf" else "\n").join(lines) + "\n"
    data = text.encode()
    if variant == "bom":
        data = b"\xef\xbb\xbf" + data
    if defect == "nul":
        data = data.replace(b"utt0", b"ut\x00t0", 1)
    elif defect == "latin-1":
        data = data.replace(b"spk0", b"sp\xe9k0", 1)
    elif defect == "empty":
        data = draw(st.sampled_from([b"", b"\n\n", b"\xef\xbb\xbf"]))
    return data, defect, parsed, targets


def step_eer(scores: np.ndarray, targets: np.ndarray) -> float:
    """SpeechBrain's EER by brute force over every score as threshold: FRR = targets <= t, FAR = non-targets > t,
    the first threshold where |FAR - FRR| is smallest (an independent reference for `eer-step`)."""
    tar, non = scores[targets], scores[~targets]
    best = None
    for t in np.unique(scores):
        frr, far = np.mean(tar <= t), np.mean(non > t)
        gap = abs(far - frr)
        if best is None or gap < best[0] - 1e-15:
            best = (gap, (far + frr) / 2)
    return 100 * best[1]


@pytest.mark.parametrize("defect", [None, *SCORE_DEFECTS])
@settings(FUZZ, max_examples=8)
@given(data=st.data())
def test_score_files_give_the_reference_eer_or_one_sentence(defect, data, tmp_path):
    case = data.draw(score_files(defect))
    data, defect, scores, targets = case
    event(defect or "valid")
    path = tmp_path / "scores.txt"
    path.write_bytes(data)
    with time_bound():
        result = CliRunner().invoke(main, ["metrics", "--scores", str(path), "--metric", "eer-step", "--json"])
    if defect is not None:
        refused_in_sentences(result, path, one_line=True)
        return
    assert result.exit_code == 0, result.output[-600:]
    rows = json.loads(result.stdout)
    overall = next(r for r in rows if r["gender"] == "all")
    assert overall["value"] == pytest.approx(step_eer(np.array(scores), np.array(targets)), abs=1e-9)


# -- manifests (CSV and JSONL) ----------------------------------------------------------------------

SPEAKER_GENDER = {"anna": "f", "bert": "m", "cleo": "f", "dirk": "m"}
TRANSCRIPT = st.text(
    st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp", "Co", "Cn"), blacklist_characters="\ufeff"), max_size=40
).map(str.strip)
MANIFEST_DEFECTS = [
    "duplicate column",
    "duplicate id",
    "two genders",
    "bad gender",
    "latin-1",
    "nul",
    "open quote",
    "empty speaker",
    "extra field",
    "json duplicate key",
    "json list speaker",
    "json not object",
    "json broken",
    "speaker with space",
    "no path column",
]
MANIFEST_VARIANTS = ["plain", "bom", "crlf", "shuffled columns", "upper-case header", "unknown column"]


def write_wavs(folder: Path, names: list[str]) -> None:
    tone = (0.1 * np.sin(np.arange(1600) / 5.0)).astype(np.float32)
    for name in names:
        sf.write(folder / name, tone, 16000, subtype="PCM_16")


CSV_ONLY = ("open quote", "duplicate column", "extra field")


def manifests(defect):
    if defect is not None and defect.startswith("json"):
        formats = ["jsonl"]
    elif defect in CSV_ONLY:
        formats = ["csv"]
    else:
        formats = ["csv", "jsonl"]
    return st.sampled_from(formats).flatmap(lambda fmt: manifest_in(fmt, defect))


@st.composite
def manifest_in(draw, fmt, defect):
    n = draw(st.integers(1, 8))
    rows = []
    for i in range(n):
        speaker = draw(st.sampled_from(sorted(SPEAKER_GENDER)))
        row = {"path": f"u{i}.wav", "speaker": speaker, "id": f"{speaker}-u{i}"}
        if draw(st.booleans()):
            row["gender"] = SPEAKER_GENDER[speaker]
        transcript = draw(TRANSCRIPT)
        if transcript:
            row["transcript"] = transcript
        rows.append(row)
    if not draw(st.booleans()):
        for row in rows:
            del row["id"]
    variant = draw(st.sampled_from(MANIFEST_VARIANTS))
    i = draw(st.integers(0, n - 1))
    expected = [dict(r) for r in rows]
    if defect == "duplicate id":
        rows.append({**rows[i], "path": f"u{n}.wav", "id": rows[i].get("id", f"{rows[i]['speaker']}-u{i}")})
        rows[i]["id"] = rows[-1]["id"]
    elif defect == "two genders":
        rows.append(
            {**rows[i], "path": f"u{n}.wav", "gender": "m" if SPEAKER_GENDER[rows[i]["speaker"]] == "f" else "f"}
        )
        rows[-1].pop("id", None)
        rows[i]["gender"] = SPEAKER_GENDER[rows[i]["speaker"]]
    elif defect == "bad gender":
        rows[i]["gender"] = "x"
    elif defect == "open quote":  # a quote that never closes, before a field csv.writer left unquoted
        rows[i]["transcript"] = "plain words"
    elif defect == "empty speaker":
        rows[i]["speaker"] = ""
    elif defect == "speaker with space":
        rows[i]["speaker"] = "an na"
    elif defect == "no path column":
        for row in rows:
            row["file"] = row.pop("path")
    columns = ["path", "speaker", "id", "gender", "transcript"]
    if variant == "shuffled columns":
        columns = draw(st.permutations(columns))
    if variant == "unknown column":
        columns = [*columns, "notes"]
        for row in rows:
            row["notes"] = "kept out"
    if defect == "no path column":
        columns = ["file" if c == "path" else c for c in columns]
    if fmt == "csv":
        buffer = io.StringIO()
        header = [c.upper() if variant == "upper-case header" else c for c in columns]
        if defect == "duplicate column":
            header = [*header, header[1]]
        writer = csv.writer(buffer, lineterminator="\r\n" if variant == "crlf" else "\n")
        writer.writerow(header)
        for row in rows:
            values = [row.get(c, "") for c in columns]
            if defect == "duplicate column":
                values.append(row.get(columns[1], ""))
            writer.writerow(values)
        text = buffer.getvalue()
        if defect == "extra field":
            lines = text.splitlines(keepends=True)
            lines[1 + i] = lines[1 + i].rstrip("\r\n") + ",surplus\n"
            text = "".join(lines)
        if defect == "open quote":
            lines = text.splitlines(keepends=True)
            lines[1 + i] = '"' + lines[1 + i]
            text = "".join(lines)
    else:
        lines = []
        for row in rows:
            obj = {(k.upper() if variant == "upper-case header" else k): v for k, v in row.items()}
            if defect == "json list speaker" and row is rows[i]:
                key = next(k for k in obj if k.lower() == "speaker")
                obj[key] = [obj[key]]
            line = json.dumps(obj, ensure_ascii=False)
            if defect == "json duplicate key" and row is rows[i]:
                line = line[:-1] + ', "speaker": "zeno"}'
            if defect == "json not object" and row is rows[i]:
                line = json.dumps([obj])
            if defect == "json broken" and row is rows[i]:
                line = line[:-1]
            lines.append(line)
        text = ("\r\n" if variant == "crlf" else "\n").join(lines) + "\n"
    data = text.encode()
    if variant == "bom":
        data = b"\xef\xbb\xbf" + data
    if defect == "latin-1":
        data = data.replace(b"u0.wav", b"u0\xe9.wav", 1)
    if defect == "nul":
        data = data.replace(b"u0.wav", b"u0\x00.wav", 1)
    return fmt, data, defect, expected, [r.get("path", r.get("file")) for r in rows]


@pytest.mark.parametrize("defect", [None, *MANIFEST_DEFECTS])
@settings(FUZZ, max_examples=8)
@given(data=st.data())
def test_manifests_read_as_written_or_refused_in_one_sentence(defect, data):
    case = data.draw(manifests(defect))
    from vpeval.data.manifest import read_manifest

    fmt, data, defect, expected, wavs = case
    event(defect or "valid")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_wavs(folder, sorted(set(wavs)))
        path = folder / f"corpus.{fmt}"
        path.write_bytes(data)
        with time_bound():
            try:
                corpus = read_manifest(path)
            except UserError as exc:
                assert defect is not None, f"a valid manifest was refused: {exc}\n{data[:500]!r}"
                refused_reading(exc, path)
                return
        assert defect is None, f"the defect '{defect}' was not noticed:\n{data[:500]!r}"
        got = {Path(u.path).name: u for u in corpus.utterances}
        assert sorted(got) == sorted(r["path"] for r in expected)
        for row in expected:
            u = got[row["path"]]
            assert u.speaker == row["speaker"]
            assert (u.gender or corpus.gender_of(u.speaker)) in (row.get("gender"), SPEAKER_GENDER[u.speaker])
            assert (u.transcript or None) == row.get("transcript")
            if "id" in row:
                assert u.id == row["id"]
        assert len({u.id for u in corpus.utterances}) == len(corpus.utterances)


# -- Kaldi data folders -------------------------------------------------------------------------

KALDI_DEFECTS = [
    "spk2utt contradicts",
    "two genders",
    "repeated utterance",
    "two speakers",
    "ark offset",
    "latin-1",
    "nul",
    "bad gender",
    "missing speaker",
]
KALDI_VARIANTS = ["plain", "bom", "crlf", "spk2utt only", "tabs", "unsorted"]


@st.composite
def kaldi_folders(draw, defect):
    n = draw(st.integers(1, 8))
    utts = {}
    for i in range(n):
        speaker = draw(st.sampled_from(sorted(SPEAKER_GENDER)))
        utts[f"{speaker}-u{i}"] = (speaker, draw(TRANSCRIPT.map(lambda t: " ".join(t.split()))))
    variant = draw(st.sampled_from(KALDI_VARIANTS))
    ids = sorted(utts)
    first = ids[draw(st.integers(0, n - 1))]
    speakers = sorted({s for s, _ in utts.values()})
    files = {
        "wav.scp": [f"{u} {u}.wav" for u in ids],
        "utt2spk": [f"{u} {utts[u][0]}" for u in ids],
        "spk2utt": [f"{s} {' '.join(u for u in ids if utts[u][0] == s)}" for s in speakers],
        "spk2gender": [f"{s} {SPEAKER_GENDER[s]}" for s in speakers],
        "text": [f"{u} {utts[u][1]}".rstrip() for u in ids],
    }
    if variant == "spk2utt only":
        del files["utt2spk"]
    if variant == "unsorted":
        files = {k: list(reversed(v)) for k, v in files.items()}
    other = next(s for s in sorted(SPEAKER_GENDER) if s != utts[first][0])
    if defect == "spk2utt contradicts":  # utt2spk says one speaker, spk2utt another
        moved = {u: other if u == first else utts[u][0] for u in ids}
        files["spk2utt"] = [f"{s} {' '.join(u for u in ids if moved[u] == s)}" for s in sorted(set(moved.values()))]
        files["utt2spk"] = [f"{u} {utts[u][0]}" for u in ids]
    elif defect == "two genders":
        s = utts[first][0]
        files["spk2gender"].append(f"{s} {'m' if SPEAKER_GENDER[s] == 'f' else 'f'}")
    elif defect == "repeated utterance":
        files["wav.scp"].append(f"{first} {first}-again.wav")
    elif defect == "two speakers":
        files["utt2spk"] = [*files.get("utt2spk", [f"{u} {utts[u][0]}" for u in ids]), f"{first} {other}"]
        files.pop("spk2utt")
    elif defect == "ark offset":
        files["wav.scp"] = [
            f"{first} feats.ark:1234" if line.startswith(f"{first} ") else line for line in files["wav.scp"]
        ]
    elif defect == "bad gender":
        files["spk2gender"] = [
            f"{utts[first][0]} q" if line.startswith(f"{utts[first][0]} ") else line for line in files["spk2gender"]
        ]
    elif defect == "missing speaker":
        key = "utt2spk" if "utt2spk" in files else "spk2utt"
        if key == "utt2spk":
            files[key] = [line for line in files[key] if not line.startswith(f"{first} ")]
        else:
            files[key] = [" ".join(w for w in line.split() if w != first) for line in files[key]]
            files[key] = [line for line in files[key] if len(line.split()) > 1]
        files.pop("utt2spk" if key == "spk2utt" else "spk2utt", None)
    sep = "\t" if variant == "tabs" else " "
    blobs = {}
    for name, lines in files.items():
        lines = [line.replace(" ", sep, 1) for line in lines]
        data = (("\r\n" if variant == "crlf" else "\n").join(lines) + "\n").encode()
        if variant == "bom":
            data = b"\xef\xbb\xbf" + data
        blobs[name] = data
    if defect == "latin-1":
        blobs["utt2spk" if "utt2spk" in blobs else "spk2utt"] += b"caf\xe9 anna\n"
    if defect == "nul":
        blobs["wav.scp"] = blobs["wav.scp"].replace(b".wav", b"\x00.wav", 1)
    return blobs, defect, utts


@pytest.mark.parametrize("defect", [None, *KALDI_DEFECTS])
@settings(FUZZ, max_examples=8)
@given(data=st.data())
def test_kaldi_folders_read_as_written_or_refused_in_one_sentence(defect, data):
    case = data.draw(kaldi_folders(defect))
    from vpeval.data.kaldi import read_data_dir

    blobs, defect, utts = case
    event(defect or "valid")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "data"
        folder.mkdir()
        write_wavs(folder, [f"{u}.wav" for u in utts] + [f"{u}-again.wav" for u in utts])
        for name, data in blobs.items():
            (folder / name).write_bytes(data)
        with time_bound():
            try:
                corpus = read_data_dir(folder)
            except UserError as exc:
                assert defect is not None, f"a valid folder was refused: {exc}\n{blobs}"
                assert "\n" not in str(exc).strip() and str(folder) in str(exc), str(exc)
                return
        assert defect is None, f"the defect '{defect}' was not noticed:\n{blobs}"
        got = {u.id: u for u in corpus.utterances}
        assert sorted(got) == sorted(utts)
        for uid, (speaker, transcript) in utts.items():
            u = got[uid]
            assert Path(u.path).name == f"{uid}.wav"
            assert u.speaker == speaker and u.gender == SPEAKER_GENDER[speaker]
            assert (u.transcript or "") == transcript


# -- experiment files ---------------------------------------------------------------------------

EXPERIMENT_DEFECTS = {
    "seed as text": ("seed", "'3'"),
    "seed as float": ("seed", "3.0"),
    "seed as bool": ("seed", "true"),
    "huge seed": ("seed", str(10**40)),
    "negative seed": ("seed", "-1"),
    "name with newline": ("name", '"two\\nlines"'),
    "name with escape": ("name", '"red\\x1b[31m"'),
    "name with bar": ("name", "a|b"),
    "alpha as text": ("alpha", "'0.8'"),
    "epochs as float": ("epochs", "2.0"),
    "epochs as text": ("epochs", "'2'"),
    "epochs as bool": ("epochs", "true"),
    "huge epochs": ("epochs", str(10**12)),
    "metric twice": ("metrics", "[eer, eer]"),
    "unknown protocol": ("protocols", "[O-O, O-X]"),
    "unknown key": ("extra", "colour: blue"),
    "unknown plugin": ("attacker", "ecapaa"),
    "label with newline": ("label", '"x\\ny"'),
    "workers huge": ("workers", "100000"),
    "N as text": ("enroll", "['1']"),
}
EXPERIMENT = """\
name: {name}
seed: {seed}
data:
  corpus: {{use: synth, params: {{preset: tiny, speakers: {speakers}}}}}
  attacker_train_speakers: 0.5
workers: {workers}
anonymizers:
  - {{use: mcadams, params: {{alpha: {alpha}}}, label: {label}}}
attackers:
  - {{use: ge2e}}
  - {{use: {attacker}, params: {{epochs: {epochs}, channels: [16, 16, 16, 16, 48]}}}}
protocols: {protocols}
enroll_utterances: {enroll}
metrics: {metrics}
{extra}
"""


@st.composite
def experiment_files(draw, defect):
    metrics = draw(
        st.lists(
            st.sampled_from(["eer", "min-dcf", "cllr", "min-cllr", "linkability"]), min_size=1, max_size=4, unique=True
        )
    )
    fields = {
        "name": "exp-" + draw(st.from_regex(r"[a-z0-9_-]{0,20}", fullmatch=True)),
        "seed": str(draw(st.integers(0, 2**31 - 1))),
        "speakers": str(draw(st.integers(8, 20))),
        "workers": str(draw(st.integers(1, 4))),
        "alpha": repr(draw(st.floats(0.5, 0.99))),
        "label": "sys-" + draw(st.from_regex(r"[a-z0-9 ()=.-]{0,20}[a-z0-9)]", fullmatch=True)),
        "attacker": draw(st.sampled_from(["ecapa", "xvector"])),
        "epochs": str(draw(st.integers(1, 30))),
        "protocols": "["
        + ", ".join(draw(st.lists(st.sampled_from(["O-O", "O-A", "A-A"]), min_size=1, unique=True)))
        + "]",
        "enroll": str(sorted(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3, unique=True)))),
        "metrics": "[" + ", ".join(metrics) + "]",
        "extra": "",
    }
    if fields["attacker"] == "xvector":
        fields["attacker"] = "ecapa"  # both take epochs and channels; ecapa keeps the bounds test honest
    if defect is not None:
        field, value = EXPERIMENT_DEFECTS[defect]
        fields[field] = value
    return EXPERIMENT.format(**fields), defect


@pytest.mark.parametrize("defect", [None, *sorted(EXPERIMENT_DEFECTS)])
@settings(FUZZ, max_examples=6)
@given(data=st.data())
def test_experiment_files_validate_or_fail_in_sentences(defect, data, tmp_path):
    case = data.draw(experiment_files(defect))
    text, defect = case
    event(defect or "valid")
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    with time_bound():
        result = CliRunner().invoke(main, ["validate", str(path)])
    if defect is not None:
        refused_in_sentences(result, path, one_line=False)
        return
    assert result.exit_code == 0, f"a valid experiment was refused:\n{result.output}\n{text}"
    assert "is valid" in result.stdout


# -- damaged cache entries ----------------------------------------------------------------------

DAMAGE = ["truncate", "flip a byte", "delete", "empty the entry", "garbage", "edit a number"]


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    """A small run with the fake plugins, and its cache, computed once for the module."""
    import fakes
    from tests_runner_helpers import run_small

    from vpeval.plugins import get_plugin_manager

    manager = get_plugin_manager()
    manager.register_module(fakes, "vpeval-fakes", "1.0", name="vpeval-fakes:fakes")
    root = tmp_path_factory.mktemp("clean")
    run_small(root)
    yield root, _values(root / "run")
    manager.unregister_module(fakes)


def _values(run: Path) -> list:
    rows = json.loads((run / "results.json").read_text())["rows"]
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


def _kinds_of_file(cache: Path) -> list[Path]:
    """One file of each kind in the cache (stage and file name, one wav standing for all): what to damage."""
    chosen: dict[tuple[str, str], Path] = {}
    for p in sorted(cache.rglob("*")):
        rel = p.relative_to(cache)
        if not p.is_file() or rel.parts[0] == "work" or p.name.endswith(".lock"):
            continue
        chosen.setdefault((rel.parts[0], p.suffix if p.suffix == ".wav" else p.name), p)
    return list(chosen.values())


def _damage(path: Path, how: str, where: float) -> None:
    data = path.read_bytes()
    at = int(where * max(len(data) - 1, 0))
    if how == "truncate":
        path.write_bytes(data[:at])
    elif how == "flip a byte" and data:
        path.write_bytes(data[:at] + bytes([data[at] ^ 0x55]) + data[at + 1 :])
    elif how == "delete":
        path.unlink()
    elif how == "empty the entry":
        for item in path.parent.iterdir():
            shutil.rmtree(item) if item.is_dir() else item.unlink()
    elif how == "garbage":
        path.write_bytes(bytes(range(256)) * 3)
    else:  # a plausible edit: the first digit changed, length kept
        text = data.decode("latin-1")
        digit = next((k for k, c in enumerate(text) if c.isdigit()), None)
        if digit is not None:
            text = text[:digit] + str((int(text[digit]) + 3) % 10) + text[digit + 1 :]
        path.write_bytes(text.encode("latin-1"))


@settings(FUZZ, max_examples=20)
@given(pick=st.floats(0, 1, exclude_max=True), how=st.sampled_from(DAMAGE), where=st.floats(0, 1))
def test_damaged_cache_entries_are_recomputed_never_reported(clean_run, pick, how, where, tmp_path_factory):
    from tests_runner_helpers import run_small

    root, expected = clean_run
    event(how)
    copy = tmp_path_factory.mktemp("damaged")
    shutil.copytree(root / "cache", copy / "cache")
    files = _kinds_of_file(copy / "cache")
    target = files[int(pick * len(files))]
    _damage(target, how, where)
    with time_bound(60):
        run_small(copy)
    assert _values(copy / "run") == expected, f"after '{how}' of {target.relative_to(copy)}"


# -- audio files and submission folders -----------------------------------------------------------

AUDIO_KINDS = ["clean", "clean", "samples", "header bytes", "random bytes", "cut"]
SAMPLE_VALUES = st.one_of(
    st.floats(-1.0, 1.0, width=32),
    st.sampled_from([0.0, float("nan"), float("inf"), -float("inf"), 100.0, 1e30, 0.5]),
)


@st.composite
def audio_files(draw):
    """(bytes of a .wav file, whether it is clean speech by construction): soundfile-written samples of every
    kind (clean tones, NaN, silence, DC, beyond full scale, 1 sample, long), header bytes overwritten at random,
    random bytes, or a valid file cut short."""
    kind = draw(st.sampled_from(AUDIO_KINDS))
    rate = draw(st.sampled_from([8000, 16000, 22050]))
    subtype = draw(st.sampled_from(["PCM_16", "FLOAT", "PCM_24"]))
    clean = kind == "clean"
    if clean:  # a tone of 0.1 to 0.5 s, well within full scale: the gate must pass it
        n = draw(st.integers(rate // 10 + 1, rate // 2))
        samples = draw(st.floats(0.05, 0.9)) * np.sin(np.arange(n) / draw(st.floats(2.0, 40.0)))
    else:
        values = draw(st.lists(SAMPLE_VALUES, min_size=1, max_size=64))
        samples = np.resize(np.array(values, dtype=np.float64), draw(st.sampled_from([1, len(values), 2000, 9000])))
    buffer = io.BytesIO()
    sf.write(buffer, samples.astype(np.float32), rate, subtype=subtype, format="WAV")
    data = bytearray(buffer.getvalue())
    if kind == "header bytes":
        for _ in range(draw(st.integers(1, 6))):
            data[draw(st.integers(0, min(len(data), 60) - 1))] = draw(st.integers(0, 255))
    elif kind == "random bytes":
        data = bytearray(draw(st.binary(min_size=0, max_size=200)))
    elif kind == "cut":
        data = data[: draw(st.integers(0, len(data) - 1))]
    return bytes(data), clean


def _clean_or_one_sentence(call, path: Path, clean: bool):
    """call()'s result, or None after a UserError in one sentence naming `path`; a clean input must pass."""
    with time_bound():
        try:
            return call()
        except UserError as exc:
            assert not clean, f"clean audio was refused: {exc}"
            refused_reading(exc, path)
            return None


@settings(FUZZ, max_examples=60)
@given(case=audio_files())
def test_audio_files_pass_the_gate_or_are_refused_in_one_sentence(case):
    from vpeval.audio import read_audio
    from vpeval.data.scan import scan_corpus
    from vpeval.types import Corpus, Utterance

    data, clean = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "u1.wav"
        path.write_bytes(data)
        corpus = Corpus("c", [Utterance("u1", "s1", str(path))])
        kept = _clean_or_one_sentence(lambda: scan_corpus(corpus, "fail")[0], path, clean)
        event("passed" if kept else "refused")
        if kept is not None:  # what passed reads as finite speech of at least the minimum duration
            audio, rate = read_audio(path)
            assert np.all(np.isfinite(audio)) and len(audio) / rate >= 0.1 and np.abs(audio).max() <= 1.0


@settings(FUZZ, max_examples=40)
@given(case=audio_files(), listed=st.sampled_from(["plain", "crlf", "tab", "missing file", "other id"]))
def test_submission_folders_pass_the_gate_or_are_refused_in_one_sentence(case, listed):
    from vpeval.api import PluginContext, Voice
    from vpeval.audio_gate import gate_output
    from vpeval.types import Utterance
    from vpeval_precomputed.anonymizer import Precomputed

    data, clean = case
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "libri_dev_trials_f_sys"
        folder.mkdir()
        path = folder / "u1.wav"
        path.write_bytes(data)
        uid = "u2" if listed == "other id" else "u1"
        line = f"{uid}{chr(9) if listed == 'tab' else ' '}{path if listed != 'missing file' else folder / 'gone.wav'}"
        (folder / "wav.scp").write_bytes((line + ("\r\n" if listed == "crlf" else "\n")).encode())
        (folder / "utt2spk").write_text(f"{uid} s1\n")
        utt = Utterance("u1", "s1", str(path), sample_rate=16000, duration=0.3)

        def anonymized():
            anonymizer = Precomputed(Precomputed.Params(folders=[str(folder)]), PluginContext(work_dir=Path(tmp) / "w"))
            anonymizer.prepare()
            anonymizer.expect([utt])
            voice = Voice("u1", "utterance", np.random.default_rng(0), utt)
            out = anonymizer.anonymize(np.zeros(4800, np.float32), 16000, voice)
            return gate_output(out, anonymizer.output_rate(16000, voice), 0.3, anonymizer, utt)

        refused_in = folder if listed in ("missing file", "other id") else path
        audio = _clean_or_one_sentence(anonymized, refused_in, clean and listed in ("plain", "crlf", "tab"))
        event("passed" if audio is not None else f"refused ({listed})")
        if audio is not None:
            assert audio.dtype == np.float32 and np.all(np.isfinite(audio)) and len(audio) > 800  # 0.1 s at 8 kHz
