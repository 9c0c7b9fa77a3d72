"""``pt2doctor run --profile -- python text_loader.py``: a text classifier evaluated over a
DataLoader whose Dataset tokenizes each sentence in Python (words hashed character by
character, as a hand-rolled tokenizer does) and whose ``collate_fn`` pads the batch; the
model compiled (tests/integration/test_profile.py: data_loading's second program).

- As written, the DataLoader has no workers (``num_workers=0``): every step waits while its
  batch is tokenized, in this process.
- ``--workers N``: the DataLoader's ``num_workers``. The sentences depend on the index only,
  so the batches, their order and the printed checksum are the same.
"""

import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

WORKERS = int(sys.argv[sys.argv.index("--workers") + 1]) if "--workers" in sys.argv else 0
VOCAB, LENGTH, DIM = 4096, 64, 64
WORDS = ["the", "model", "reads", "every", "token", "of", "a", "sentence", "before", "it", "decides", "which", "of", "the", "ten", "classes", "fits", "best", "and", "then", "the", "next", "batch", "arrives"]  # fmt: skip


def token(word: str) -> int:
    code = 7
    for char in word:  # a rolling hash, one character at a time
        code = (code * 31 + ord(char)) % 1_000_003
    return 1 + code % (VOCAB - 1)


class Sentences(Dataset[tuple[list[int], int]]):
    def __len__(self) -> int:
        return 32 * 50

    def __getitem__(self, i: int) -> tuple[list[int], int]:
        count = 24 + (i * 13) % 40
        words = [WORDS[(i * 7 + k * 11) % len(WORDS)] + str(k % 3) for k in range(count)]
        return [token(word) for word in words], i % 10


def pad(batch: list[tuple[list[int], int]]) -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.zeros(len(batch), LENGTH, dtype=torch.long)
    for row, (tokens, _) in enumerate(batch):
        ids[row, : len(tokens)] = torch.tensor(tokens[:LENGTH])
    return ids, torch.tensor([label for _, label in batch])


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM, padding_idx=0)
        self.head = nn.Sequential(nn.Linear(DIM, 128), nn.GELU(), nn.Linear(128, 10))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        mask = (ids > 0).unsqueeze(-1).float()
        pooled = (self.embed(ids) * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.head(pooled)


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)  # one core for the step; a worker gets the other
    compiled = torch.compile(Classifier().eval())
    loader = DataLoader(Sentences(), batch_size=32, collate_fn=pad, num_workers=WORKERS,
                        persistent_workers=WORKERS > 0)  # fmt: skip
    total, correct = 0.0, 0
    with torch.no_grad():
        for ids, labels in loader:
            logits = compiled(ids)
            total += float(logits.double().sum())
            correct += int((logits.argmax(dim=1) == labels).sum())
    print(f"checksum {total:.6f} correct {correct}")


if __name__ == "__main__":
    main()
