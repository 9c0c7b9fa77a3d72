import json, os, sys
import torch
import torch.nn as nn
import torch._inductor.config as inductor_config
from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files

class TanhViaSigmoid(CustomGraphPass):
    """tanh(x) = 2 * sigmoid(2x) - 1; sigmoid vectorizes better in the CPU backend."""
    def __call__(self, graph):
        aten = torch.ops.aten
        for node in list(graph.nodes):
            if node.op == "call_function" and node.target is aten.tanh.default:
                with graph.inserting_before(node):
                    s = graph.call_function(aten.sigmoid.default, (node.args[0],))
                    y = graph.call_function(aten.sub.Tensor, (graph.call_function(aten.mul.Tensor, (s, 2.0)), 1.0))
                y.meta = dict(node.meta)
                node.replace_all_uses_with(y)
                graph.erase_node(node)
    def uuid(self):
        return get_hash_for_files((__file__,))

inductor_config.post_grad_custom_pre_pass = TanhViaSigmoid()

class EncoderLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.ffn = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
    def forward(self, x, pad_mask):
        x = self.ln1(x + self.attn(x, x, x, key_padding_mask=pad_mask, need_weights=False)[0])
        return self.ln2(x + self.ffn(x))

class ClassificationHead(nn.Module):
    def __init__(self, dim, num_labels):
        super().__init__()
        self.dense, self.dropout, self.out_proj = nn.Linear(dim, dim), nn.Dropout(0.1), nn.Linear(dim, num_labels)
    def forward(self, features):
        x = self.dropout(features[:, 0])
        x = torch.tanh(self.dense(x))
        return self.out_proj(self.dropout(x))

class TextClassifier(nn.Module):
    def __init__(self, vocab=1000, dim=64, heads=4, depth=2, max_len=32, num_labels=3):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, dim, padding_idx=0), nn.Embedding(max_len, dim)
        self.layers = nn.ModuleList(EncoderLayer(dim, heads) for _ in range(depth))
        self.head = ClassificationHead(dim, num_labels)
    def forward(self, input_ids):
        pad_mask = input_ids == 0
        x = self.tok(input_ids) + self.pos(torch.arange(input_ids.shape[1]))
        for layer in self.layers:
            x = layer(x, pad_mask)
        return self.head(x)

if __name__ == "__main__":
    torch.manual_seed(0)
    model = TextClassifier().eval()
    ids = torch.randint(1, 1000, (6, 32))
    ids[:, 0] = 1  # [CLS]
    for i, n in enumerate([32, 20, 27, 9, 32, 14]):
        ids[i, n:] = 0
    with torch.no_grad():
        expected = model(ids)
        model.forward = torch.compile(model.forward)
        got = model(ids)
    os.makedirs(sys.argv[1], exist_ok=True)
    with open(os.path.join(sys.argv[1], "outputs.json"), "w") as f:
        json.dump({"expected": expected.flatten().tolist(), "got": got.flatten().tolist()}, f)
    print("max abs diff", (expected - got).abs().max().item())
