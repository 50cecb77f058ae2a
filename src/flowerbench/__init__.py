"""flowerbench: a DVC pipeline that re-runs, measures and explains the
"multi-GPU training with MirroredStrategy" study (ResNet50 on flower_photos).

Run `python -m flowerbench --help`, or `make help` from the repository root.
"""

__version__ = "0.1.0"
