#!/usr/bin/env bash
# Print the TF_CONFIG of this Slurm task: every node of the job is a worker on $FLOWERBENCH_PORT,
# this task is worker $SLURM_PROCID.  One task per node (sbatch --ntasks-per-node=1).
set -euo pipefail
port="${FLOWERBENCH_PORT:-12345}"
: "${SLURM_JOB_NODELIST:?not inside a Slurm job (SLURM_JOB_NODELIST unset)}"
: "${SLURM_PROCID:?not inside a Slurm task (SLURM_PROCID unset)}"
if command -v scontrol >/dev/null 2>&1; then
  mapfile -t nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
else  # plain comma-separated list (no bracket ranges) when scontrol is not available
  IFS=, read -r -a nodes <<< "$SLURM_JOB_NODELIST"
fi
workers=""
for n in "${nodes[@]}"; do workers+="${workers:+,}\"$n:$port\""; done
printf '{"cluster": {"worker": [%s]}, "task": {"type": "worker", "index": %d}}\n' "$workers" "$SLURM_PROCID"
