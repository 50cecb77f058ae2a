"""The benchmarks, importable as a package (no path edits): `python -m benchmarks.run` (`make bench`),
`python -m benchmarks.ksteps` (`make bench-ksteps`), `python -m benchmarks.gpu_check` (`make
gpu-check`), `python -m benchmarks.window`, `python -m benchmarks.input_pipeline`,
`python -m benchmarks.autotune_probe`.  benchmarks/blog_port.py (the blog's code, ported) and
benchmarks/ceiling.py are also started as scripts, each in a process of its own."""
