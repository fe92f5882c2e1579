"""Models written with cudalab's ops, each beside the same model in plain PyTorch (same parameter
names, so one state_dict loads into either): what the ops give in a whole training step."""
