import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class GCNLayer(nn.Module):
    """Mean-aggregation message passing, written by hand (no PyG)."""

    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.lin_self = nn.Linear(dim_in, dim_out)
        self.lin_nbr = nn.Linear(dim_in, dim_out)

    def forward(self, x, edge_index):
        src, dst = edge_index
        num_nodes = x.size(0)
        msg = self.lin_nbr(x)[src]
        agg = torch.zeros(num_nodes, msg.size(1), dtype=msg.dtype)
        agg.index_add_(0, dst, msg)
        deg = torch.zeros(num_nodes, dtype=msg.dtype).index_add_(0, dst, torch.ones_like(dst, dtype=msg.dtype))
        agg = agg / deg.clamp(min=1).unsqueeze(1)
        return self.lin_self(x) + agg


class GNN(nn.Module):
    def __init__(self, dim_in, hidden, n_classes):
        super().__init__()
        self.conv1 = GCNLayer(dim_in, hidden)
        self.conv2 = GCNLayer(hidden, hidden)
        self.head = nn.Linear(hidden, n_classes)

    def forward(self, x, edge_index):
        h = F.relu(self.conv1(x, edge_index))
        h = F.relu(self.conv2(h, edge_index))
        return self.head(h)


def random_graph(num_nodes, num_edges, dim):
    x = torch.randn(num_nodes, dim)
    src = torch.randint(0, num_nodes, (num_edges,))
    dst = torch.randint(0, num_nodes, (num_edges,))
    # make sure the last node appears so the graph really has num_nodes nodes
    src[0] = num_nodes - 1
    edge_index = torch.stack([src, dst])
    y = torch.randint(0, 4, (num_nodes,))
    return x, edge_index, y


def main():
    dim = 16
    sizes = [40, 55, 70, 85, 100, 115, 130, 145, 160, 175, 190, 205]
    graphs = [random_graph(n, 4 * n, dim) for n in sizes]

    model = GNN(dim, 32, 4)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    cmodel = torch.compile(model)

    times = []
    for epoch in range(3):
        total = 0.0
        for x, edge_index, y in graphs:
            t0 = time.perf_counter()
            out = cmodel(x, edge_index)
            loss = F.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            times.append(time.perf_counter() - t0)
            total += loss.item()
        print(f"epoch {epoch} mean loss {total / len(graphs):.4f}")

    steady = sorted(times[len(graphs):])  # epochs 1..2
    print(f"ms_per_step: {1000 * steady[len(steady) // 2]:.3f}")
    print(f"result: {total / len(graphs):.4g}")


if __name__ == "__main__":
    main()
