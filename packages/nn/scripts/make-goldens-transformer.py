"""Golden cases for the transformer layers (test/transformer.test.ts): TransformerEncoderLayer,
TransformerEncoder, TransformerDecoderLayer, TransformerDecoder and Transformer.

Each case is a layer case of make-goldens-layers.py (same helpers, same fields, run by the same
test code): default init after torch.manual_seed(seed), bit for bit; the state_dict keys and
their order; float64 forward in eval mode (dropout off) and, once, in training mode (the
dropout masks line up as the generator is the same); gradients of the inputs and of every
parameter; the printed module tree for a few. Covered: post-norm and pre-norm, batchFirst true and false, unbatched input, a
causal float mask, a (N·H, S, S) bool mask, bool key padding masks and a float one, relu, gelu and a
Module activation, stacks of 2 layers with and without a final norm, and a small Transformer.

The causal mask holds -inf, which JSON cannot write: non-finite values in a tensor's `data`
are written as the strings "inf", "-inf" and "nan" (flodl_goldens.encode_data; @flodl/testing's
readFixture reads them back).

Regenerate with Debian's PyTorch (python3-torch):
    pnpm --filter @flodl/nn run goldens      # runs every scripts/make-*.py
or  /usr/bin/python3 scripts/make-goldens-transformer.py
"""
import importlib.util
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing", "python"))
from flodl_goldens import encode_data, write_json  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("goldens_layers", os.path.join(HERE, "make-goldens-layers.py"))
layers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layers)

Const, layer_case, module_spec = layers.Const, layers.layer_case, layers.module_spec
F64 = torch.float64
E, H, FF = 8, 2, 16  # d_model, heads, feed-forward width: small, so the fixture stays short


def causal(size):
    """The float causal mask (0 on and below the diagonal, -inf above), a constant input."""
    return Const(nn.Transformer.generate_square_subsequent_mask(size).to(F64))


# Padding at the ends and never on position 0, so no query has every key masked (no NaN rows).
PADDING_3x5 = torch.tensor([[False, False, False, False, True],
                            [False, False, False, False, False],
                            [False, False, False, True, True]])
PADDING_3x4 = torch.tensor([[False, False, False, True],
                            [False, False, False, False],
                            [False, False, True, True]])


def bool_heads_mask(data, stacked, length):
    """A random (N·H, S, S) bool mask that never blocks a query from itself."""
    blocked = data.rand(stacked, length, length) > 0.6
    return blocked & ~torch.eye(length, dtype=torch.bool)


def add_cases():
    encoder_layer = "TransformerEncoderLayer"
    layer_case("TransformerEncoderLayer post-norm relu, causal float mask, key padding", encoder_layer,
               [E, H, {"dimFeedforward": FF}],
               lambda: nn.TransformerEncoderLayer(E, H, dim_feedforward=FF),
               lambda d: [d.randn(5, 3, E), causal(5), PADDING_3x5], seed=1, train=False, repr_=True)
    layer_case("TransformerEncoderLayer pre-norm gelu batchFirst, causal float mask, key padding", encoder_layer,
               [E, H, {"dimFeedforward": FF, "activation": "gelu", "normFirst": True, "batchFirst": True}],
               lambda: nn.TransformerEncoderLayer(E, H, dim_feedforward=FF, activation="gelu", norm_first=True,
                                                  batch_first=True),
               lambda d: [d.randn(3, 5, E), causal(5), PADDING_3x5], seed=2, train=False)
    # A float key padding mask alone: added to the scores (PyTorch 1.13 merges it with a bool
    # attention mask by logical or, PyTorch 2 and flodl add both as floats: not compared here).
    layer_case("TransformerEncoderLayer post-norm gelu batchFirst eps, float key padding", encoder_layer,
               [E, H, {"dimFeedforward": FF, "activation": "gelu", "batchFirst": True, "layerNormEps": 1e-6}],
               lambda: nn.TransformerEncoderLayer(E, H, dim_feedforward=FF, activation="gelu", batch_first=True,
                                                  layer_norm_eps=1e-6),
               lambda d: [d.randn(2, 4, E), None,
                          Const(torch.tensor([[0.0, 0.0, -1.5, 0.0], [0.0, -0.5, 0.0, -2.0]], dtype=F64))],
               seed=3, train=False)
    layer_case("TransformerEncoderLayer pre-norm relu, per-head bool mask, key padding", encoder_layer,
               [E, H, {"dimFeedforward": FF, "normFirst": True, "dropout": 0.2}],
               lambda: nn.TransformerEncoderLayer(E, H, dim_feedforward=FF, norm_first=True, dropout=0.2),
               lambda d: [d.randn(4, 2, E), bool_heads_mask(d, 2 * H, 4),
                          torch.tensor([[False, False, False, True], [False, True, False, False]])],
               seed=4, train=False)
    layer_case("TransformerEncoderLayer unbatched, key padding", encoder_layer,
               [E, H, {"dimFeedforward": FF, "batchFirst": True}],
               lambda: nn.TransformerEncoderLayer(E, H, dim_feedforward=FF, batch_first=True),
               lambda d: [d.randn(5, E), None, torch.tensor([False, False, True, False, True])],
               seed=5, train=False)
    layer_case("TransformerEncoderLayer Module activation (GELU tanh)", encoder_layer,
               [E, H, {"dimFeedforward": FF, "activation": module_spec("GELU", "tanh")}],
               lambda: nn.TransformerEncoderLayer(E, H, dim_feedforward=FF, activation=nn.GELU(approximate="tanh")),
               lambda d: [d.randn(3, 2, E), causal(3)], seed=6, train=False, repr_=True)
    layer_case("TransformerEncoderLayer dropout in training, batchFirst, key padding", encoder_layer,
               [E, H, {"dimFeedforward": FF, "dropout": 0.2, "batchFirst": True}],
               lambda: nn.TransformerEncoderLayer(E, H, dim_feedforward=FF, dropout=0.2, batch_first=True),
               lambda d: [d.randn(3, 5, E), None, PADDING_3x5], seed=7, train=True)

    layer_case("TransformerEncoder 2 layers, final norm, batchFirst, causal float mask, key padding",
               "TransformerEncoder",
               [module_spec(encoder_layer, E, H, {"dimFeedforward": FF, "batchFirst": True}), 2,
                {"norm": module_spec("LayerNorm", E)}],
               lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, dim_feedforward=FF, batch_first=True),
                                             2, norm=nn.LayerNorm(E)),
               lambda d: [d.randn(3, 5, E), causal(5), PADDING_3x5], seed=8, train=False, repr_=True)
    layer_case("TransformerEncoder 2 pre-norm gelu layers, no norm", "TransformerEncoder",
               [module_spec(encoder_layer, E, H, {"dimFeedforward": FF, "normFirst": True, "activation": "gelu"}), 2],
               lambda: nn.TransformerEncoder(
                   nn.TransformerEncoderLayer(E, H, dim_feedforward=FF, norm_first=True, activation="gelu"), 2),
               lambda d: [d.randn(4, 2, E), causal(4)], seed=9, train=False)

    decoder_layer = "TransformerDecoderLayer"
    layer_case("TransformerDecoderLayer post-norm relu, causal float mask, key paddings", decoder_layer,
               [E, H, {"dimFeedforward": FF}],
               lambda: nn.TransformerDecoderLayer(E, H, dim_feedforward=FF),
               lambda d: [d.randn(4, 3, E), d.randn(5, 3, E), causal(4), None, PADDING_3x4, PADDING_3x5],
               seed=10, train=False, repr_=True)
    layer_case("TransformerDecoderLayer pre-norm gelu batchFirst, memory mask", decoder_layer,
               [E, H, {"dimFeedforward": FF, "activation": "gelu", "normFirst": True, "batchFirst": True}],
               lambda: nn.TransformerDecoderLayer(E, H, dim_feedforward=FF, activation="gelu", norm_first=True,
                                                  batch_first=True),
               lambda d: [d.randn(2, 4, E), d.randn(2, 5, E), causal(4),
                          torch.tensor([[False, True, False, False, False],
                                        [False, False, True, False, True],
                                        [True, False, False, False, False],
                                        [False, False, False, True, False]])],
               seed=11, train=False)
    layer_case("TransformerDecoder 2 layers, final norm, batchFirst", "TransformerDecoder",
               [module_spec(decoder_layer, E, H, {"dimFeedforward": FF, "batchFirst": True}), 2,
                {"norm": module_spec("LayerNorm", E)}],
               lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, dim_feedforward=FF, batch_first=True),
                                             2, norm=nn.LayerNorm(E)),
               lambda d: [d.randn(3, 4, E), d.randn(3, 5, E), causal(4), None, PADDING_3x4, PADDING_3x5],
               seed=12, train=False)

    layer_case("Transformer 2+1 layers, masks", "Transformer",
               [{"dModel": E, "nhead": H, "numEncoderLayers": 2, "numDecoderLayers": 1, "dimFeedforward": FF}],
               lambda: nn.Transformer(d_model=E, nhead=H, num_encoder_layers=2, num_decoder_layers=1,
                                      dim_feedforward=FF),
               lambda d: [d.randn(5, 3, E), d.randn(4, 3, E), None, causal(4), None, PADDING_3x5, PADDING_3x4,
                          PADDING_3x5],
               seed=13, train=False)
    layer_case("Transformer pre-norm gelu batchFirst 1+1 layers", "Transformer",
               [{"dModel": E, "nhead": H, "numEncoderLayers": 1, "numDecoderLayers": 1, "dimFeedforward": FF,
                 "activation": "gelu", "normFirst": True, "batchFirst": True, "layerNormEps": 1e-6}],
               lambda: nn.Transformer(d_model=E, nhead=H, num_encoder_layers=1, num_decoder_layers=1,
                                      dim_feedforward=FF, activation="gelu", norm_first=True, batch_first=True,
                                      layer_norm_eps=1e-6),
               lambda d: [d.randn(2, 5, E), d.randn(2, 3, E), None, causal(3)], seed=14, train=False)


def main():
    torch.set_default_dtype(torch.float32)
    add_cases()
    path = os.path.join(HERE, "..", "test", "fixtures", "transformer.json")
    for case in layers.LAYER_CASES:
        if "repr" in case:
            # MultiheadAttention's out_proj is a NonDynamicallyQuantizableLinear, a Linear that
            # only quantization tells apart; flodl's is a Linear and prints so.
            case["repr"] = case["repr"].replace("NonDynamicallyQuantizableLinear", "Linear")
    payload = encode_data({"torch": torch.__version__, "cases": layers.LAYER_CASES})
    write_json(path, payload, compact=True)
    print(f"wrote {os.path.normpath(path)} ({os.path.getsize(path) / 1024:.0f} KiB, {len(payload['cases'])} cases)")


if __name__ == "__main__":
    main()
