"""`python -m benchmarks [--quick] [--only 1,2,...]`: run the benchmarks, print the table.

`python -m benchmarks scale [--rollouts N | --quick]`: the read side at scale, beside DuckDB.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
import warnings
from collections.abc import Callable

from . import (
    appends,
    linerate,
    live_spans,
    memory,
    middleware,
    reading,
    reassembly,
    records,
    view,
)
from ._common import Row, format_table, machine, not_ready

SECTIONS: dict[str, tuple[str, Callable[[bool], list[Row]]]] = {
    "1": ("reassembly vs SDK accumulators", reassembly.run),
    "2": ("reading records vs json.loads + pydantic", records.run),
    "3": ("durable appends", appends.run),
    "4": ("middleware on uvicorn", middleware.run),
    "5": ("memory of a big stream", memory.run),
    "6": ("reading at scale: validate, long lines, stats memory", reading.run),
    "7": ("mcc view on a large directory", view.run),
    "8": ("capture at line rate: 200-chunk streams, h11 and httptools, Gym's reader", linerate.run),
    "10": ("live OTLP spans: capture with otlp_endpoint against capture alone", live_spans.run),
}


def main(argv: list[str] | None = None) -> int:
    """Run the selected sections and print a markdown table of ratios (or `scale`)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["scale"]:
        from . import scale

        return scale.main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="small sizes and few rounds (CI smoke run)"
    )
    parser.add_argument(
        "--only", default=",".join(SECTIONS), help="comma-separated sections (default: all)"
    )
    args = parser.parse_args(argv)
    # The SDKs' pydantic models warn while building some recorded events; not our concern here.
    warnings.simplefilter("ignore")
    rows: list[Row] = []
    started = time.perf_counter()
    for key in args.only.split(","):
        title, run = SECTIONS[key.strip()]
        print(f"running {key}: {title} ...", file=sys.stderr, flush=True)
        try:
            rows.extend(run(args.quick))
        except Exception as exc:  # one broken section must not hide the others
            traceback.print_exc()
            rows.append(not_ready(key, title, "see issue 8", f"{type(exc).__name__}: {exc}"))
    print(f"machine: {machine()}")
    print(
        f"command: python -m benchmarks{' --quick' if args.quick else ''}; {time.perf_counter() - started:.0f} s\n"
    )
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
