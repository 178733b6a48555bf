"""Parameter sets besides the paper's defaults."""

# Trains in seconds on one CPU core on a few dozen one-second utterances: for tests and smoke runs,
# not for measurements (the paper's sizes are SpInv.Params' defaults).
TINY = {
    "hidden": 32,
    "layers": 1,
    "heads": 2,
    "output_dim": 32,
    "dropout": 0.0,
    "dino_prototypes": 16,
    "dino_hidden": 32,
    "dino_bottleneck": 8,
    "local_seconds": 0.8,
    "global_seconds": 1.2,
    "observed_seconds": 1.0,
    "batch_size": 20,
    "stage_a_epochs": 15,
    "stage_a_lr": 2e-3,
    "stage_b_epochs": 5,
    "stage_b_lr": 1e-3,
    "margin_ramp_start": 1,
    "margin_ramp_end": 3,
}
