"""Small decoder LMs built from transformers configs, for the generation tests: a Llama-style one
with grouped-query attention and a GPT-2-style one; and a factory that is not an LM."""

import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM


def tiny_llama(max_positions=128):
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=max_positions))


def long_llama():
    """Positions enough for a static cache larger than any machine's memory."""
    return tiny_llama(max_positions=4_000_000)


def tiny_gpt2():
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(vocab_size=512, n_embd=64, n_layer=2, n_head=4,
                                      n_positions=128))


def not_an_lm():
    return torch.nn.Linear(4, 4)
