#!/usr/bin/env python3
"""Writes tests/fixtures/llm/tiny-llama.gguf: a tiny random-weight llama model for llama.cpp's
llama-server, the LLM endpoint of the LLM tests (issue 46). It knows nothing: it exists so that a
real OpenAI-compatible server answers real requests with real logprobs, fast, on any machine.

    python3 -m venv ~/.cache/fairpipe/gguf-venv
    ~/.cache/fairpipe/gguf-venv/bin/pip install gguf==0.19.0     # (numpy comes with it)
    ~/.cache/fairpipe/gguf-venv/bin/python scripts/make_tiny_llama.py [OUT.gguf]

The output is the same bytes on every run (a seeded generator, no time stamps in the file), so
scripts/llama_smoke.py can check that the checked-in file is what this script writes.

The model:
- architecture `llama`: 2 blocks, 32 wide, 4 heads, feed-forward 64, float32, context 4096;
- a SentencePiece-style vocabulary (`tokenizer.ggml.model = "llama"`): `<unk>`, `<s>`, `</s>`, the
  256 byte tokens `<0x00>`…`<0xFF>` (any text tokenizes through them), then the whole answer
  words `yes no Yes No` and their `▁`-prefixed forms (`▁` is SentencePiece's space), with the
  scores that make the tokenizer merge them whole, and the piece `es` their merges pass through;
- a one-line chat template: `role: content` lines, then `assistant:`;
- weights that prefer the answer words: every token embedding carries a constant in dimension 0,
  which the final norm keeps, and the output rows of the eight answer words weigh that dimension
  heavily, so the next token is nearly always an answer word; which one depends on the prompt
  through one random direction (+ for the yes forms, - for the no forms), so P(yes) differs
  between prompts. The four yes forms share one output row and the four no forms another, so
  they have equal logprobs and the grammar's greedy answer is `yes` exactly when P(yes) > 1/2.
Served with scripts/../tests/fixtures/llm/yes-no.gbnf as the grammar, every answer is `yes` or `no`.
"""
import sys
from pathlib import Path

import numpy as np
from gguf import GGUFWriter, TokenType

N_EMBD = 32
N_HEAD = 4
N_FF = 64
N_LAYER = 2
N_CTX = 4096
SEED = 46
# Calibrated by hand against llama-server (scripts/llama_smoke.py's prompts): the answer words take
# all but ~1e-3 of the next-token mass, and P(yes) spreads around 1/2 between prompts.
BLOCK_SCALE = 0.3  # sd of the attention and feed-forward weights
ANSWER_WEIGHT = 8.0  # the answer rows' weight on the constant dimension
LEAN = 4.0  # the yes rows' (+) and no rows' (-) weight on one random direction
NO_SHIFT = 13.0  # added to the no rows' weight on the constant dimension (centres P(yes))
OTHER_SCALE = 0.1  # sd of the other output rows
# Answer words first with the highest merge scores; `es` is the piece `y`/`Y` + `es` merges through.
ANSWERS = ["yes", "no", "Yes", "No", "\u2581yes", "\u2581no", "\u2581Yes", "\u2581No"]
PIECES = [("es", -1.0)]
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def vocabulary():
    """Token texts, scores and types, in id order."""
    tokens = [("<unk>", 0.0, TokenType.UNKNOWN), ("<s>", 0.0, TokenType.CONTROL), ("</s>", 0.0, TokenType.CONTROL)]
    tokens += [(f"<0x{b:02X}>", 0.0, TokenType.BYTE) for b in range(256)]
    tokens += [(word, 0.0, TokenType.NORMAL) for word in ANSWERS]
    tokens += [(piece, score, TokenType.NORMAL) for piece, score in PIECES]
    return tokens


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "tests/fixtures/llm/tiny-llama.gguf"
    rng = np.random.default_rng(SEED)
    tokens = vocabulary()
    n_vocab = len(tokens)

    def normal(shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    writer = GGUFWriter(str(out), "llama")
    writer.add_name("fairpipe tiny random llama (test fixture)")
    writer.add_context_length(N_CTX)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD)
    writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(0)  # all float32

    writer.add_tokenizer_model("llama")
    writer.add_token_list([text for text, _, _ in tokens])
    writer.add_token_scores([score for _, score, _ in tokens])
    writer.add_token_types([int(kind) for _, _, kind in tokens])
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_add_space_prefix(True)
    writer.add_chat_template(CHAT_TEMPLATE)

    # numpy shapes are ggml's reversed: a ggml {n_embd, n_vocab} matrix is (n_vocab, n_embd) here.
    embd = normal((n_vocab, N_EMBD), 1.0)
    embd[:, 0] = 4.0  # the constant the answer rows read
    writer.add_tensor("token_embd.weight", embd)
    for block in range(N_LAYER):
        p = f"blk.{block}."
        writer.add_tensor(p + "attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(p + name + ".weight", normal((N_EMBD, N_EMBD), BLOCK_SCALE))
        writer.add_tensor(p + "ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        writer.add_tensor(p + "ffn_gate.weight", normal((N_FF, N_EMBD), BLOCK_SCALE))
        writer.add_tensor(p + "ffn_up.weight", normal((N_FF, N_EMBD), BLOCK_SCALE))
        writer.add_tensor(p + "ffn_down.weight", normal((N_EMBD, N_FF), BLOCK_SCALE))
    writer.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    output = normal((n_vocab, N_EMBD), OTHER_SCALE)
    output[:, 0] = 0.0
    lean = normal(N_EMBD, 1.0)
    lean[0] = 0.0
    lean *= LEAN / np.linalg.norm(lean)
    yes_row = normal(N_EMBD, OTHER_SCALE) + lean
    yes_row[0] = ANSWER_WEIGHT
    no_row = normal(N_EMBD, OTHER_SCALE) - lean
    no_row[0] = ANSWER_WEIGHT + NO_SHIFT
    for i, (text, _, _) in enumerate(tokens):
        if text in ANSWERS:
            output[i] = yes_row if text.replace("\u2581", "").lower() == "yes" else no_row
    writer.add_tensor("output.weight", output)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"{out}: {n_vocab} tokens, {out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
