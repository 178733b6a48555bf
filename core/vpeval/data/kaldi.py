"""Kaldi / VoicePrivacy data folders, read as they are and written in the same layout.

Read: wav.scp (a path per utterance, or a shell pipe ending in '|' when pipes are allowed), utt2spk (or
spk2utt), spk2gender, text, utt2emo and utt2dur when present. A `segments` file (utterances cut from
longer recordings) is out of scope and refused: extract the segments to files first.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from vpeval.data.audio import check_audio, read_audio, write_audio
from vpeval.errors import BadAudioError, DataError
from vpeval.types import Corpus, Utterance

GENDERS = {"m": "m", "male": "m", "f": "f", "female": "f"}


def read_data_dir(
    folder: str | os.PathLike,
    allow_pipes: bool = False,
    pipe_cache: str | os.PathLike | None = None,
    name: str | None = None,
) -> Corpus:
    """The corpus of one Kaldi data folder.

    A wav.scp pipe is refused unless `allow_pipes`; allowed pipes run once each and their decoded wav
    is kept in `pipe_cache` (default: a vpeval-pipes folder in the system's temporary folder).
    """
    folder = Path(folder)
    scp = folder / "wav.scp"
    if not scp.is_file():
        raise DataError(f"Data folder {folder} has no wav.scp; a Kaldi data folder needs one (utt-id path per line).")
    if (folder / "segments").exists():
        raise DataError(
            f"Data folder {folder} has a segments file, which vpeval does not read; cut the segments into "
            "files first (for example with Kaldi's extract-segments) and list those in wav.scp."
        )
    cache = Path(pipe_cache) if pipe_cache is not None else Path(tempfile.gettempdir()) / "vpeval-pipes"
    paths = {}
    origin = {}
    for line, utt, rest in _table(scp, min_fields=2, what="utt-id path"):
        if utt in paths:
            raise DataError(f"{scp} line {line} repeats the utterance id {utt}; each utterance must appear once.")
        paths[utt] = _audio_path(scp, line, rest, folder, allow_pipes, cache)
        if os.path.isdir(paths[utt]):
            raise DataError(f"{scp} line {line} names {paths[utt]}, which is a folder, not an audio file; list the audio file itself.")
        origin[utt] = f"{scp} line {line}"
    speakers = _speakers(folder, paths)
    genders = _column(folder / "spk2gender")
    for spk, g in genders.items():
        if g.lower() not in GENDERS:
            raise DataError(f"{folder / 'spk2gender'} gives speaker {spk} gender '{g}'; use m or f.")
    text = _column(folder / "text", allow_empty_value=True)
    emotions = _column(folder / "utt2emo")
    durations = _column(folder / "utt2dur")
    utterances = []
    for utt in sorted(paths):
        spk = speakers[utt]
        gender = genders.get(spk)
        utterances.append(
            Utterance(
                id=utt,
                speaker=spk,
                path=paths[utt],
                gender=GENDERS[gender.lower()] if gender else None,
                transcript=text.get(utt),
                emotion=emotions.get(utt),
                duration=_float(folder / "utt2dur", utt, durations[utt]) if utt in durations else None,
            )
        )
    speaker_gender = {spk: GENDERS[g.lower()] for spk, g in genders.items()}
    return Corpus(name=name or folder.name, utterances=utterances, speaker_gender=speaker_gender,
                  info={"source": str(folder), "origin": origin})


def write_data_dir(corpus: Corpus, folder: str | os.PathLike, audio_folder: str | os.PathLike | None = None) -> Path:
    """Write `corpus` as a Kaldi data folder (sorted in C order, as Kaldi's validate_data_dir wants).

    wav.scp points at the corpus's files (absolute paths), or, with `audio_folder`, at copies written
    there as `<utt-id><suffix>` (a picked channel is written as a mono wav).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for u in corpus.utterances:
        for label, value in (("utterance id", u.id), ("speaker id", u.speaker)):
            if not value or len(value.split()) != 1 or value != value.strip():
                raise DataError(f"Corpus {corpus.name} has the {label} '{value}', which Kaldi cannot store; use ids without spaces.")
    utts = sorted(corpus.utterances, key=lambda u: u.id)
    paths = {u.id: _export(u, Path(audio_folder)) if audio_folder is not None else os.path.abspath(u.path) for u in utts}
    _write(folder / "wav.scp", [f"{u.id} {paths[u.id]}" for u in utts])
    _write(folder / "utt2spk", [f"{u.id} {u.speaker}" for u in utts])
    by_speaker: dict[str, list[str]] = {}
    for u in utts:
        by_speaker.setdefault(u.speaker, []).append(u.id)
    _write(folder / "spk2utt", [f"{spk} {' '.join(ids)}" for spk, ids in sorted(by_speaker.items())])
    genders = {spk: corpus.gender_of(spk) for spk in by_speaker if corpus.gender_of(spk)}
    _write_if(folder / "spk2gender", [f"{spk} {g}" for spk, g in sorted(genders.items())])
    _write_if(folder / "text", [f"{u.id} {' '.join(u.transcript.split())}" for u in utts if u.transcript is not None])
    _write_if(folder / "utt2emo", [f"{u.id} {u.emotion}" for u in utts if u.emotion is not None])
    _write_if(folder / "utt2dur", [f"{u.id} {u.duration:.3f}" for u in utts if u.duration is not None])
    return folder


def read_trials(path: str | os.PathLike) -> list[tuple[str, str, bool]]:
    """(enroll id, test utterance id, is target) per line of a Kaldi trials file."""
    return [(enroll, test, target) for _, enroll, test, target in numbered_trials(path)]


def numbered_trials(path: str | os.PathLike) -> list[tuple[int, str, str, bool]]:
    """(line number, enroll id, test utterance id, is target) per non-empty line of a trials file."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"Trials file {path} does not exist; each trials folder needs a `trials` file.")
    out = []
    with open(path, encoding="utf-8") as handle:
        for line, text in enumerate(handle, start=1):
            fields = text.split()
            if not fields:
                continue
            if len(fields) != 3 or fields[2] not in ("target", "nontarget"):
                raise DataError(
                    f"{path} line {line} reads '{text.strip()}'; a trial line is 'enroll-id test-id target|nontarget'."
                )
            out.append((line, fields[0], fields[1], fields[2] == "target"))
    return out


# -- reading helpers ---------------------------------------------------------------------------


def _table(path: Path, min_fields: int, what: str) -> Iterator[tuple[int, str, str]]:
    """(line number, key, rest of line) for each non-empty line of a Kaldi table file."""
    with open(path, encoding="utf-8") as handle:
        for line, text in enumerate(handle, start=1):
            text = text.strip()
            if not text:
                continue
            parts = text.split(maxsplit=1)
            if len(parts) < min_fields:
                raise DataError(f"{path} line {line} reads '{text}'; expected '{what}'.")
            yield line, parts[0], parts[1] if len(parts) > 1 else ""


def _column(path: Path, allow_empty_value: bool = False) -> dict[str, str]:
    if not path.is_file():
        return {}
    out = {}
    for line, key, rest in _table(path, 1 if allow_empty_value else 2, "id value"):
        out[key] = " ".join(rest.split())
    return out


def _float(path: Path, key: str, value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise DataError(f"{path} gives {key} the value '{value}', which is not a number.") from None


def _speakers(folder: Path, paths: dict[str, str]) -> dict[str, str]:
    utt2spk, spk2utt = folder / "utt2spk", folder / "spk2utt"
    speakers: dict[str, str] = {}
    if utt2spk.is_file():
        for line, utt, spk in _table(utt2spk, 2, "utt-id speaker-id"):
            if len(spk.split()) != 1:
                raise DataError(f"{utt2spk} line {line} reads '{utt} {spk}'; expected 'utt-id speaker-id' (ids hold no spaces).")
            speakers[utt] = spk
        source = utt2spk
    elif spk2utt.is_file():
        for line, spk, utts in _table(spk2utt, 2, "speaker-id utt-id utt-id ..."):
            for utt in utts.split():
                speakers[utt] = spk
        source = spk2utt
    else:
        raise DataError(f"Data folder {folder} has neither utt2spk nor spk2utt; add one so utterances have speakers.")
    missing = [utt for utt in paths if utt not in speakers]
    if missing:
        raise DataError(f"{source} does not give a speaker for {missing[0]} (and {len(missing) - 1} more) listed in wav.scp; add them.")
    return speakers


def _audio_path(scp: Path, line: int, rest: str, folder: Path, allow_pipes: bool, cache: Path) -> str:
    if rest.endswith("|"):
        if not allow_pipes:
            raise DataError(
                f"{scp} line {line} is a shell pipe ('{rest}'), which runs a command; vpeval runs it only when "
                "you pass --allow-pipes on the command line (allow_pipes=True in Python)."
            )
        return _run_pipe(scp, line, rest[:-1].strip(), folder, cache)
    path = Path(rest)
    if path.is_absolute():
        return str(path)
    # Kaldi recipes write paths relative to the recipe folder, usually two levels above data/<set>.
    for base in (folder, folder.parent, folder.parent.parent, Path.cwd()):
        if (base / path).exists():
            return str((base / path).resolve())
    return str(folder / path)


def _run_pipe(scp: Path, line: int, command: str, folder: Path, cache: Path) -> str:
    """Run a wav.scp command once (in the recipe folder) and keep its wav output under `cache`."""
    key = hashlib.sha256(f"{folder.resolve()}\n{command}".encode()).hexdigest()[:24]
    target = cache / f"{key}.wav"
    if target.is_file():
        return str(target)
    cache.mkdir(parents=True, exist_ok=True)
    cwd = folder.parent.parent if folder.parent.parent.is_dir() else folder
    try:
        done = subprocess.run(command, shell=True, cwd=cwd, capture_output=True, timeout=600, check=False)
    except subprocess.TimeoutExpired:
        raise DataError(f"{scp} line {line}: the pipe '{command}' ran for more than 10 minutes; decode the audio to files instead.") from None
    if done.returncode != 0 or not done.stdout:
        err = " ".join(done.stderr.decode(errors="replace").split())[:200]
        raise DataError(f"{scp} line {line}: the pipe '{command}' failed (exit {done.returncode}: {err or 'no output'}); fix the command.")
    fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=cache)
    with os.fdopen(fd, "wb") as handle:
        handle.write(done.stdout)
    try:
        check_audio(tmp)
    except BadAudioError as exc:
        os.unlink(tmp)
        raise DataError(f"{scp} line {line}: the pipe '{command}' did not write a readable wav ({exc.reason}); fix the command.") from None
    os.replace(tmp, target)
    return str(target)


# -- writing helpers ---------------------------------------------------------------------------


def _write(path: Path, lines: list[str]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    os.replace(tmp, path)


def _write_if(path: Path, lines: list[str]) -> None:
    if lines:
        _write(path, lines)
    elif path.exists():
        path.unlink()  # a stale file from an earlier write would contradict the corpus


def _export(u: Utterance, audio_folder: Path) -> str:
    audio_folder.mkdir(parents=True, exist_ok=True)
    if u.channel is not None:
        audio, rate = read_audio(u.path, channel=u.channel)
        return str(write_audio(audio_folder / f"{u.id}.wav", audio, rate).resolve())
    target = audio_folder / f"{u.id}{Path(u.path).suffix.lower() or '.wav'}"
    if Path(u.path).resolve() != target.resolve():
        tmp = target.with_name(f".{target.name}.tmp")
        shutil.copyfile(u.path, tmp)
        os.replace(tmp, target)
    return str(target.resolve())
