"""Each audio file is decoded once and hashed once per run, whatever stages read it (issue 39, item 2).

The VoicePrivacy evaluation reads the LibriSpeech trial files in its ASV stage (the speechbrain attacker's
embeddings and their content cache) and again in its ASR stage (wer's transcript cache and speechbrain-asr),
and an SER stage reads its files the same way. Here the three read the same files inside one run's scope
(vpeval.audio.decoded_audio and fingerprint.remembered_hashes, which Runner.run opens), and spies on the
decoder and the hasher count every read."""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pytest
import soundfile as sf

import vpeval.audio as audio_module
import vpeval.data.fingerprint as fingerprint
from vpeval.api import MetricInputs
from vpeval.audio import decoded_audio, read_audio
from vpeval.build import plugin_context
from vpeval.data.fingerprint import remembered_hashes
from vpeval.types import Corpus, Utterance

pytest.importorskip("speechbrain")

SECONDS = [0.7, 1.2, 0.9, 1.5, 0.6, 1.1]


@pytest.fixture
def spies(monkeypatch):
    decoded, hashed = Counter(), Counter()
    decode, hash_bytes = audio_module._decode, fingerprint._hash_bytes

    def counting_decode(path, channel):
        decoded[str(path)] += 1
        return decode(path, channel)

    def counting_hash(path):
        hashed[str(path)] += 1
        return hash_bytes(path)

    monkeypatch.setattr(audio_module, "_decode", counting_decode)
    monkeypatch.setattr(fingerprint, "_hash_bytes", counting_hash)
    return decoded, hashed


def corpus(tmp_path) -> Corpus:
    rng = np.random.default_rng(0)
    utterances = []
    for i, seconds in enumerate(SECONDS):
        path = tmp_path / "speech" / f"u{i}.wav"
        path.parent.mkdir(exist_ok=True)
        sf.write(path, (rng.normal(0, 0.1, int(16000 * seconds))).astype(np.float32), 16000)
        utterances.append(
            Utterance(f"u{i}", f"s{i % 2}", str(path), transcript="THE QUICK FOX", emotion=["neu", "ang"][i % 2])
        )
    return Corpus("speech", utterances)


def three_stages(tmp_path, speech: Corpus) -> None:
    """ASV embeddings (content cache on), WER with speechbrain-asr, UAR with a speechbrain classifier."""
    from vpeval_speech.tiny import tiny_emotion_folders, tiny_encoder_asr_folder
    from vpeval_speech.uar import UAR
    from vpeval_speech.wer import WER
    from vpeval_speechbrain.params import SpeechBrainParams
    from vpeval_speechbrain.service import FolderEmbeddings
    from vpeval_speechbrain.tiny import write_ecapa_folder

    ecapa = write_ecapa_folder(tmp_path / "asv_orig")
    asr = tiny_encoder_asr_folder(tmp_path / "asr-root")
    ser = tiny_emotion_folders(tmp_path / "ser-root", folds=1) / "fold_1"
    context = plugin_context(seed=0, work_dir=tmp_path / "asv", options={"cache_root": str(tmp_path / "cache")})
    vectors = FolderEmbeddings(SpeechBrainParams(source=str(ecapa)), context, "asv").embed_utterances(
        speech.utterances, "embed"
    )
    assert len(vectors) == len(speech)
    params = WER.Params(asr="speechbrain-asr", asr_params={"source": str(asr)}, normaliser="vpc2024", bootstrap=0)
    assert WER(params, plugin_context(seed=0, work_dir=tmp_path / "wer")).compute(MetricInputs(original=speech))
    uar = UAR(
        UAR.Params(evaluator="speechbrain", models=str(ser), bootstrap=0), plugin_context(work_dir=tmp_path / "u")
    )
    assert uar.compute(MetricInputs(original=speech))


def test_asv_asr_and_ser_stages_decode_and_hash_each_file_once(tmp_path, spies):
    decoded, hashed = spies
    speech = corpus(tmp_path)
    paths = {u.path for u in speech}
    with decoded_audio() as kept, remembered_hashes():
        three_stages(tmp_path, speech)
    assert set(decoded) == paths and set(decoded.values()) == {1}  # three stages, one decode each
    assert {hashed[p] for p in paths} == {1}  # three content caches, one hash each (model files: theirs)
    assert kept.decoded == len(paths) and kept.hits >= 2 * len(paths) and kept.refused == 0


def test_without_the_run_scope_every_stage_reads_again(tmp_path, spies):
    """What the scope saves: the same three stages outside it decode and hash each file several times."""
    decoded, hashed = spies
    speech = corpus(tmp_path)
    three_stages(tmp_path, speech)
    assert min(decoded.values()) >= 3 and min(hashed[u.path] for u in speech) >= 3


def test_the_bound_holds_and_rewritten_files_are_read_again(tmp_path, spies):
    decoded, _ = spies
    speech = corpus(tmp_path)
    sizes = [4 * int(16000 * s) for s in SECONDS]  # float32 bytes of each file
    limit_mb = (sizes[0] + sizes[1] + 1) / 2**20  # room for the first two files only
    with decoded_audio(limit_mb) as kept:
        for _ in range(3):
            for u in speech:
                samples, rate = read_audio(u.path)
                samples *= 2  # a caller changing its copy never changes what is kept
        assert kept.bytes <= kept.limit and kept.bytes == sizes[0] + sizes[1]
        assert [decoded[u.path] for u in speech] == [1, 1, 3, 3, 3, 3]  # past the bound: decoded each time
        assert kept.refused == 3 * (len(speech) - 2)
        first = speech.utterances[0]
        again, _ = read_audio(first.path)
        np.testing.assert_array_equal(again, sf.read(first.path, dtype="float32")[0])
        sf.write(first.path, np.zeros(8000, np.float32), 16000)  # rewritten: another stamp
        assert read_audio(first.path)[0].shape == (8000,) and decoded[first.path] == 2
    read_audio(speech.utterances[0].path)  # the scope is closed: no file kept
    assert decoded[speech.utterances[0].path] == 3


def test_a_run_decodes_each_file_once(tmp_path, fake_plugins, spies):
    """Runner.run opens the scope: the fake run's stages (anonymization, training, scoring) read its corpus
    files and the anonymized ones once each, and run.log says how many reads it served."""
    from tests_runner_helpers import run_small

    decoded, _ = spies
    result = run_small(tmp_path)
    assert decoded and set(decoded.values()) == {1}
    log = (result.folder / "run.log").read_text()
    assert f"audio: {len(decoded)} files decoded, " in log


def test_hashes_the_file_index_knows_are_not_read_again(tmp_path, spies, monkeypatch):
    """A warm run: the corpus scan finds each file's hash in the file index (no read), and the stages' content
    caches then get that hash from the run's memory instead of reading the file."""
    _, hashed = spies
    path = corpus(tmp_path).utterances[0].path
    monkeypatch.setattr(fingerprint, "RACY_NS", -(10**18))  # the file was just written: trust its stamp anyway
    with fingerprint.FileIndex(tmp_path / "index") as index:
        first = index.file_hash(path)
    assert hashed[path] == 1
    with remembered_hashes(), fingerprint.FileIndex(tmp_path / "index") as index:
        assert index.file_hash(path) == first and fingerprint.file_hash(path) == first
    assert hashed[path] == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_worker_forked_while_the_lock_is_held_reads(tmp_path):
    """The executor forks workers from one thread while others may be reading: the child gets a free lock."""
    import signal

    path = corpus(tmp_path).utterances[0].path
    with decoded_audio() as kept:
        kept.lock.acquire()  # as if another thread were inside read_audio at the fork
        pid = os.fork()
        if pid == 0:  # the child: read, or be killed by the alarm if the lock is stuck
            signal.alarm(20)
            read_audio(path)
            os._exit(0)
        kept.lock.release()
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
