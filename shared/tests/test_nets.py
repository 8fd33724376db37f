"""``mlp_layers``: the plain MLP several papers build, layer for layer and weight for weight as the hand loop."""

import torch
from torch import nn

from iclr24.paperkit.nets import mlp_layers


def _hand_loop(d_in, widths, d_out, act):
    layers, prev = [], d_in
    for w in widths:
        layers += [nn.Linear(prev, w), act()]
        prev = w
    layers.append(nn.Linear(prev, d_out))
    return layers


def test_the_layers_and_their_weights_are_those_of_the_hand_loop():
    for widths, act in [((7, 5), nn.ReLU), ((4,), nn.SiLU), ((), nn.ReLU)]:
        torch.manual_seed(0)
        ours = nn.Sequential(*mlp_layers(3, widths, 2, act))
        torch.manual_seed(0)
        hand = nn.Sequential(*_hand_loop(3, widths, 2, act))
        assert repr(ours) == repr(hand)
        assert ours.state_dict().keys() == hand.state_dict().keys()
        assert all(torch.equal(a, b) for a, b in zip(ours.state_dict().values(), hand.state_dict().values()))


def test_relu_by_default_and_the_shapes_chain():
    layers = mlp_layers(6, [8, 8], 3)
    assert [type(m) for m in layers] == [nn.Linear, nn.ReLU, nn.Linear, nn.ReLU, nn.Linear]
    assert nn.Sequential(*layers)(torch.zeros(2, 6)).shape == (2, 3)
    assert len(mlp_layers(6, [], 3)) == 1
