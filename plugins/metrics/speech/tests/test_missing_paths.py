"""vpeval validate names each missing model folder of the speech metrics' plugins in one sentence (missing_paths)."""

from vpeval_speech.speechbrain_asr import SpeechBrainASR
from vpeval_speech.uar import UAR
from vpeval_speech.whisper_asr import WhisperASR


def test_speechbrain_asr_folder_and_wav2vec2_source(tmp_path):
    missing = SpeechBrainASR.missing_paths(
        SpeechBrainASR.Params(source=str(tmp_path / "asr"), wav2vec2_source=str(tmp_path / "w2v"))
    )
    assert len(missing) == 2 and "has no hyperparams.yaml" in missing[0] and "no config.json" in missing[1]
    (tmp_path / "asr").mkdir()
    (tmp_path / "asr" / "hyperparams.yaml").write_text("sample_rate: 16000\n")
    assert SpeechBrainASR.missing_paths(SpeechBrainASR.Params(source=str(tmp_path / "asr"))) == []


def test_whisper_folder(tmp_path):
    assert WhisperASR.missing_paths(WhisperASR.Params()) == []  # the packaged model
    (tmp_path / "model.bin").write_bytes(b"")
    (missing,) = WhisperASR.missing_paths(WhisperASR.Params(model_path=str(tmp_path)))
    assert "lacks config.json, tokenizer.json" in missing


def test_uar_speechbrain_evaluator(tmp_path):
    assert UAR.missing_paths(UAR.Params()) == []  # the acoustic evaluator needs no files
    missing = UAR.missing_paths(UAR.Params(evaluator="speechbrain", spk2fold=str(tmp_path / "spk2fold")))
    assert "needs models" in missing[0] and "spk2fold" in missing[1]
    (missing,) = UAR.missing_paths(UAR.Params(evaluator="speechbrain", models=str(tmp_path / "ser")))
    assert "is not a folder" in missing
