#!/usr/bin/env python3
"""fuzz/make_seeds.py — writes the seed corpora in fuzz/corpus/ (small valid inputs).

    python3 fuzz/make_seeds.py BUILD/graphrun

GGUF seeds come from `graphrun make-model` and `graphrun quantize` (tiny shapes) plus one file
written here byte by byte with every metadata value type, nested arrays, general.alignment 64 and
one tensor of each type. Graph seeds are the shipped graphs and a few small variations;
tokenizer seeds are an options byte followed by text; sampler seeds are bytes the fuzzer's data
provider reads as parameters and logits. Regenerating gives the same files."""
import json, os, struct, subprocess, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
corpus = os.path.join(root, "fuzz", "corpus")


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def every_type_gguf():
    # (type id, packed value) for each scalar type, then arrays, nested arrays and alignment 64.
    kv = [
        ("general.architecture", 8, gguf_string("llama")),
        ("general.alignment", 4, struct.pack("<I", 64)),
        ("u8", 0, struct.pack("<B", 200)), ("i8", 1, struct.pack("<b", -5)),
        ("u16", 2, struct.pack("<H", 60000)), ("i16", 3, struct.pack("<h", -300)),
        ("u32", 4, struct.pack("<I", 4000000000)), ("i32", 5, struct.pack("<i", -7)),
        ("f32", 6, struct.pack("<f", 1.5)), ("bool", 7, struct.pack("<B", 1)),
        ("u64", 10, struct.pack("<Q", 2**63)), ("i64", 11, struct.pack("<q", -2**40)),
        ("f64", 12, struct.pack("<d", -2.25)),
        ("strings", 9, struct.pack("<IQ", 8, 3) + gguf_string("<s>") + gguf_string("▁a") + gguf_string("")),
        ("nested", 9, struct.pack("<IQ", 9, 2) + struct.pack("<IQ", 5, 2) + struct.pack("<ii", 1, -1)
                      + struct.pack("<IQ", 6, 1) + struct.pack("<f", 0.25)),
    ]
    # name, ggml type, ne, bytes
    f16_one = struct.pack("<H", 0x3C00)
    tensors = [
        ("f32", 0, [4, 2], struct.pack("<8f", *range(8))),
        ("f16", 1, [3], f16_one * 3),
        ("q8_0", 8, [32], f16_one + bytes(range(32))),
        ("q4_0", 2, [32, 2], (f16_one + bytes(range(16))) * 2),
    ]
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for key, t, value in kv:
        out += gguf_string(key) + struct.pack("<I", t) + value
    offset, data = 0, b""
    for name, t, ne, raw in tensors:
        out += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", t, offset)
        padded = raw + bytes((-len(raw)) % 64)
        data += padded
        offset += len(padded)
    out += bytes((-len(out)) % 64)
    return out + data


def gguf_seeds(graphrun):
    d = os.path.join(corpus, "gguf")
    tiny = os.path.join(d, "make-model-tiny.gguf")
    subprocess.run([graphrun, "make-model", tiny, "--embd", "8", "--layers", "1", "--heads", "2", "--kv-heads", "1",
                    "--ff", "16", "--vocab", "259"], check=True, stdout=subprocess.DEVNULL)
    f16 = os.path.join(d, "make-model-f16.gguf")
    subprocess.run([graphrun, "make-model", f16, "--embd", "32", "--layers", "1", "--heads", "2", "--kv-heads", "1",
                    "--ff", "32", "--vocab", "259", "--type", "f16"], check=True, stdout=subprocess.DEVNULL)
    for q in ("q8_0", "q4_0"):
        subprocess.run([graphrun, "quantize", f16, os.path.join(d, "quantized-" + q + ".gguf"), q], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    write(os.path.join(d, "every-type.gguf"), every_type_gguf())
    write(os.path.join(d, "header-only.gguf"), b"GGUF" + struct.pack("<IQQ", 3, 0, 0))


def graph_seeds():
    d = os.path.join(corpus, "graph")
    for src in ("models/llama.json", "models/examples/llama-geglu.json"):
        with open(os.path.join(root, src)) as f:
            write(os.path.join(d, os.path.basename(src)), f.read().encode())
    small = {
        "two-nodes.json": {"architecture": "llama", "inputs": ["tokens", "positions"], "nodes": [
            {"id": "x", "op": "embedding", "in": ["tokens", "token_embd.weight"]},
            {"id": "logits", "op": "matmul", "in": ["x", "output.weight"]}], "outputs": ["logits"]},
        "repeat-and-fallback.json": {"architecture": "llama", "symbols": {"n": {"key": "llama.block_count"},
                                                                             "half": {"div": ["n", 2]}},
            "inputs": ["tokens", "positions"], "nodes": [
                {"id": "x", "op": "embedding", "in": ["tokens", "token_embd.weight"]},
                {"repeat": "n", "index": "L", "prefix": "blk.{L}.", "nodes": [
                    {"id": "n", "op": "rmsnorm", "in": ["x", "blk.{L}.attn_norm.weight"], "eps": 1e-5},
                    {"id": "x", "op": "add", "in": ["x", "n"]}]},
                {"id": "logits", "op": "matmul", "in": ["x", {"weight": "output.weight", "or": "token_embd.weight"}]}],
            "outputs": ["logits"]},
    }
    for name, g in small.items():
        write(os.path.join(d, name), json.dumps(g, indent=1).encode())


def tokenizer_seeds():
    d = os.path.join(corpus, "tokenizer")
    texts = ["In the beginning God created the heaven and the earth.", "Hello world, héllo wörld! 123 4567",
             "<s> and </s> are control tokens; <|endoftext|> <|user|> too", "  leading spaces\tand\ttabs\n\nnewlines ",
             "日本語のテキスト и русский текст, emoji 🙂👍🏽", "▁already▁escaped▁", "caf\u00e9 vs cafe\u0301",
             b"bad bytes \xc0\xaf \xff\xfe \xed\xa0\x80 end"]
    for i, text in enumerate(texts):
        raw = text if isinstance(text, bytes) else text.encode("utf-8")
        for options in (0, 1, 14, 15):  # spm / bpe, and with bos + parse_special + special
            write(os.path.join(d, "text%d-opt%d" % (i, options)), bytes([options]) + raw)
    write(os.path.join(d, "invalid-utf8"), bytes([1]) + b"\xc0\xaf\xe0\x80\xaf\xf8\x88\x80\x80\x80 ok")


def sampler_seeds():
    d = os.path.join(corpus, "sampler")
    for i in range(6):
        data = bytes((j * 37 + i * 101) % 256 for j in range(64 + 96 * i))
        write(os.path.join(d, "bytes%d" % i), data)
    # Greedy (temperature bits 0) with a small vocabulary, and one with every float as 0x7f.
    write(os.path.join(d, "zeros"), bytes(256))
    write(os.path.join(d, "high"), b"\x7f" * 512)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for sub in ("gguf", "graph", "tokenizer", "sampler"):
        os.makedirs(os.path.join(corpus, sub), exist_ok=True)
    gguf_seeds(sys.argv[1])
    graph_seeds()
    tokenizer_seeds()
    sampler_seeds()
