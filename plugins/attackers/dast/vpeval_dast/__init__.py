"""DAST (seed 001): dual-stream voice anonymization attacker with staged training."""
