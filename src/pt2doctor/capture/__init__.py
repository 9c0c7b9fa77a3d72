"""Capture: run a program under probes and write a run directory."""
