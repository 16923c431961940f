"""The small model of our own that bench section 20 tunes (bench/applied_promise.py)."""

import torch


class Encoder(torch.nn.Module):
    """A small text encoder a user might write: embeddings, two transformer layers, a head."""

    def __init__(self, vocab=1000, width=128, heads=4, layers=2, classes=4):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        layer = torch.nn.TransformerEncoderLayer(width, heads, 4 * width, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(width, classes)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)).mean(dim=1))
