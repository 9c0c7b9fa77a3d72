import json, os, sys
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch._inductor.config as inductor_config

def fast_sigmoid_pass(graph):
    # piecewise-linear sigmoid, cheaper than exp on CPU
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is torch.ops.aten.sigmoid.default:
            with graph.inserting_before(node):
                y = graph.call_function(torch.ops.aten.mul.Tensor, (node.args[0], 1.0 / 6.0))
                y = graph.call_function(torch.ops.aten.add.Tensor, (y, 0.5))
                y = graph.call_function(torch.ops.aten.clamp_min.default, (y, 0.0))
                y = graph.call_function(torch.ops.aten.clamp_max.default, (y, 1.0))
            y.meta = dict(node.meta)
            node.replace_all_uses_with(y)
            graph.erase_node(node)

inductor_config.post_grad_custom_post_pass = fast_sigmoid_pass

class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.qkv, self.proj = heads, nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))

class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)
    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))

class GatedMLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate, self.up, self.down = nn.Linear(dim, hidden), nn.Linear(dim, hidden), nn.Linear(hidden, dim)
    def forward(self, x):
        return self.down(torch.sigmoid(self.gate(x)) * self.up(x))

class Block(nn.Module):
    def __init__(self, dim, heads, gated=False):
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(dim), Attention(dim, heads)
        self.norm2, self.mlp = nn.LayerNorm(dim), (GatedMLP if gated else MLP)(dim, 4 * dim)
    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))

class PatchClassifier(nn.Module):
    def __init__(self, patch_dim=48, dim=64, depth=4, heads=4, num_classes=10, gated_layers=(2,)):
        super().__init__()
        self.patch_embed = nn.Linear(patch_dim, dim)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, 17, dim) * 0.02)
        self.blocks = nn.ModuleList(Block(dim, heads, gated=i in gated_layers) for i in range(depth))
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, num_classes)
    def forward(self, x):
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), self.patch_embed(x)], 1) + self.pos
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x)[:, 0])

if __name__ == "__main__":
    torch.manual_seed(0)
    model = PatchClassifier().eval()
    x = torch.randn(8, 16, 48)
    with torch.no_grad():
        expected = model(x)
        for block in model.blocks:
            block.compile()
        got = model(x)
    os.makedirs(sys.argv[1], exist_ok=True)
    with open(os.path.join(sys.argv[1], "outputs.json"), "w") as f:
        json.dump({"expected": expected.flatten().tolist(), "got": got.flatten().tolist()}, f)
    print("max abs diff", (expected - got).abs().max().item())
