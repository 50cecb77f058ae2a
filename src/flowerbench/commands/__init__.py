"""One module per command: its flags and the call into the stage (core/entry.py does the rest).

DVC runs `python -m flowerbench.commands.<stage>`; `python -m flowerbench <command>` (cli.py)
reaches the same `main`.  A command module imports only core/entry.py and the stage it runs, so an edit
to one command's flags reruns that stage alone (tests/test_dvc.py).
"""
