"""pt2doctor: explain and verify torch.compile."""

__version__ = "0.1.0"
