"""Side-by-side benchmarks of model-call-capture: `python -m benchmarks [--quick]`.

Every figure is a ratio of two things measured in the same run on the same machine
(ours against the official SDKs, a pydantic baseline, the raw fsync floor, capture off),
because the machines this runs on are shared and noisy. See docs/performance.md.
"""
