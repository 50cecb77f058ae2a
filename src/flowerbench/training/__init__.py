"""Training one variant in one process: the process set-up (runtime), the replicas' devices and
strategy, their placement on cores, the network, the fit and custom loops, and the multi-worker job.
What the measured processes run; it imports no measuring, analysis or report code."""
