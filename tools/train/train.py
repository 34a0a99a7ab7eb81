"""Train graphrun's shipped model: a small Llama on the King James Bible.

    /usr/bin/python3 tools/train/train.py --out build/train      (tools/train/run.sh does it all)

Steps, all seeded so a rerun gives the same tokenizer and the same loss curve on the same
machine (PyTorch's CPU kernels may round differently on another CPU):
  1. corpus: the 1,189 chapters; every 20th chapter is held out for validation.
  2. tokenizer: a SentencePiece BPE vocabulary trained on the training verses, with byte
     fallback and Llama's settings (identity normalisation, a dummy space prefix, split digits).
  3. token streams: each chapter is [BOS] + its verses joined by spaces.
  4. training: random windows of n_ctx + 1 tokens, AdamW, linear warm-up then cosine decay.
Writes OUT/tokenizer.model, OUT/model.pt (weights, shape) and OUT/train-log.json.
"""
import argparse
import json
import math
import os
import time

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F

from corpus import read_kjv_chapters
from model import Llama, LlamaShape

VALIDATION_EVERY = 20  # chapter i is held out when i % 20 == 19


def train_tokenizer(verses: list[str], out: str, vocab: int) -> spm.SentencePieceProcessor:
    text_path = os.path.join(out, "train-verses.txt")
    with open(text_path, "w") as f:
        f.write("\n".join(verses) + "\n")
    spm.SentencePieceTrainer.train(
        input=text_path, model_prefix=os.path.join(out, "tokenizer"), model_type="bpe",
        vocab_size=vocab, character_coverage=1.0, byte_fallback=True, split_digits=True,
        add_dummy_prefix=True, remove_extra_whitespaces=False, normalization_rule_name="identity",
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, num_threads=2,
        minloglevel=2)
    return spm.SentencePieceProcessor(model_file=os.path.join(out, "tokenizer.model"))


def token_stream(sp, chapters: list[list[str]]) -> np.ndarray:
    ids = []
    for verses in chapters:
        ids.append(sp.bos_id())
        ids.extend(sp.encode(" ".join(verses)))
    return np.array(ids, dtype=np.int64)


def windows(stream: np.ndarray, starts: np.ndarray, length: int) -> torch.Tensor:
    return torch.from_numpy(np.stack([stream[s:s + length] for s in starts]))


def learning_rate(step: int, steps: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))  # decays to peak/10


@torch.no_grad()
def mean_loss(model, stream: np.ndarray, n_ctx: int, n_windows: int, rng) -> float:
    model.eval()
    starts = rng.integers(0, len(stream) - n_ctx - 1, n_windows)
    losses = []
    for chunk in np.array_split(starts, max(1, n_windows // 16)):
        batch = windows(stream, chunk, n_ctx + 1)
        logits = model(batch[:, :-1])
        losses.append(F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten()).item())
    model.train()
    return float(np.mean(losses))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for the tokenizer, weights and log")
    ap.add_argument("--steps", type=int, default=700)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    for field, value in LlamaShape().to_dict().items():
        ap.add_argument("--" + field.replace("_", "-"), type=type(value), default=value)
    args = ap.parse_args()
    shape = LlamaShape(**{f: getattr(args, f) for f in LlamaShape().to_dict()})
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)

    chapters = read_kjv_chapters()
    train_chapters = [c for i, c in enumerate(chapters) if i % VALIDATION_EVERY != VALIDATION_EVERY - 1]
    val_chapters = [c for i, c in enumerate(chapters) if i % VALIDATION_EVERY == VALIDATION_EVERY - 1]
    sp = train_tokenizer([v for c in train_chapters for v in c], args.out, shape.vocab)
    train_ids, val_ids = token_stream(sp, train_chapters), token_stream(sp, val_chapters)
    print(f"corpus: {len(train_chapters)} training chapters ({len(train_ids)} tokens), "
          f"{len(val_chapters)} validation chapters ({len(val_ids)} tokens)", flush=True)

    model = Llama(shape)
    n_params = sum(p.numel() for p in model.parameters())
    matrices = [p for p in model.parameters() if p.dim() == 2]
    vectors = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": matrices, "weight_decay": 0.1},
                             {"params": vectors, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95))
    print(f"model: {n_params} parameters, {shape}", flush=True)

    log = {"shape": shape.to_dict(), "parameters": n_params, "args": vars(args), "steps": []}
    eval_rng_seed = args.seed + 1  # the same evaluation windows every time
    started = time.time()
    window_loss = []
    for step in range(args.steps):
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, args.steps, args.lr, args.warmup)
        starts = rng.integers(0, len(train_ids) - shape.n_ctx - 1, args.batch)
        batch = windows(train_ids, starts, shape.n_ctx + 1)
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        window_loss.append(loss.item())

        last = step + 1 == args.steps
        if (step + 1) % 50 == 0 or last:
            elapsed = time.time() - started
            entry = {"step": step + 1, "train_loss": float(np.mean(window_loss)),
                     "lr": opt.param_groups[0]["lr"], "seconds": round(elapsed, 1),
                     "tokens_per_second": round((step + 1) * args.batch * shape.n_ctx / elapsed)}
            window_loss.clear()
            if (step + 1) % 250 == 0 or last:
                eval_rng = np.random.default_rng(eval_rng_seed)
                entry["val_loss"] = mean_loss(model, val_ids, shape.n_ctx, 64, eval_rng)
                entry["train_eval_loss"] = mean_loss(model, train_ids, shape.n_ctx, 64, eval_rng)
            log["steps"].append(entry)
            print(json.dumps(entry), flush=True)

    log["training_seconds"] = round(time.time() - started, 1)
    torch.save({"shape": shape.to_dict(), "state": model.state_dict()}, os.path.join(args.out, "model.pt"))
    with open(os.path.join(args.out, "train-log.json"), "w") as f:
        json.dump(log, f, indent=1)
    print(f"trained {args.steps} steps in {log['training_seconds']} s -> {args.out}/model.pt", flush=True)


if __name__ == "__main__":
    main()
