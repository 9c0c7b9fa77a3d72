import torch, torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 32)
    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))

net = Net()

@torch.compile
def train_step(x, lr_scale, temp):
    h = net(x)
    norm = h.norm()
    h = h * torch.clamp(10.0 / norm, max=1.0)   # same as: if norm > 10: h *= 10/norm
    logits = h / temp
    return (logits * lr_scale).sum()

def main():
    temps = [1.0]
    for step in range(12):
        lr_scale = 1.0 - step / 12
        x = torch.randn(16, 32)
        if step % 3 == 0:
            temps.append(temps[-1] * 0.9)
        loss = train_step(x, lr_scale, temps[-1])
        loss.backward()
    print("done", loss.item())

if __name__ == "__main__":
    main()
