"""`mcc compact DIR`: rewrite a finished run's segments into the shared one-file-per-rollout layout."""

from __future__ import annotations

import click

from ._common import note, open_captures, plural

__all__ = ["compact"]


@click.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=str))
def compact(directory: str) -> None:
    """Rewrite DIRECTORY's segments into one <rollout_id>.capture.jsonl per rollout.

    So that NeMo Gym's own reader, which reads only the shared files, sees every call.
    Each rollout is rewritten atomically; running it again changes nothing. A rollout
    whose segments may still be written (a writer on this host still runs, or a segment
    changed in the last minute) is left alone and named: run it again when the run is over.
    Exits 1 when any rollout was left alone.

    \b
    Example:
      mcc compact /data/model-calls
    """
    store = open_captures(directory)
    compacted = left = lines = 0
    for rollout_id in store.rollout_ids():
        if not store.segments_path(rollout_id).is_dir():
            continue
        result = store.compact(rollout_id)
        if result.left_alone is not None:
            left += 1
            note(f"left alone: {rollout_id}: {result.left_alone}")
        elif result.segments:
            compacted += 1
            lines += result.lines
    click.echo(
        f"compacted {plural(compacted, 'rollout')} into their shared files ({plural(lines, 'line')})"
        + (f"; {left} left alone (still being written)" if left else "")
    )
    if left:
        raise SystemExit(1)
