"""Tiny random-weight configurations of the four frontends (small widths, 1-2 layers).

For tests, contract suites and speed benchmarks: pass one as the frontend's `config` parameter
(and KIMI_WHISPER as kimi's `feature_config`). Their outputs mean nothing; their shapes, rates and
code paths are those of the real models.
"""

MIMI = dict(
    hidden_size=32,
    num_filters=4,
    codebook_dim=16,
    vector_quantization_hidden_dimension=16,
    num_quantizers=8,
    codebook_size=64,
    num_hidden_layers=1,
    intermediate_size=64,
    num_attention_heads=2,
    num_key_value_heads=2,
    head_dim=16,
    upsample_groups=32,
)
HIGGS = dict(
    target_bandwidths=[0.5, 1, 1.5, 2],
    codebook_size=1024,
    codebook_dim=16,
    acoustic_model_config=dict(
        encoder_hidden_size=4,
        downsampling_ratios=[8, 5, 4, 2, 3],
        upsampling_ratios=[8, 5, 4, 2, 3],
        decoder_hidden_size=64,
        hidden_size=16,
    ),
    semantic_model_config=dict(
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        conv_dim=[8] * 7,
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
    ),
)
QWEN = dict(
    encoder_layers=1,
    encoder_attention_heads=2,
    encoder_ffn_dim=32,
    d_model=16,
    output_dim=24,
    downsample_hidden_size=8,
)
KIMI_TOKENIZER = dict(
    d_model=16,
    encoder_layers=2,
    encoder_attention_heads=2,
    encoder_ffn_dim=32,
    num_mel_bins=128,
    pooling_kernel_size=4,
    pooling_type="avg",
    pooling_position=2,
    quantize_position=2,
    quantize_vocab_size=64,
    quantize_causal_block_size=200,
)
KIMI_WHISPER = dict(d_model=16, encoder_layers=1, encoder_attention_heads=2, encoder_ffn_dim=32, num_mel_bins=128)
