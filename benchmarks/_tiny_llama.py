"""Build a tiny random Llama and its tokenizer in a directory, offline: `python _tiny_llama.py DIR`.

Run by the vLLM venv's Python (it has torch, transformers and tokenizers; the project's
venv does not). The tokenizer is one token per printable ASCII character plus newline,
and three special tokens for a ChatML template, so decoding generated ids and encoding
the text again gives the same ids: a client that sends a reply back extends the prompt
by exactly the generated tokens, and a rollout's turns chain into one token trajectory.
The attention head size is 32, the smallest vLLM's CPU attention takes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHARS = ["\n", *map(chr, range(0x20, 0x7F))]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build(directory: Path) -> None:
    """Write config, weights and tokenizer of the tiny model into `directory`."""
    vocab = {token: index for index, token in enumerate([*SPECIALS, *CHARS])}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<|endoftext|>"))
    core.add_special_tokens(SPECIALS)
    core.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<|endoftext|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(directory)
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=256,
        bos_token_id=vocab["<|endoftext|>"],
        eos_token_id=vocab["<|im_end|>"],
        pad_token_id=vocab["<|endoftext|>"],
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(directory, safe_serialization=True)


if __name__ == "__main__":
    build(Path(sys.argv[1]))
