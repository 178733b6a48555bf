"""Kaldi / VoicePrivacy data folders, read as they are and written in the same layout.

Read: wav.scp (a path per utterance, or a shell pipe ending in '|' when pipes are allowed), utt2spk (or
spk2utt), spk2gender, text, utt2emo and utt2dur when present. A `segments` file (utterances cut from
longer recordings) is out of scope and refused: extract the segments to files first.

Every file is read by vpeval.data.textfile (UTF-8, a BOM dropped, CRLF accepted, NUL bytes and other
encodings refused with the line). Checked on reading, each with the file and line: an utterance listed
twice in any file, or a recording listed twice in wav.scp; a wav.scp entry that is a Kaldi archive
offset or extended filename (`foo.ark:1234`, `-`), a folder or a device; utt2spk and spk2utt, when both
are there, saying the same; spk2gender giving a speaker two genders or missing one of the folder's
speakers; utt2dur values that are not finite numbers above 0 or that the file's header contradicts
(vpeval.data.declared). Entries of text, utt2emo, utt2dur (and of utt2spk) for utterances wav.scp does
not list are ignored, as when wav.scp was cut down; an empty optional file is as good as none.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from vpeval.audio import check_audio, read_audio, write_audio
from vpeval.data.declared import check_declared, check_listed_path
from vpeval.data.textfile import BadNumber, file_problem, quoted, read_lines, read_table, real_number
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
    if not folder.is_dir():
        raise DataError(
            f"Data folder {folder} {file_problem(folder) or 'is a file, not a folder'}; "
            "give a Kaldi data folder (with a wav.scp)."
        )
    scp = folder / "wav.scp"
    if not scp.exists():
        raise DataError(f"Data folder {folder} has no wav.scp; a Kaldi data folder needs one (utt-id path per line).")
    if (folder / "segments").exists():
        raise DataError(
            f"Data folder {folder} has a segments file, which vpeval does not read; cut the segments into "
            "files first (for example with Kaldi's extract-segments) and list those in wav.scp."
        )
    cache = Path(pipe_cache) if pipe_cache is not None else Path(tempfile.gettempdir()) / "vpeval-pipes"
    paths = {}
    origin = {}
    listed: dict[str, int] = {}  # file -> the wav.scp line that lists it
    for line, (utt, rest) in read_table(scp, ("utt-id", "path"), last="rest"):
        where = f"{scp} line {line}"
        if os.path.isabs(utt) or Path(utt).suffix.lower() in (".wav", ".flac", ".sph", ".mp3", ".ogg"):  # swapped
            raise DataError(
                f"{where} reads '{quoted(utt + ' ' + rest)}', whose first field is a path, not an utterance id; "
                "a wav.scp line is 'utt-id path'."
            )
        paths[utt] = _audio_path(scp, line, rest, folder, allow_pipes, cache)
        if not rest.endswith("|"):
            check_listed_path(where, rest, paths[utt])
            key = os.path.abspath(paths[utt])
            if key in listed:
                raise DataError(
                    f"{where} lists {paths[utt]}, which line {listed[key]} lists already; list each recording once."
                )
            listed[key] = line
        origin[utt] = where
    speakers = _speakers(folder, paths, origin)
    speaker_gender = _genders(folder / "spk2gender", {speakers[utt] for utt in paths})
    text = _column(folder / "text", "transcript", allow_empty_value=True)
    emotions = _column(folder / "utt2emo", "emotion")
    durations = {
        utt: _duration(folder / "utt2dur", line, utt, value)
        for utt, (line, value) in _numbered_column(folder / "utt2dur", "duration").items()
    }
    utterances = []
    for utt in sorted(paths):
        spk = speakers[utt]
        duration = durations.get(utt)
        if duration is not None:
            check_declared(f"{folder / 'utt2dur'} line {duration[0]}", paths[utt], duration=duration[1])
        utterances.append(
            Utterance(
                id=utt,
                speaker=spk,
                path=paths[utt],
                gender=speaker_gender.get(spk),
                transcript=text.get(utt),
                emotion=emotions.get(utt),
                duration=None if duration is None else duration[1],
            )
        )
    return Corpus(
        name=name or folder.name,
        utterances=utterances,
        speaker_gender=speaker_gender,
        info={"source": str(folder), "origin": origin},
    )


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
                raise DataError(
                    f"Corpus {corpus.name} has the {label} '{value}', which Kaldi cannot store; use ids without spaces."
                )
    utts = sorted(corpus.utterances, key=lambda u: u.id)
    paths = {
        u.id: _export(u, Path(audio_folder)) if audio_folder is not None else os.path.abspath(u.path) for u in utts
    }
    _write(folder / "wav.scp", [f"{u.id} {paths[u.id]}" for u in utts])
    _write(folder / "utt2spk", [f"{u.id} {u.speaker}" for u in utts])
    by_speaker: dict[str, list[str]] = {}
    for u in utts:
        by_speaker.setdefault(u.speaker, []).append(u.id)
    _write(folder / "spk2utt", [f"{spk} {' '.join(ids)}" for spk, ids in sorted(by_speaker.items())])
    genders = {spk: corpus.gender_of(spk) for spk in by_speaker if corpus.gender_of(spk)}
    # Kaldi (and read_data_dir) want spk2gender to cover every speaker, so a partial one is not written.
    complete = len(genders) == len(by_speaker)
    _write_if(folder / "spk2gender", [f"{spk} {g}" for spk, g in sorted(genders.items())] if complete else [])
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
    problem = file_problem(path)
    if problem:
        raise DataError(f"Trials file {path} {problem}; each trials folder needs a `trials` file.")
    out = []
    for line, text in read_lines(path):
        fields = text.split()
        if len(fields) != 3 or fields[2] not in ("target", "nontarget"):
            raise DataError(
                f"{path} line {line} reads '{quoted(text)}'; a trial line is 'enroll-id test-id target|nontarget'."
            )
        out.append((line, fields[0], fields[1], fields[2] == "target"))
    if not out:
        raise DataError(
            f"Trials file {path} is empty; it needs one 'enroll-id test-id target|nontarget' line per trial."
        )
    return out


# -- reading helpers ---------------------------------------------------------------------------


def _numbered_column(path: Path, what: str, allow_empty_value: bool = False) -> dict[str, tuple[int, str]]:
    """key -> (line, value) of an optional two-column file (the value is the rest of the line)."""
    if not path.exists():
        return {}
    rows = read_table(path, ("utt-id", what), last="rest", empty_ok=True)
    out = {}
    for line, (key, rest) in rows:
        if not rest and not allow_empty_value:
            raise DataError(f"{path} line {line} reads '{key}'; expected 'utt-id {what}'.")
        out[key] = (line, " ".join(rest.split()))
    return out


def _column(path: Path, what: str, allow_empty_value: bool = False) -> dict[str, str]:
    return {key: value for key, (_, value) in _numbered_column(path, what, allow_empty_value).items()}


def _duration(path: Path, line: int, key: str, value: str) -> tuple[int, float]:
    try:
        seconds = real_number(value)
    except BadNumber as exc:
        raise DataError(
            f"{path} line {line} gives {key} the duration '{value}', which {exc}; write seconds, such as 3.52."
        ) from None
    if seconds <= 0:
        raise DataError(
            f"{path} line {line} gives {key} the duration {value}; a duration is a number of seconds above 0."
        )
    return line, seconds


def _genders(path: Path, speakers: set[str]) -> dict[str, str]:
    """speaker -> m|f from spk2gender: one gender per speaker, and every speaker of the folder covered."""
    if not path.exists():
        return {}
    out: dict[str, str] = {}
    first: dict[str, int] = {}
    for line, (spk, g) in read_table(path, ("speaker-id", "m|f"), unique=False, empty_ok=True):
        gender = GENDERS.get(g.lower())
        if gender is None:
            raise DataError(f"{path} line {line} gives speaker {spk} gender '{g}'; use m or f.")
        if spk in out:
            if out[spk] != gender:
                raise DataError(
                    f"{path} gives speaker {spk} gender {out[spk]} on line {first[spk]} and {gender} on line {line}; "
                    "a speaker has one gender, so keep the right line."
                )
            raise DataError(
                f"{path} line {line} repeats speaker {spk}, already on line {first[spk]}; list each speaker once."
            )
        out[spk], first[spk] = gender, line
    missing = sorted(speakers - set(out))
    if missing:
        more = f" (and {len(missing) - 1} more of the folder's {len(speakers)} speakers)" if len(missing) > 1 else ""
        raise DataError(
            f"{path} gives no gender for speaker {missing[0]}{more}; add a '{missing[0]} m|f' line for each, or remove "
            "spk2gender if the genders are unknown."
        )
    return out


def _speakers(folder: Path, paths: dict[str, str], origin: dict[str, str]) -> dict[str, str]:
    """utt -> speaker from utt2spk and/or spk2utt; when both are there they must say the same."""
    utt2spk, spk2utt = folder / "utt2spk", folder / "spk2utt"
    from_utt2spk = from_spk2utt = None
    if utt2spk.exists():
        from_utt2spk = {utt: (line, spk) for line, (utt, spk) in read_table(utt2spk, ("utt-id", "speaker-id"))}
    if spk2utt.exists():
        from_spk2utt = {}
        for line, (spk, *utts) in read_table(spk2utt, ("speaker-id", "utt-id"), last="many"):
            for utt in utts:
                if utt in from_spk2utt:
                    other_line, other = from_spk2utt[utt]
                    twice = "twice" if other == spk else f"under speaker {other} and under {spk}"
                    raise DataError(
                        f"{spk2utt} lists the utterance {utt} {twice} (lines {other_line} and {line}); "
                        "an utterance has one speaker, so keep it on one line."
                    )
                from_spk2utt[utt] = (line, spk)
    if from_utt2spk is None and from_spk2utt is None:
        raise DataError(f"Data folder {folder} has neither utt2spk nor spk2utt; add one so utterances have speakers.")
    if from_utt2spk is not None and from_spk2utt is not None:
        _agree(utt2spk, from_utt2spk, spk2utt, from_spk2utt)
    table, source = (from_utt2spk, utt2spk) if from_utt2spk is not None else (from_spk2utt, spk2utt)
    missing = [utt for utt in paths if utt not in table]
    if missing:
        raise DataError(
            f"{source} does not give a speaker for {missing[0]} (and {len(missing) - 1} more), which "
            f"{origin[missing[0]]} lists; add them, or correct the id in wav.scp."
        )
    return {utt: spk for utt, (_, spk) in table.items()}


def _agree(
    utt2spk: Path, by_utt: dict[str, tuple[int, str]], spk2utt: Path, by_spk: dict[str, tuple[int, str]]
) -> None:
    """Refuse an utt2spk and a spk2utt that contradict each other, naming the first difference."""
    for utt, (line, spk) in by_utt.items():
        if utt not in by_spk:
            raise DataError(
                f"{utt2spk} line {line} gives {utt} the speaker {spk}, but {spk2utt} does not list {utt}; "
                "the two files must agree (regenerate spk2utt with Kaldi's utils/utt2spk_to_spk2utt.pl, or delete it)."
            )
        other_line, other = by_spk[utt]
        if other != spk:
            raise DataError(
                f"{utt2spk} line {line} gives {utt} the speaker {spk}, but {spk2utt} line {other_line} lists it under "
                f"{other}; the two files must agree "
                "(regenerate spk2utt with utils/utt2spk_to_spk2utt.pl, or delete it)."
            )
    for utt, (line, spk) in by_spk.items():
        if utt not in by_utt:
            raise DataError(
                f"{spk2utt} line {line} lists {utt} under {spk}, but {utt2spk} does not list {utt}; the two files must "
                "agree (regenerate spk2utt with utils/utt2spk_to_spk2utt.pl, or delete it)."
            )


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
        raise DataError(
            f"{scp} line {line}: the pipe '{command}' ran for more than 10 minutes; decode the audio to files instead."
        ) from None
    if done.returncode != 0 or not done.stdout:
        err = " ".join(done.stderr.decode(errors="replace").split())[:200]
        raise DataError(
            f"{scp} line {line}: the pipe '{command}' failed (exit {done.returncode}: {err or 'no output'}); "
            "fix the command."
        )
    fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=cache)
    with os.fdopen(fd, "wb") as handle:
        handle.write(done.stdout)
    try:
        check_audio(tmp)
    except BadAudioError as exc:
        os.unlink(tmp)
        raise DataError(
            f"{scp} line {line}: the pipe '{command}' did not write a readable wav ({exc.reason}); fix the command."
        ) from None
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
