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

VPC_ROOT holds data/ and exp/ as the toolkit's 01_download_data_model.sh leaves them (exp/asv_orig). The
toolkit needs pandas and pyloudnorm importable (--pythonpath adds a folder, e.g. one `pip install --target`
filled, for the toolkit's process only). --make-tree writes a small tree there first (vpeval.testing.vpc_tree:
the small real recordings, 4 + 4 speakers, a `_fast` copy as the submission) with a random-weight ECAPA of
the released size (channels 512/1536, lin_neurons 192) at exp/asv_orig/CKPT+1: the speed of real weights,
EERs that mean nothing.
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

# run_evaluation.py's ASV evaluation block (Voice-Privacy-Challenge-2024 at 400de3a), the toolkit's functions.
TOOLKIT_DRIVER = """
import itertools, json, os, sys
from pathlib import Path
toolkit, data, exp, suffix, out = sys.argv[1:6]
os.chdir(toolkit)
sys.path.insert(0, toolkit)
import soundfile, torch, torchaudio
def load(path, *args, **kwargs):  # torchaudio.load before 2.9 (soundfile backend); 2.9+ wants torchcodec
    samples, rate = soundfile.read(path, dtype='float32', always_2d=True)
    return torch.from_numpy(samples.T.copy()), rate
torchaudio.load = load
from evaluation import evaluate_asv
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

EXPERIMENT = """\
name: vpc-toolkit-benchmark
seed: 0
device: cpu
threads: {threads}
data:
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
    from vpeval_speechbrain.tiny import write_ecapa_folder

    build_vpc_tree(root, suffix="_fast", train_per_speaker=2)
    if repeat > 1:
        _repeat_utterances(root / "data", repeat)
    folder = write_ecapa_folder(root / "exp" / "asv_orig" / "CKPT+1", seed=1, channels=(512, 512, 512, 512, 1536))
    text = (folder / "hyperparams.yaml").read_text().replace("emb_dim: 16", "emb_dim: 192")
    (folder / "hyperparams.yaml").write_text(text)  # lin_neurons 192, as released
    _rewrite_weights(folder)


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


def run_vpeval(args, work: Path, run: int) -> tuple[float, float, dict]:
    model = args.root / "exp" / "asv_orig"
    experiment = work / "experiment.yaml"
    experiment.write_text(
        EXPERIMENT.format(threads=args.threads, data=args.root / "data", suffix=args.suffix, model=model)
    )
    output = work / f"vpeval-run-{run}"
    vpeval = str(Path(sys.executable).with_name("vpeval"))
    command = [vpeval, "--experiment", str(experiment), "--no-cache", "--quiet", "--output", str(output)]
    wall, cpu, done = _timed(command, env=_env(args.threads))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--toolkit", type=Path, required=True, help="a Voice-Privacy-Challenge-2024 checkout")
    parser.add_argument("--root", type=Path, required=True, help="VPC_ROOT: data/ and exp/asv_orig")
    parser.add_argument("--suffix", default="_fast", help="the submission's anon_data_suffix")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--python", default=sys.executable, help="the toolkit's interpreter (default: this one)")
    parser.add_argument("--pythonpath", help="a folder prepended to PYTHONPATH for the toolkit only")
    parser.add_argument("--make-tree", action="store_true", help="write a small tree with random weights at --root")
    parser.add_argument("--repeat", type=int, default=1, help="with --make-tree: each utterance this many times")
    args = parser.parse_args()
    if args.make_tree:
        make_tree(args.root, args.repeat)
    commit = subprocess.run(
        ["git", "-C", str(args.toolkit), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(f"toolkit {args.toolkit} ({commit or 'not a git checkout'}), root {args.root}, suffix {args.suffix}, "
          f"{args.threads} thread(s), load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")  # fmt: skip
    walls, cpus, theirs, mine = [], [], {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            wall_t, cpu_t, theirs = run_toolkit(args, Path(tmp))
            wall_v, cpu_v, mine = run_vpeval(args, Path(tmp), run)
            walls.append(wall_t / wall_v)
            cpus.append(cpu_t / cpu_v)
            print(f"run {run}: toolkit {wall_t:.1f} s wall / {cpu_t:.1f} s CPU, vpeval {wall_v:.1f} s wall / "
                  f"{cpu_v:.1f} s CPU; ratios {walls[-1]:.2f} wall, {cpus[-1]:.2f} CPU", flush=True)  # fmt: skip
    for name, ratios in (("wall", walls), ("CPU", cpus)):
        print(f"toolkit/vpeval {name} time ratio: min {min(ratios):.2f}, median {statistics.median(ratios):.2f}, "
              f"max {max(ratios):.2f} ({args.runs} alternating runs)")  # fmt: skip
    same = True
    for key in sorted(theirs):
        equal = mine.get(key) == theirs[key]
        same &= equal
        print(f"  {' '.join(key)}: toolkit {theirs[key]:.3f}  vpeval {mine.get(key, float('nan')):.3f}"
              + ("" if equal else "  DIFFERENT"))  # fmt: skip
    missing = sorted(set(mine) - set(theirs))
    print(
        f"EERs identical: {same and not missing} ({len(theirs)} compared"
        + (f", {len(missing)} vpeval only)" if missing else ")")
    )


if __name__ == "__main__":
    main()
