"""`python -m model_call_capture.cli`: the same as `mcc`."""

from . import main

main()
