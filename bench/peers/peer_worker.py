"""The one way the PyTorch peers time a setting: each thread setting runs in its own worker
process (torch reads its thread environment once, at import), whose last stdout line is one JSON
value. Used by torch_gpt2_bench.py, torch_hf_bench.py and torch_train_bench.py."""
import json
import os
import subprocess
import sys


def run_setting(script, flags, blas_threads, torch_threads, label, keep_stderr=False):
    """Runs `python3 script --worker FLAGS` with OPENBLAS_NUM_THREADS = blas_threads and
    OMP/MKL_NUM_THREADS = torch_threads; returns the JSON value of its last stdout line. A failed
    worker ends the benchmark with one line naming `label` (and the worker's stderr when captured).
    keep_stderr: the worker's stderr goes to this process's stderr (progress) instead of the message."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(blas_threads), OMP_NUM_THREADS=str(torch_threads), MKL_NUM_THREADS=str(torch_threads))
    command = [sys.executable, os.path.abspath(script), "--worker", *flags]
    completed = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=None if keep_stderr else subprocess.PIPE, text=True)
    if completed.returncode != 0:
        why = f"exit {completed.returncode}" if keep_stderr else completed.stderr.strip()
        sys.exit(f"worker {label} failed: {why}")
    lines = completed.stdout.strip().splitlines()
    if not lines:
        sys.exit(f"worker {label} printed nothing")
    return json.loads(lines[-1])
