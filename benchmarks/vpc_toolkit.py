"""vpeval against the VoicePrivacy 2024 toolkit's own code on the toolkit's own work: the ASV evaluation with the
released ASV_eval model (lazy-informed: O-O, O-A and A-A, every dev/test x f/m trial folder), whole processes
alternating at the same thread count, and the EERs of both compared.

Toolkit side: a fresh process that runs run_evaluation.py's ASV block as written there (configs/eval_pre.yaml
through the toolkit's parse_yaml with data_dir / exp_dir / anon_data_suffix overridden, scan_checkpoint's
CKPT+ folder, evaluate_asv), importing `evaluation` as run_evaluation.py does; run_evaluation.py itself is
not run because its check_dependencies refuses any other release than its pins (speechbrain 0.5.16,
scipy 1.12, ...), and this environment has vpeval's; torchaudio.load reads through soundfile as torchaudio
did before 2.9 (2.9+ needs torchcodec, not installed here; tests/test_vpc_toolkit_evaluation.py does the
same). Its embedding folder (exp/asv_orig/cosine_out) is removed
before every run: both sides start without stored embeddings. vpeval side: `vpeval --experiment` on an
experiment with the same data, the `speechbrain` attacker on the same folder, O-O / O-A / A-A and eer, with
--no-cache (a throwaway stage cache) and its default batching. Each side runs --runs times, in turn (toolkit,
vpeval, toolkit, ...), with OMP/MKL threads and vpeval's threads at --threads, on the CPU. Times are wall
and CPU (user + system) seconds of the whole process (start-up and model loading included), so the ratios
of the alternating runs are what count on a busy machine; min / median / max of toolkit time / vpeval time
are printed, then each EER of both sides (the toolkit rounds to 3 decimals of a percent; vpeval's value is
rounded the same way) and whether all are identical.

    .venv/bin/python benchmarks/vpc_toolkit.py --toolkit /path/to/Voice-Privacy-Challenge-2024 --root VPC_ROOT \
        --suffix _mcadams [--runs 3] [--threads 1] [--pythonpath DIR]
    .venv/bin/python benchmarks/vpc_toolkit.py --toolkit ... --make-tree /tmp/vpc-tree   # a small tree first
    .venv/bin/python benchmarks/vpc_toolkit.py --toolkit ... --root /tmp/vpc-tree --stages wer uar cores \
        --utility-root /tmp/vpc-utility --make-utility-tree --utility-size base --pythonpath PYLIB

VPC_ROOT holds data/ and exp/ as the toolkit's 01_download_data_model.sh leaves them (exp/asv_orig). The
toolkit needs pandas and pyloudnorm importable (--pythonpath adds a folder, e.g. one `pip install --target`
filled, for the toolkit's process only). --make-tree writes a small tree there first (vpeval.testing.vpc_tree:
the small real recordings, 4 + 4 speakers, a `_fast` copy as the submission) with a random-weight ECAPA of
the released size (channels 512/1536, lin_neurons 192) at exp/asv_orig/CKPT+1: the speed of real weights,
EERs that mean nothing.

Further stages (--stages, default asv):
- `wer`: the toolkit's evaluate_asr (run_evaluation.py's import, its asr_eval_speechbrain with eval_batchsize
  --asr-batch, 8 as configs/eval_pre.yaml has it) against vpeval's `wer` metric (speechbrain-asr, normaliser
  vpc2024, the same four trial folders as sets), each a whole process at --threads threads (vpeval: workers 1);
  WERs per set compared as the toolkit rounds them.
- `uar`: the toolkit's evaluate_ser (per-fold classifiers by spk2fold) against vpeval's `uar` (speechbrain
  evaluator, the same spk2fold) on IEMOCAP_dev and its anonymized copy; mean UARs compared.
  Both run on --utility-root, a toolkit-layout tree that --make-utility-tree writes with the tests' builder
  (tests/test_vpc_toolkit_evaluation.build_tree: the small real recordings with texts, IEMOCAP_dev stand-ins,
  exp/asr, exp/ser/fold_<k>/CKPT+1), random weights at --utility-size: tiny (the tests' 2 x 32 wav2vec2),
  base (wav2vec2-base's 12 x 768, the released SER's size) or large (24 x 1024, the released ASR's size);
  the ASR gets a layer-norm (large-lv60) wav2vec2, the SER a group-norm (base) one, as released.
--vpeval-cpu-precision fp32 bf16 runs vpeval once per precision in each alternation (toolkit, vpeval fp32,
vpeval bf16, toolkit, ...): the experiment's `cpu_precision` (bf16: torch autocast on the CPU, for CPUs with
AVX512-BF16 or AMX); the toolkit always computes in fp32. Each precision gets its own ratios; after the timed
runs, wer and uar count how many transcripts / classes differ between vpeval's fp32 and bf16 (the ASR on every
trial file, each SER fold model on every IEMOCAP_dev file, in this process at --threads threads).
- `cores`: vpeval's ASV evaluation on --root pinned to one core and to two (taskset -c 0 / 0,1), workers left
  at their default (every core the process may use), alternating; the throughput ratio (one-core time / two-core
  time, min / median / max) and whether the EERs of both are identical.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Both toolkit drivers run inside the checkout, with torchaudio.load as it was before 2.9.
IN_TOOLKIT = """\
os.chdir(toolkit)
sys.path.insert(0, toolkit)
import soundfile, torch, torchaudio
def load(path, *args, **kwargs):  # torchaudio.load before 2.9 (soundfile backend); 2.9+ wants torchcodec
    samples, rate = soundfile.read(path, dtype='float32', always_2d=True)
    return torch.from_numpy(samples.T.copy()), rate
torchaudio.load = load
"""

# run_evaluation.py's ASV evaluation block (Voice-Privacy-Challenge-2024 at 400de3a), the toolkit's functions.
TOOLKIT_DRIVER = (
    """
import itertools, json, os, sys
from pathlib import Path
toolkit, data, exp, suffix, out = sys.argv[1:6]
"""
    + IN_TOOLKIT
    + """from evaluation import evaluate_asv
from utils import parse_yaml, scan_checkpoint
params = parse_yaml(Path('configs/eval_pre.yaml'),
                    overrides={'data_dir': data, 'exp_dir': exp, 'anon_data_suffix': suffix})
asv_params = params['privacy']['asv']
model_dir = asv_params['evaluation']['model_dir']
model_dir = scan_checkpoint(model_dir, 'CKPT+') or model_dir
pairs = []
for name in asv_params['dataset_name']:
    for d in params['datasets']:
        if d['name'] == name:
            for e, t in itertools.product(d['enrolls'], d['trials']):
                pairs.append((f"{d['data']}{e}", f"{d['data']}{t}"))
table = evaluate_asv(eval_datasets=pairs, eval_data_dir=params['data_dir'], params=asv_params, device='cpu',
                     model_dir=model_dir, anon_data_suffix=suffix)
rows = [{k: (v.item() if hasattr(v, 'item') else v) for k, v in r.items()} for r in table.to_dict('records')]
Path(out).write_text(json.dumps(rows))
"""
)

EXPERIMENT = """\
name: vpc-toolkit-benchmark
seed: 0
device: cpu
cpu_precision: {precision}
threads: {threads}
{workers}data:
  corpus: {{use: vpc, params: {{root: "{data}", challenge: "2024", utility: false}}}}
anonymizers:
  - use: precomputed
    label: submission
    params: {{vpc: {{root: "{data}", suffix: "{suffix}", challenge: "2024", utility: false}}}}
attackers:
  - use: speechbrain
    label: asv_eval
    params: {{source: "{model}"}}
protocols: [O-O, O-A, A-A]
metrics: [eer]
"""

SCENARIO = {("original", "original"): "O-O", ("original", "anon"): "O-A", ("anon", "anon"): "A-A"}


def make_tree(root: Path, repeat: int = 1) -> None:
    from vpeval.testing.vpc_tree import build_vpc_tree

    build_vpc_tree(root, suffix="_fast", train_per_speaker=2)
    if repeat > 1:
        _repeat_utterances(root / "data", repeat)
    released_ecapa_folder(root / "exp" / "asv_orig" / "CKPT+1")


def released_ecapa_folder(folder: Path) -> Path:
    """VPC 2024's asv_orig folder layout at the released size (ECAPA 512/1536, lin_neurons 192), random weights."""
    from vpeval_speechbrain.tiny import write_ecapa_folder

    folder = write_ecapa_folder(folder, seed=1, channels=(512, 512, 512, 512, 1536))
    text = (folder / "hyperparams.yaml").read_text().replace("emb_dim: 16", "emb_dim: 192")
    (folder / "hyperparams.yaml").write_text(text)  # lin_neurons 192, as released
    _rewrite_weights(folder)
    return folder


def _repeat_utterances(data: Path, repeat: int) -> None:
    """Every evaluation folder's utterances `repeat` times: copies <utt>_r<k> of each file with a little seeded
    noise (other content, so no side may reuse an embedding), in wav.scp, utt2spk, text and the trial lists."""
    import numpy as np
    import soundfile as sf

    for folder in sorted(p for p in data.iterdir() if p.is_dir() and not p.name.startswith("train")):
        lines = {name: (folder / name).read_text().splitlines() for name in ("wav.scp", "utt2spk", "text", "trials")
                 if (folder / name).is_file()}  # fmt: skip
        copies = folder / "repeats"
        copies.mkdir(exist_ok=True)
        for k in range(1, repeat):
            for line in list(lines["wav.scp"]):
                if "_r" in line.split()[0]:
                    continue
                utt, path = line.split(maxsplit=1)
                audio, rate = sf.read(path, dtype="float32")
                seed = int.from_bytes(f"{utt}-{k}".encode()[:8].ljust(8, b"0"), "little") % 2**32
                noisy = audio + np.random.default_rng(seed).normal(0, 1e-3, audio.shape).astype(np.float32)
                sf.write(copies / f"{utt}_r{k}.wav", np.clip(noisy, -1, 1), rate, subtype="PCM_16")
                lines["wav.scp"].append(f"{utt}_r{k} {copies / f'{utt}_r{k}.wav'}")
            for name, column in (("utt2spk", 0), ("text", 0), ("trials", 1)):
                for line in list(lines.get(name, [])):
                    fields = line.split(" ")
                    if "_r" not in fields[column]:
                        fields[column] = f"{fields[column]}_r{k}"
                        lines[name].append(" ".join(fields))
        for name, rows in lines.items():
            (folder / name).write_text("".join(row + "\n" for row in rows))


def _rewrite_weights(folder: Path) -> None:
    """The ECAPA of the folder's YAML (lin_neurons 192) with random weights."""
    import torch
    from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN

    model = ECAPA_TDNN(
        80, channels=[512, 512, 512, 512, 1536], kernel_sizes=[5, 3, 3, 3, 1], dilations=[1, 2, 3, 4, 1],
        attention_channels=128, lin_neurons=192,
    )  # fmt: skip
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if tensor.is_floating_point():
                noise = torch.randn(tensor.shape, generator=generator)
                if name.endswith("running_var"):  # as vpeval_speechbrain.tiny randomises its folders
                    tensor.copy_(0.5 + noise.abs())
                else:
                    tensor.copy_(noise * (0.3 if name.endswith("running_mean") else 0.2))
    torch.save(model.state_dict(), folder / "embedding_model.ckpt")


def _env(threads: int, pythonpath: str | None = None) -> dict[str, str]:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[name] = str(threads)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _timed(command: list[str], **kwargs) -> tuple[float, float, subprocess.CompletedProcess]:
    """Wall seconds and CPU seconds (user + system of the process and its children) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def run_toolkit(args, work: Path) -> tuple[float, float, dict]:
    exp = args.root / "exp"
    shutil.rmtree(exp / "asv_orig" / "cosine_out", ignore_errors=True)  # its stored embeddings and scores
    out = work / "toolkit.json"
    command = [args.python, "-c", TOOLKIT_DRIVER, str(args.toolkit), str(args.root / "data"), str(exp), args.suffix]
    wall, cpu, done = _timed([*command, str(out)], env=_env(args.threads, args.pythonpath), cwd=args.toolkit)
    if done.returncode != 0:
        sys.exit(f"the toolkit's evaluation failed:\n{done.stderr[-3000:]}")
    eers = {}
    for row in json.loads(out.read_text()):
        key = (row["dataset"], row["split"], row["gender"], SCENARIO[(row["enrollment"], row["trial"])])
        eers[key] = float(row["EER"])
    return wall, cpu, eers


def run_vpeval(
    args, work: Path, run: int, workers: int | None = 1, cpus: str | None = None, precision: str = "fp32"
) -> tuple[float, float, dict]:
    """vpeval's ASV evaluation as a whole process; workers None leaves the experiment's default (every core the
    process may use), `cpus` pins it with taskset (e.g. "0" or "0,1"); `precision` its cpu_precision."""
    model = args.root / "exp" / "asv_orig"
    experiment = work / "experiment.yaml"
    text = EXPERIMENT.format(
        threads=args.threads,
        precision=precision,
        workers="" if workers is None else f"workers: {workers}\n",
        data=args.root / "data",
        suffix=args.suffix,
        model=model,
    )
    experiment.write_text(text)
    output = work / f"vpeval-run-{run}"
    vpeval = str(Path(sys.executable).with_name("vpeval"))
    command = [vpeval, "--experiment", str(experiment), "--no-cache", "--quiet", "--output", str(output)]
    pin = ["taskset", "-c", cpus] if cpus else []
    wall, cpu, done = _timed([*pin, *command], env=_env(args.threads))
    if done.returncode != 0:
        sys.exit(f"vpeval's evaluation failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return wall, cpu, _vpeval_eers(output / "results.json")


def _vpeval_eers(path: Path) -> dict:
    """(dataset, split, gender, protocol) -> EER in percent rounded as the toolkit rounds it, from results.json."""
    eers = {}
    for row in json.loads(path.read_text())["rows"]:
        if row.get("metric") != "eer" or row.get("gender") in (None, "all"):
            continue
        parts = str(row.get("dataset") or "").split("_")  # libri_dev -> libri, dev (the toolkit's columns)
        if len(parts) < 2 or row["gender"] not in ("f", "m"):
            continue
        eers[(parts[0], parts[1], row["gender"], row["protocol"])] = round(float(row["value"]), 3)  # in %
    return eers


# The WER and UAR evaluations of run_evaluation.py (imported as it imports them), on the four trial folders
# (the toolkit's libri_{dev,test}_asr joins them) and IEMOCAP_dev; each set's WER from its `wer` file.
TOOLKIT_UTILITY_DRIVER = (
    """
import json, os, sys
from pathlib import Path
toolkit, data, stage, models, suffix, batch, results, out = sys.argv[1:9]
"""
    + IN_TOOLKIT
    + """from evaluation import evaluate_asr, evaluate_ser
data, results = Path(data), Path(results)
results.mkdir(parents=True, exist_ok=True)
values = {}
if stage == 'wer':
    sets = %r
    params = {'model_dir': Path(models), 'model_type': 'EncoderASR', 'device': 'cpu', 'results_dir': results,
              'eval_batchsize': int(batch)}
    evaluate_asr(eval_datasets=sets, eval_data_dir=data, params=params, anon_data_suffix=suffix, device='cpu',
                 backend='speechbrain')
    for name in sets + [s + suffix for s in sets]:
        first = (results / name / 'wer').read_text().splitlines()[0]  # %%WER x [ E / N, ... ]
        errors, words = first.split('[', 1)[1].split(',')[0].split('/')
        values[name] = round(100.0 * int(errors) / int(words), 3)
else:
    means = evaluate_ser(%r, data, Path(models), anon_data_suffix=suffix, params={'results_dir': results}, device='cpu')
    for ser, value in zip(means['ser'], means[('UAR', 'mean')]):
        values['IEMOCAP_dev' + (suffix if ser == 'anon' else '')] = round(float(value), 3)
Path(out).write_text(json.dumps(values))
"""
)

# vpeval's wer and uar metrics as the vpc2024 recipe configures them, in a process of their own.
VPEVAL_UTILITY_DRIVER = """
import json, sys
from pathlib import Path
data, stage, models, suffix, threads, workers, work, out, precision = sys.argv[1:10]
from vpeval.api import MetricInputs
from vpeval.data.kaldi import read_data_dir
from vpeval.plugins import plugin_context
from vpeval.types import Corpus
data = Path(data)
context = plugin_context(seed=0, work_dir=Path(work), threads=int(threads), workers=int(workers), precision=precision)
def joined(names):
    corpora = [read_data_dir(data / n) for n in names]
    genders = {k: v for c in corpora for k, v in c.speaker_gender.items()}
    return Corpus(names[0], [u for c in corpora for u in c.utterances], genders)
values = {}
if stage == 'wer':
    from vpeval_speech.wer import WER
    sets = %r
    params = WER.Params(asr='speechbrain-asr', asr_params={'source': models}, sets=[str(data / s) for s in sets],
                        normaliser='vpc2024')
    inputs = MetricInputs(original=joined(sets), anonymized=joined([s + suffix for s in sets]))
    for row in WER(params, context).compute(inputs):
        if 'dataset' in row.details:
            name = row.details['dataset'] + ('' if row.details['speech'] == 'original' else suffix)
            values[name] = round(row.value, 3)
else:
    from vpeval_speech.uar import UAR
    sets = %r
    params = UAR.Params(evaluator='speechbrain', models=models, spk2fold=[str(data / s / 'spk2fold') for s in sets])
    inputs = MetricInputs(original=joined(sets), anonymized=joined([s + suffix for s in sets]))
    for row in UAR(params, context).compute(inputs):
        values['IEMOCAP_dev' + (suffix if row.details['speech'] == 'anonymized' else '')] = round(row.value, 3)
Path(out).write_text(json.dumps(values))
"""
ASR_SETS = ["libri_dev_trials_f", "libri_dev_trials_m", "libri_test_trials_f", "libri_test_trials_m"]
SER_SETS = ["IEMOCAP_dev"]
TOOLKIT_UTILITY_DRIVER = TOOLKIT_UTILITY_DRIVER % (ASR_SETS, SER_SETS)
VPEVAL_UTILITY_DRIVER = VPEVAL_UTILITY_DRIVER % (ASR_SETS, SER_SETS)
# hidden size, layers, attention heads, feed-forward size; the feature encoder is wav2vec2's (7 convolutions of 512)
WAV2VEC2_SIZES = {"tiny": None, "base": (768, 12, 12, 3072), "large": (1024, 24, 16, 4096)}


def make_utility_tree(root: Path, size: str, ser_size: str | None = None) -> dict[str, Path]:
    """The tests' WER / UAR tree (tests/test_vpc_toolkit_evaluation.build_tree), its wav2vec2 models then rebuilt
    at `size` (the SER's at `ser_size`, default the same) with random weights: the ASR on a layer-norm
    (large-lv60) wav2vec2, the SER folds on a group-norm (base) one, the heads on top re-drawn for the wider
    input."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_vpc_toolkit_evaluation import build_tree

    from vpeval_speech.tiny import write_random_modules

    tree = build_tree(root)
    ser_size = ser_size or size
    if WAV2VEC2_SIZES[size] is not None:
        hidden = WAV2VEC2_SIZES[size][0]
        hub = _wav2vec2_hub(root / f"hub-asr-{size}", size, "layer")
        yaml = tree["asr"] / "hyperparams.yaml"
        text = _resized(yaml.read_text(), hub, "input_shape: [null, null, 32]", f"input_shape: [null, null, {hidden}]")
        yaml.write_text(text)
        write_random_modules(text, tree["asr"], {"asr_model": "asr.ckpt", "wav2vec2": "wav2vec2.ckpt"})
    if WAV2VEC2_SIZES[ser_size] is None:
        return tree
    hidden = WAV2VEC2_SIZES[ser_size][0]
    ser_hub = _wav2vec2_hub(root / f"hub-ser-{ser_size}", ser_size, "group")
    for yaml in sorted(tree["ser"].glob("fold_*/CKPT+*/hyperparams.yaml")):
        text = _resized(yaml.read_text(), ser_hub, "encoder_dim: 32", f"encoder_dim: {hidden}")
        yaml.write_text(text)
        seed = int(yaml.parent.parent.name.split("_")[1])  # each fold's head differs
        write_random_modules(text, yaml.parent, {"model": "model.ckpt", "wav2vec2": "wav2vec2.ckpt"}, seed=seed)
    return tree


def _wav2vec2_hub(folder: Path, size: str, norm: str) -> Path:
    """A random transformers wav2vec2 of `size` as save_pretrained writes it (a local facebook/wav2vec2-* copy)."""
    import torch
    from transformers import Wav2Vec2Config, Wav2Vec2FeatureExtractor, Wav2Vec2Model

    hidden, layers, heads, inner = WAV2VEC2_SIZES[size]
    torch.manual_seed(0)
    config = Wav2Vec2Config(
        hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=inner,
        feat_extract_norm=norm, do_stable_layer_norm=norm == "layer", vocab_size=32,
    )  # fmt: skip
    Wav2Vec2Model(config).save_pretrained(folder)
    Wav2Vec2FeatureExtractor(do_normalize=True, return_attention_mask=norm == "layer").save_pretrained(folder)
    return folder


def _resized(text: str, hub: Path, old: str, new: str) -> str:
    """A folder's YAML with its wav2vec2 source and the width the head reads replaced."""
    if old not in text or "wav2vec2_hub:" not in text:
        sys.exit(
            f"the tree's YAML has no '{old}' or wav2vec2_hub line: tests' tiny folders changed; update this script"
        )
    lines = [f"wav2vec2_hub: {hub}" if line.startswith("wav2vec2_hub:") else line for line in text.splitlines()]
    return "\n".join(lines).replace(old, new) + "\n"


def run_toolkit_utility(args, work: Path, stage: str, run: int) -> tuple[float, float, dict]:
    data = args.utility_root / "data"
    models = args.utility_root / "exp" / ("asr" if stage == "wer" else "ser")
    results, out = work / f"toolkit-{stage}-{run}", work / f"toolkit-{stage}-{run}.json"  # no stored results
    command = [args.python, "-c", TOOLKIT_UTILITY_DRIVER, str(args.toolkit), str(data), stage, str(models)]
    command += [args.suffix, str(args.asr_batch), str(results), str(out)]
    wall, cpu, done = _timed(command, env=_env(args.threads, args.pythonpath), cwd=args.toolkit)
    if done.returncode != 0:
        sys.exit(f"the toolkit's {stage} evaluation failed:\n{done.stderr[-3000:]}")
    return wall, cpu, json.loads(out.read_text())


def run_vpeval_utility(args, work: Path, stage: str, run: int, precision: str = "fp32") -> tuple[float, float, dict]:
    data = args.utility_root / "data"
    models = args.utility_root / "exp" / ("asr" if stage == "wer" else "ser")
    out = work / f"vpeval-{stage}-{run}-{precision}.json"
    command = [sys.executable, "-c", VPEVAL_UTILITY_DRIVER, str(data), stage, str(models), args.suffix]
    command += [str(args.threads), "1", str(work / f"vpeval-{stage}-{run}-{precision}"), str(out), precision]
    wall, cpu, done = _timed(command, env=_env(args.threads))
    if done.returncode != 0:
        sys.exit(f"vpeval's {stage} evaluation failed:\n{done.stderr[-3000:]}")
    return wall, cpu, json.loads(out.read_text())


def stage_utility(args, tmp: Path, stage: str) -> None:
    """The toolkit's WER (or UAR) evaluation and vpeval's (once per --vpeval-cpu-precision), alternating whole
    processes at --threads threads."""
    precisions = args.vpeval_cpu_precision
    _alternate(
        args,
        stage.upper(),
        lambda run: run_toolkit_utility(args, tmp, stage, run),
        lambda run, p: run_vpeval_utility(args, tmp, stage, run, p),
        f"{stage.upper()}s (rounded to 3 decimals)",
    )
    if "fp32" in precisions and "bf16" in precisions:
        _agreement(args, stage)


def _alternate(args, label: str, toolkit, vpeval, values: str) -> dict[str, dict]:
    """toolkit(run), then vpeval(run, precision) once per --vpeval-cpu-precision, --runs times in turn; prints
    each run's times, the ratios (min / median / max) and whether vpeval's `values` equal the toolkit's. Returns
    vpeval's values of the last run per precision."""
    precisions = args.vpeval_cpu_precision
    walls, cpus, theirs, mine = {p: [] for p in precisions}, {p: [] for p in precisions}, {}, {}
    for run in range(args.runs):
        wall_t, cpu_t, theirs = toolkit(run)
        for p in precisions:
            wall_v, cpu_v, mine[p] = vpeval(run, p)
            walls[p].append(wall_t / wall_v)
            cpus[p].append(cpu_t / cpu_v)
            print(f"{label.lower()} run {run}: toolkit {wall_t:.1f} s wall / {cpu_t:.1f} s CPU, vpeval ({p}) "
                  f"{wall_v:.1f} s wall / {cpu_v:.1f} s CPU; ratios {walls[p][-1]:.2f} wall, {cpus[p][-1]:.2f} CPU",
                  flush=True)  # fmt: skip
    for p in precisions:
        _ratios(f"{label} wall time", walls[p], what=f"toolkit/vpeval ({p})")
        _ratios(f"{label} CPU time", cpus[p], what=f"toolkit/vpeval ({p})")
        _compare(f"{values}, vpeval {p}", theirs, mine[p])
    return mine


def _agreement(args, stage: str) -> None:
    """How many of vpeval's transcripts (wer: the ASR on every trial file) or classes (uar: each fold model on
    every IEMOCAP_dev file) differ between fp32 and bf16 on the CPU; in this process, not timed."""
    import soundfile as sf
    import torch

    from vpeval.api import PluginContext
    from vpeval_speech.speechbrain_asr import SpeechBrainASR
    from vpeval_speech.speechbrain_emotion import load_classifier

    torch.set_num_threads(args.threads)
    sets = ASR_SETS if stage == "wer" else SER_SETS
    names = [s + suffix for s in sets for suffix in ("", args.suffix)]
    paths = [line.split(maxsplit=1)[1] for n in names
             for line in (args.utility_root / "data" / n / "wav.scp").read_text().splitlines()]  # fmt: skip
    audios = [sf.read(path, dtype="float32")[0] for path in paths]
    outputs = {}
    for p in ("fp32", "bf16"):
        context = PluginContext(work_dir=args.utility_root / f"agreement-{p}", precision=p)
        if stage == "wer":
            source = str(args.utility_root / "exp" / "asr")
            asr = SpeechBrainASR(SpeechBrainASR.Params(source=source), context)
            outputs[p] = [t.text for t in asr.transcribe_many(audios)]
        else:
            folds = sorted((args.utility_root / "exp" / "ser").glob("fold_*/CKPT+*"))
            classifiers = [load_classifier(str(fold), None, "") for fold in folds]
            outputs[p] = [label for c in classifiers for label in c.classify_many(audios, "cpu", context.autocast)]
    differ = sum(a != b for a, b in zip(outputs["fp32"], outputs["bf16"]))
    what = "transcripts" if stage == "wer" else "classes (each fold model on every file)"
    print(f"{stage.upper()}: {differ} of {len(outputs['fp32'])} {what} differ between vpeval fp32 and bf16")


def _ratios(name: str, ratios: list[float], what: str = "toolkit/vpeval") -> None:
    print(f"{what} {name} ratio: min {min(ratios):.2f}, median {statistics.median(ratios):.2f}, "
          f"max {max(ratios):.2f} ({len(ratios)} alternating runs)")  # fmt: skip


def _compare(name: str, theirs: dict, mine: dict) -> None:
    """Each value of both sides, and whether all are identical."""
    same = True
    for key in sorted(theirs):
        equal = mine.get(key) == theirs[key]
        same &= equal
        label = " ".join(key) if isinstance(key, tuple) else key
        print(f"  {label}: toolkit {theirs[key]:.3f}  vpeval {mine.get(key, float('nan')):.3f}"
              + ("" if equal else "  DIFFERENT"))  # fmt: skip
    missing = sorted(set(mine) - set(theirs))
    print(
        f"{name} identical: {same and not missing} ({len(theirs)} compared"
        + (f", {len(missing)} vpeval only)" if missing else ")")
    )


def stage_asv(args, tmp: Path) -> None:
    precisions = args.vpeval_cpu_precision
    mine = _alternate(
        args,
        "ASV",
        lambda run: run_toolkit(args, tmp),
        lambda run, p: run_vpeval(args, tmp, 10 * run + precisions.index(p), precision=p),
        "EERs",
    )
    if "fp32" in precisions and "bf16" in precisions:
        differ = sum(mine["fp32"][key] != mine["bf16"].get(key) for key in mine["fp32"])
        print(f"EERs: {differ} of {len(mine['fp32'])} differ between vpeval fp32 and bf16")


def stage_cores(args, tmp: Path) -> None:
    """vpeval's ASV evaluation on one core and on two, alternating; workers at their default (the affinity).
    Also the score stages alone (embedding and scoring: timings.json), where the cores go."""
    ratios, stage_ratios, eers = [], [], {}
    for run in range(args.runs):
        one, cpu_one, eers[1] = run_vpeval(args, tmp, 100 + run, workers=None, cpus="0")
        two, cpu_two, eers[2] = run_vpeval(args, tmp, 200 + run, workers=None, cpus="0,1")
        score_one, score_two = (
            _score_seconds(tmp / f"vpeval-run-{100 + run}"),
            _score_seconds(tmp / f"vpeval-run-{200 + run}"),
        )
        ratios.append(one / two)
        stage_ratios.append(score_one / score_two)
        print(f"cores run {run}: one core {one:.1f} s wall ({cpu_one:.1f} CPU, score stages {score_one:.1f} s), "
              f"two cores {two:.1f} s wall ({cpu_two:.1f} CPU, score stages {score_two:.1f} s): "
              f"throughput x{one / two:.2f}, score stages x{score_one / score_two:.2f}", flush=True)  # fmt: skip
    _ratios("throughput (one-core wall / two-core wall)", ratios, what="vpeval ASV")
    _ratios("score stages' throughput (one core / two cores)", stage_ratios, what="vpeval ASV")
    print(f"EERs identical on one and two cores: {eers[1] == eers[2]} ({len(eers[1])} EERs)")


def _score_seconds(output: Path) -> float:
    """Wall seconds of a run's score stages (embedding the sides, scoring the trials), from timings.json."""
    seconds = json.loads((output / "timings.json").read_text())["seconds"]
    return sum(value for stage, value in seconds.items() if stage.startswith("score:"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--toolkit", type=Path, required=True, help="a Voice-Privacy-Challenge-2024 checkout")
    parser.add_argument("--root", type=Path, help="VPC_ROOT: data/ and exp/asv_orig (stages asv, cores)")
    parser.add_argument("--suffix", default="_fast", help="the submission's anon_data_suffix")
    parser.add_argument("--stages", nargs="+", default=["asv"], choices=["asv", "wer", "uar", "cores"])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--python", default=sys.executable, help="the toolkit's interpreter (default: this one)")
    parser.add_argument("--pythonpath", help="a folder prepended to PYTHONPATH for the toolkit only")
    parser.add_argument("--commit", help="the toolkit's commit, printed when --toolkit is not a git checkout")
    parser.add_argument("--make-tree", action="store_true", help="write a small tree with random weights at --root")
    parser.add_argument("--repeat", type=int, default=1, help="with --make-tree: each utterance this many times")
    parser.add_argument("--utility-root", type=Path, help="the WER / UAR tree (stages wer, uar)")
    parser.add_argument("--make-utility-tree", action="store_true", help="write it first (random weights)")
    parser.add_argument("--utility-size", default="base", choices=sorted(WAV2VEC2_SIZES))
    parser.add_argument("--asr-batch", type=int, default=8, help="the toolkit's eval_batchsize (eval_pre.yaml: 8)")
    parser.add_argument("--vpeval-cpu-precision", nargs="+", default=["fp32"], choices=["fp32", "bf16"],
                        help="vpeval's cpu_precision: one vpeval run each per alternation (asv, wer, uar)")  # fmt: skip
    args = parser.parse_args()
    if {"asv", "cores"} & set(args.stages) and args.root is None:
        parser.error("stages asv and cores need --root")
    if {"wer", "uar"} & set(args.stages) and args.utility_root is None:
        parser.error("stages wer and uar need --utility-root")
    if args.make_tree:
        make_tree(args.root, args.repeat)
    if args.make_utility_tree:
        make_utility_tree(args.utility_root, args.utility_size)
    commit = subprocess.run(
        ["git", "-C", str(args.toolkit), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(f"toolkit {args.toolkit} ({commit or args.commit or 'not a git checkout'}), root {args.root}, "
          f"utility root {args.utility_root} ({args.utility_size}), suffix {args.suffix}, {args.threads} thread(s), "
          f"vpeval cpu_precision {' and '.join(args.vpeval_cpu_precision)} (the toolkit: fp32), "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for stage in args.stages:
            {"asv": stage_asv, "cores": stage_cores, "wer": stage_utility, "uar": stage_utility}[stage](
                *((args, Path(tmp)) if stage in ("asv", "cores") else (args, Path(tmp), stage))
            )
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
