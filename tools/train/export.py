"""Write the trained model as GGUF, and the tokens PyTorch generates from it for the test.

    /usr/bin/python3 tools/train/export.py --dir build-train --gguf build-train/kjv-f32.gguf \
        --expected build-train/kjv.expected.json

The GGUF file carries llama.cpp's llama keys and the SentencePiece vocabulary (pieces, scores,
token types, the 256 <0xNN> byte-fallback pieces), with F32 tensors; `graphrun quantize` makes
the shipped Q8_0 file from it. The expected tokens come from PyTorch running the weights exactly
as the Q8_0 file stores them (each block of 32 rounded as ggml rounds it), greedy, by full
recomputation; graphrun's test (tests/parity/trained_model_test.cpp) must continue the prompt the same way.
"""
import argparse
import json
import os

import numpy as np
import sentencepiece as spm
import torch

from gguf_file import FLOAT32, INT32, STRING, UINT32, BOOL, GgufFile
from model import Llama, LlamaShape

# SentencePiece piece kinds -> llama.cpp token types
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_UNUSED, TOKEN_BYTE = 1, 2, 3, 5, 6
GGUF_NAMES = {"tok_embd": "token_embd", "out_norm": "output_norm", "output": "output",
              "attn_norm": "attn_norm", "wq": "attn_q", "wk": "attn_k", "wv": "attn_v",
              "wo": "attn_output", "ffn_norm": "ffn_norm", "w_gate": "ffn_gate", "w_up": "ffn_up",
              "w_down": "ffn_down"}


def gguf_name(torch_name: str) -> str:
    """"blocks.3.wq.weight" -> "blk.3.attn_q.weight"; "tok_embd.weight" -> "token_embd.weight"."""
    parts = torch_name.split(".")
    if parts[0] == "blocks":
        return f"blk.{parts[1]}.{GGUF_NAMES[parts[2]]}.{parts[3]}"
    return f"{GGUF_NAMES[parts[0]]}.{parts[1]}"


def token_type(sp, i: int) -> int:
    if sp.is_unknown(i):
        return TOKEN_UNKNOWN
    if sp.is_control(i):
        return TOKEN_CONTROL
    if sp.is_byte(i):
        return TOKEN_BYTE
    if sp.is_unused(i):
        return TOKEN_UNUSED
    return TOKEN_NORMAL


def q8_0_round_trip(w: np.ndarray) -> np.ndarray:
    """What a Q8_0 tensor holds, as float: per block of 32, d = amax/127 stored as fp16,
    q = round-half-away(x / d) computed with the float d, value = q * fp16(d) (ggml's rule)."""
    blocks = w.astype(np.float32).reshape(-1, 32)
    d = np.abs(blocks).max(axis=1, keepdims=True) / np.float32(127)
    inv = np.divide(np.float32(1), d, out=np.zeros_like(d), where=d != 0)
    scaled = blocks * inv
    q = np.sign(scaled) * np.floor(np.abs(scaled) + np.float32(0.5))
    return (q * d.astype(np.float16).astype(np.float32)).reshape(w.shape)


def write_gguf(path: str, shape: LlamaShape, state: dict, sp, name: str):
    f = GgufFile()
    f.add("general.architecture", STRING, "llama")
    f.add("general.name", STRING, name)
    f.add("general.file_type", UINT32, 0)  # all F32
    f.add("llama.context_length", UINT32, shape.n_ctx)
    f.add("llama.embedding_length", UINT32, shape.n_embd)
    f.add("llama.block_count", UINT32, shape.n_layer)
    f.add("llama.feed_forward_length", UINT32, shape.n_ff)
    f.add("llama.rope.dimension_count", UINT32, shape.head_dim)
    f.add("llama.rope.freq_base", FLOAT32, shape.rope_base)
    f.add("llama.attention.head_count", UINT32, shape.n_head)
    f.add("llama.attention.head_count_kv", UINT32, shape.n_head_kv)
    f.add("llama.attention.layer_norm_rms_epsilon", FLOAT32, shape.rms_eps)
    f.add("llama.vocab_size", UINT32, shape.vocab)
    f.add("tokenizer.ggml.model", STRING, "llama")
    f.add_array("tokenizer.ggml.tokens", STRING, [sp.id_to_piece(i) for i in range(sp.vocab_size())])
    f.add_array("tokenizer.ggml.scores", FLOAT32, [sp.get_score(i) for i in range(sp.vocab_size())])
    f.add_array("tokenizer.ggml.token_type", INT32, [token_type(sp, i) for i in range(sp.vocab_size())])
    f.add("tokenizer.ggml.bos_token_id", UINT32, sp.bos_id())
    f.add("tokenizer.ggml.eos_token_id", UINT32, sp.eos_id())
    f.add("tokenizer.ggml.unknown_token_id", UINT32, sp.unk_id())
    f.add("tokenizer.ggml.add_bos_token", BOOL, True)
    f.add("tokenizer.ggml.add_eos_token", BOOL, False)
    for torch_name, tensor in state.items():
        f.add_tensor(gguf_name(torch_name), tensor.numpy())
    f.write(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True, help="train.py's output folder")
    ap.add_argument("--gguf", required=True, help="the F32 GGUF file to write")
    ap.add_argument("--expected", required=True, help="the JSON file of PyTorch's greedy tokens")
    ap.add_argument("--name", default="graphrun-kjv")
    ap.add_argument("--prompt", default="And God said")
    ap.add_argument("--n-predict", type=int, default=48)
    args = ap.parse_args()

    checkpoint = torch.load(os.path.join(args.dir, "model.pt"))
    shape = LlamaShape(**checkpoint["shape"])
    sp = spm.SentencePieceProcessor(model_file=os.path.join(args.dir, "tokenizer.model"))
    state = {k: v.float() for k, v in checkpoint["state"].items()}
    write_gguf(args.gguf, shape, state, sp, args.name)

    prompt_ids = [sp.bos_id()] + sp.encode(args.prompt)
    result = {"prompt": args.prompt, "prompt_ids": prompt_ids, "n_predict": args.n_predict}
    model = Llama(shape).eval()
    for label, weights in (("f32", state),
                           ("q8_0", {k: torch.from_numpy(q8_0_round_trip(v.numpy())) if v.dim() == 2 else v
                                     for k, v in state.items()})):
        model.load_state_dict(weights)
        ids, gaps = model.greedy(prompt_ids, args.n_predict)
        result[label] = {"ids": ids, "text": sp.decode(prompt_ids + ids),
                         "smallest_top2_gap": min(gaps), "top2_gaps": [round(g, 4) for g in gaps]}
    with open(args.expected, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {args.gguf} and {args.expected}")
    for label in ("f32", "q8_0"):
        print(f"{label}: {result[label]['text']!r} (smallest top-2 gap {result[label]['smallest_top2_gap']:.3f})")


if __name__ == "__main__":
    main()
