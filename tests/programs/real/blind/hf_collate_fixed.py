import time

import torch
from torch.utils.data import DataLoader, Dataset
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)

PAD_ID = 0


class ReviewDataset(Dataset):
    """Pre-tokenized 'reviews' of different lengths with a binary label."""

    def __init__(self, n=90, vocab=1000, min_len=8, max_len=64):
        g = torch.Generator().manual_seed(0)
        self.items = []
        for _ in range(n):
            length = int(torch.randint(min_len, max_len + 1, (1,), generator=g))
            ids = torch.randint(1, vocab, (length,), generator=g)
            label = int(ids[:4].sum() % 2)
            self.items.append((ids, label))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def collate(batch):
    # pad every batch to the same length: one static shape for the compiler
    longest = 64
    input_ids = torch.full((len(batch), longest), PAD_ID, dtype=torch.long)
    attention_mask = torch.zeros((len(batch), longest), dtype=torch.long)
    for row, (ids, _) in enumerate(batch):
        input_ids[row, : len(ids)] = ids
        attention_mask[row, : len(ids)] = 1
    labels = torch.tensor([label for _, label in batch])
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def main():
    config = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=128, num_labels=2,
                        problem_type="single_label_classification")
    model = BertForSequenceClassification(config)
    model = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)

    train_loader = DataLoader(ReviewDataset(), batch_size=8, shuffle=True, collate_fn=collate, drop_last=True,
                              generator=torch.Generator().manual_seed(0))
    eval_loader = DataLoader(ReviewDataset(n=24), batch_size=8, collate_fn=collate)

    times = []
    for epoch in range(2):
        model.train()
        for batch in train_loader:
            t0 = time.perf_counter()
            loss = model(**batch).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
            times.append(time.perf_counter() - t0)
        print(f"epoch {epoch} last train loss {loss.item():.4f}")

    model.eval()
    correct = 0
    with torch.no_grad():
        for batch in eval_loader:
            logits = model(**batch).logits
            correct += int((logits.argmax(-1) == batch["labels"]).sum())
    print(f"eval accuracy {correct / len(eval_loader.dataset):.3f}")

    steady = sorted(times[len(train_loader):])  # second epoch
    print(f"ms_per_step: {1000 * steady[len(steady) // 2]:.3f}")
    print(f"result: {loss.item():.4g}")


if __name__ == "__main__":
    main()
