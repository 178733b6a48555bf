"""Pool-speaker voice conversion anonymizer (WORLD analysis/synthesis, kNN envelope matching)."""
