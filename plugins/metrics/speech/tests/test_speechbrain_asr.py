"""speechbrain-asr: transcripts equal EncoderASR.from_hparams on the same folder; unsafe folders are refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from vpeval.api import PluginContext
from vpeval.errors import MissingModelError
from vpeval_speech.speechbrain_asr import SpeechBrainASR

torch = pytest.importorskip("torch")
pytest.importorskip("speechbrain")


def audios(seed=0, seconds=(0.6, 1.0, 0.45)) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=int(16000 * s)) * 0.1).astype(np.float32) for s in seconds]


def plugin(folder: Path, tmp_path: Path, **params) -> SpeechBrainASR:
    return SpeechBrainASR(SpeechBrainASR.Params(source=str(folder), **params), PluginContext(work_dir=tmp_path / "w"))


@pytest.fixture(scope="module")
def reference(encoder_asr_folder, tmp_path_factory):
    """speechbrain's own EncoderASR on the folder (it runs the YAML: the test's own file)."""
    from speechbrain.inference.ASR import EncoderASR

    return EncoderASR.from_hparams(source=str(encoder_asr_folder), savedir=str(tmp_path_factory.mktemp("sb-save")))


def test_transcripts_equal_encoder_asr(encoder_asr_folder, reference, tmp_path):
    asr = plugin(encoder_asr_folder, tmp_path)
    texts = []
    for audio in audios():
        expected, _ = reference.transcribe_batch(torch.from_numpy(audio)[None], torch.tensor([1.0]))
        texts.append(asr.transcribe(audio).text)
        assert texts[-1] == expected[0]
    assert len(set(texts)) == len(texts) and all(texts)  # random weights, yet distinct non-empty texts
    # transcribe_many on the CPU is one utterance at a time: the same texts, in input order
    assert [t.text for t in asr.transcribe_many(audios())] == texts


def test_padded_batches_match_speechbrain_batches(encoder_asr_folder, reference, tmp_path):
    """The GPU path's padded batch computes what EncoderASR.transcribe_batch does on the same padded batch."""
    asr = plugin(encoder_asr_folder, tmp_path)
    batch = sorted(audios(1), key=len, reverse=True)
    longest = len(batch[0])
    wavs = torch.zeros(len(batch), longest)
    for row, audio in enumerate(batch):
        wavs[row, : len(audio)] = torch.from_numpy(audio)
    expected, _ = reference.transcribe_batch(wavs, torch.tensor([len(a) / longest for a in batch]))
    assert asr.decode(batch) == expected


def test_hub_source_needs_a_local_folder(encoder_asr_folder, tmp_path):
    folder = tmp_path / "hub-named"
    shutil.copytree(encoder_asr_folder, folder)
    text = (folder / "hyperparams.yaml").read_text()
    hub = text.split("wav2vec2_hub: ", 1)[1].splitlines()[0]
    (folder / "hyperparams.yaml").write_text(text.replace(hub, "facebook/wav2vec2-large-960h-lv60-self"))
    with pytest.raises(MissingModelError, match="never downloads: set the parameter wav2vec2_source"):
        plugin(folder, tmp_path).transcribe(audios()[0])
    local = plugin(folder, tmp_path, wav2vec2_source=hub)
    assert local.transcribe(audios()[0]).text == plugin(encoder_asr_folder, tmp_path).transcribe(audios()[0]).text
    partial = tmp_path / "hf-no-preprocessor"
    shutil.copytree(hub, partial)
    (partial / "preprocessor_config.json").unlink()
    with pytest.raises(MissingModelError, match="has no preprocessor_config.json"):
        plugin(folder, tmp_path, wav2vec2_source=str(partial)).transcribe(audios()[0])


def test_apply_os_system_is_refused_and_nothing_runs(encoder_asr_folder, tmp_path):
    folder = tmp_path / "evil"
    shutil.copytree(encoder_asr_folder, folder)
    marker = tmp_path / "ran"
    text = (folder / "hyperparams.yaml").read_text()
    (folder / "hyperparams.yaml").write_text(text + f'\nboom: !apply:os.system ["touch {marker}"]\n')
    with pytest.raises(MissingModelError, match=r"line \d+ \(under boom\) calls !apply:os.system"):
        plugin(folder, tmp_path).transcribe(audios()[0])
    assert not marker.exists()
    (folder / "hyperparams.yaml").write_text(text.replace("torch.nn.LeakyReLU", "subprocess.Popen", 1))
    with pytest.raises(MissingModelError, match="subprocess.Popen, which is not a speechbrain, torch"):
        plugin(folder, tmp_path).transcribe(audios()[0])


def test_unlisted_speechbrain_class_and_missing_checkpoint_are_one_sentence(encoder_asr_folder, tmp_path):
    folder = tmp_path / "odd"
    shutil.copytree(encoder_asr_folder, folder)
    text = (folder / "hyperparams.yaml").read_text()
    (folder / "hyperparams.yaml").write_text(text.replace("torch.nn.LeakyReLU", "torch.nn.Transformer", 1))
    with pytest.raises(MissingModelError, match="torch.nn.Transformer is not on it"):
        plugin(folder, tmp_path).transcribe(audios()[0])
    (folder / "hyperparams.yaml").write_text(text)
    (folder / "asr.ckpt").unlink()
    with pytest.raises(MissingModelError, match="no checkpoint for `asr`"):
        plugin(folder, tmp_path).transcribe(audios()[0])
    with pytest.raises(MissingModelError, match="has no hyperparams.yaml"):
        plugin(tmp_path / "absent", tmp_path).transcribe(audios()[0])


def test_pickled_plugin_leaves_its_model_behind(encoder_asr_folder, tmp_path):
    import pickle

    asr = plugin(encoder_asr_folder, tmp_path)
    text = asr.transcribe(audios()[0]).text
    again = pickle.loads(pickle.dumps(asr))
    assert again._loaded is None and again.transcribe(audios()[0]).text == text


from vpeval.testing.contracts import ASRContract  # noqa: E402


class TestSpeechBrainASRContract(ASRContract):
    plugin_name = "speechbrain-asr"

    @pytest.fixture(autouse=True)
    def _folder(self, encoder_asr_folder):
        self.params = {"source": str(encoder_asr_folder)}


def test_batches_of_equal_lengths_equal_one_by_one(encoder_asr_folder, tmp_path):
    """Without padding a batch computes what each utterance alone does (the GPU path's batch_size > 1)."""
    asr = plugin(encoder_asr_folder, tmp_path, batch_size=3)
    same = audios(2, seconds=(0.5, 0.5, 0.5, 0.5))
    alone = [asr.decode([a])[0] for a in same]
    assert asr.decode(same) == alone
    assert asr.decode(same[:2]) == alone[:2]


def test_encoder_decoder_transcripts_equal_encoder_decoder_asr(
    encoder_decoder_asr_folder, encoder_asr_folder, tmp_path
):
    """A speechbrain 1.x transformer folder: CTC/attention beam search with a transformer LM, as
    EncoderDecoderASR.from_hparams runs it."""
    from speechbrain.inference.ASR import EncoderDecoderASR

    reference = EncoderDecoderASR.from_hparams(source=str(encoder_decoder_asr_folder), savedir=str(tmp_path / "sb"))
    asr = plugin(encoder_decoder_asr_folder, tmp_path)
    texts = []
    for audio in audios(3):
        expected, _ = reference.transcribe_batch(torch.from_numpy(audio)[None], torch.tensor([1.0]))
        texts.append(asr.transcribe(audio).text)
        assert texts[-1] == expected[0]
    assert any(texts) and len(set(texts)) > 1
    assert asr.parts().interface == "EncoderDecoderASR" and "EncoderDecoderASR folder" in asr.describe()
    assert "SpeechBrain EncoderASR folder" in plugin(encoder_asr_folder, tmp_path).describe()
    legacy = tmp_path / "sb05"
    shutil.copytree(encoder_decoder_asr_folder, legacy)
    text = (legacy / "hyperparams.yaml").read_text()
    (legacy / "hyperparams.yaml").write_text(text.replace("S2STransformerBeamSearcher", "S2STransformerBeamSearch"))
    with pytest.raises(MissingModelError, match="speechbrain 0.5's beam search"):
        plugin(legacy, tmp_path).transcribe(audios()[0])


def test_alias_bomb_is_refused_quickly(tmp_path):
    """Nested YAML aliases (a few lines, 10**9 leaves when expanded) end in one sentence, not a hang."""
    import time

    from vpeval_speech.speechbrain_folder import read_hparams

    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    lines.append("encoder: !new:torch.nn.ModuleList [*a8]")
    (tmp_path / "hyperparams.yaml").write_text("\n".join(lines) + "\n")
    start = time.perf_counter()
    with pytest.raises(MissingModelError, match="expands to more than 200000 values"):
        read_hparams(tmp_path / "hyperparams.yaml")  # the shared reader (vpeval-sbfolder) refuses it, unbuilt
    assert time.perf_counter() - start < 5


def test_wer_reaches_it_by_name(encoder_asr_folder, tmp_path):
    """The wer metric names speechbrain-asr and its folder in its params, as an experiment file does."""
    from vpeval.api import MetricInputs
    from vpeval.plugins import plugin_context
    from vpeval.testing.dummies import make_corpus
    from vpeval_speech.wer import WER

    original = make_corpus(tmp_path / "orig", speakers=2, utterances=2, seconds=0.4, seed=1, name="orig")
    params = WER.Params(asr="speechbrain-asr", asr_params={"source": str(encoder_asr_folder)}, bootstrap=0)
    results = WER(params, plugin_context(seed=0, work_dir=tmp_path / "work")).compute(MetricInputs(original=original))
    assert results[0].details["asr"].startswith("SpeechBrain EncoderASR folder") and results[0].value > 0
    expected = plugin(encoder_asr_folder, tmp_path).transcribe(original.utterances[0].load(16000)).text
    lines = (tmp_path / "work" / "hyp_original.txt").read_text().splitlines()
    assert lines[0] == f"{original.utterances[0].id} {expected}"
