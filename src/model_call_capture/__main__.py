"""`python -m model_call_capture`: the same as `mcc`."""

from .cli import main

main()
