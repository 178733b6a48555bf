"""Speech-language-model frontends (seed 002): Mimi, Higgs, Kimi and Qwen through transformers."""
