"""A small model of token ids and their mask, whose length varies (issue 52): shared by the tests
of the export and of the Python API."""

import torch


class TokenPool(torch.nn.Module):
    """Embeds the ids and averages them over the mask, then a Linear: any length runs."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(100, 8)
        self.out = torch.nn.Linear(8, 3)

    def forward(self, input_ids, attention_mask):
        mask = attention_mask.unsqueeze(-1).to(torch.float32)
        return self.out((self.embed(input_ids) * mask).sum(1) / mask.sum(1).clamp(min=1.0))
