"""ecapa_tdnn is the recipe's network and frame_map is speechbrain's forward up to pooling, bit for bit."""

import torch

from vpeval_torch.ecapa import DILATIONS, KERNELS, ecapa_tdnn, frame_map


def mfa_output_of_speechbrains_forward(network, frames):
    seen = []
    hook = network.mfa.register_forward_hook(lambda module, inputs, output: seen.append(output))
    try:
        network(frames)
    finally:
        hook.remove()
    return seen[0]


def test_frame_map_is_speechbrains_forward_up_to_pooling():
    torch.manual_seed(0)
    network = ecapa_tdnn(24, (32, 32, 32, 32, 96), attention_channels=16, embedding_dim=20).eval()
    frames = torch.randn(2, 57, 24)
    with torch.no_grad():
        out = frame_map(network, frames)
        assert out.shape == (2, 96, 57)
        assert torch.equal(out, mfa_output_of_speechbrains_forward(network, frames))


def test_frame_map_runs_on_a_module_that_kept_only_the_blocks_and_the_mfa():
    torch.manual_seed(1)
    network = ecapa_tdnn(16, (16, 16, 16, 16, 48), attention_channels=8).eval()
    kept = torch.nn.Module()
    kept.blocks, kept.mfa = network.blocks, network.mfa
    frames = torch.randn(1, 30, 16)
    with torch.no_grad():
        assert torch.equal(frame_map(kept, frames), frame_map(network, frames))


def test_the_network_has_the_recipes_kernels_dilations_and_sizes():
    network = ecapa_tdnn(24, (32, 32, 32, 32, 96), attention_channels=16, embedding_dim=20)
    tdnn = [network.blocks[0].conv.conv] + [b.res2net_block.blocks[0].conv.conv for b in network.blocks[1:]]
    tdnn.append(network.mfa.conv.conv)
    assert [(c.kernel_size[0], c.dilation[0]) for c in tdnn] == list(zip(KERNELS, DILATIONS, strict=True))
    assert network.fc.conv.out_channels == 20 and network.blocks[0].conv.conv.in_channels == 24


def test_the_same_seed_builds_the_same_weights():
    def build():
        torch.manual_seed(3)
        return ecapa_tdnn(16, (16, 16, 16, 16, 48), attention_channels=8).state_dict()

    first, second = build(), build()
    assert all(torch.equal(first[k], second[k]) for k in first)
