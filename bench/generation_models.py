"""The generation bench's two decoders, built from transformers configs and written by
save_pretrained (seeded, so every run measures the same weights): a Llama-style one with
grouped-query attention and a GPT-2-style one, 8 layers, hidden 512.

    python bench/generation_models.py FOLDER   -> FOLDER/llama-gqa, FOLDER/gpt2
"""

import os
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM


def llama_gqa():
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=32000, hidden_size=512, intermediate_size=1408, num_hidden_layers=8,
        num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=1024))


def gpt2():
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(vocab_size=50257, n_embd=512, n_layer=8, n_head=8,
                                      n_positions=1024))


def main():
    folder = sys.argv[1]
    for name, make in (("llama-gqa", llama_gqa), ("gpt2", gpt2)):
        path = os.path.join(folder, name)
        if not os.path.isfile(os.path.join(path, "config.json")):
            make().save_pretrained(path)
        print(path)


if __name__ == "__main__":
    main()
