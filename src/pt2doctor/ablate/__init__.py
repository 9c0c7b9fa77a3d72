"""``pt2doctor ablate``: the backend ladder, trials, script mode, classification, repro, report and views."""
