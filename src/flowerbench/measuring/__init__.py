"""Measuring: the rounds' scheduler (warm, hold, release one epoch at a time), their balanced order
and record, and the host-wide measurement lock.  It starts training as processes and imports no
analysis (docs/pipeline.md)."""
