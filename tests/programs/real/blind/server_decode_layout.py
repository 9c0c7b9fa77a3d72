import numpy as np
import torch, torch.nn as nn

class Ranker(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(32, 64)
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(64, 16))
    def forward(self, x):
        return self.head(self.emb(x.float())).softmax(-1)

torch.manual_seed(0)  # added for the test: the checksum below compares the two versions
model = Ranker().eval()
cmodel = torch.compile(model)

def warmup():
    dummy = torch.zeros(8, 32)
    with torch.inference_mode():
        cmodel(dummy)

def decode(payload):
    # features arrive feature-major from the upstream service
    arr = np.asarray(payload)            # float64
    return torch.from_numpy(arr).T       # (8, 32), float64, non-contiguous

def handle(payload):
    x = decode(payload)
    with torch.no_grad():
        return cmodel(x)

def serve():
    rng = np.random.default_rng(0)
    for i in range(20):
        payload = rng.standard_normal((32, 8)).tolist()
        out = handle(payload)
    print("served", out.shape)
    print("checksum", round(float(out.double().sum()), 4), round(float(out[0, 0]), 4))

if __name__ == "__main__":
    warmup()
    serve()
