"""SpInv: speaker inversion from what a speech language model's frontend exposes (seed 002)."""
