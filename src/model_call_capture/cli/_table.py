"""Tables that fit the terminal: the one layout every `mcc` table goes through.

rich squeezes a table that is too wide by cutting cells with `…`, numbers included
(`569…`, `11,…`). Here a table is laid out before rich sees it: each column says what it
holds (a number, an id, text) and how much it matters (`priority`). Numbers are never
cut and never wrap: when the columns do not fit, the least important ones are dropped
(and named in a note) until they do. Ids are shown whole when there is room, else
shortened in the middle (`meta-ll…-Instruct`: the start and the end are what tell ids
apart); text wraps.

The width is the terminal's, or `COLUMNS` when set (piped output included). Piped
without `COLUMNS`, and with `--wide`, a table is plain text at its natural width: every
column, every cell whole.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import click
from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ._common import literal

__all__ = [
    "Col",
    "FittedTable",
    "fit_table",
    "output_width",
    "print_table",
    "shorten_middle",
    "wide_option",
]

Kind = Literal["number", "id", "text"]
Cell = str | Text

_ID_MIN = 16  # an id shortened below this no longer tells similar ids apart
_TEXT_MIN = 10


@dataclass(frozen=True, slots=True)
class Col:
    """One column: its header, what it holds, and its priority (0: always shown; the
    highest is dropped first when the table does not fit)."""

    header: str
    kind: Kind = "text"
    priority: int = 0


@dataclass(slots=True)
class FittedTable:
    """A table laid out for a width: the rich table, its width, and the columns left out."""

    table: Table
    width: int
    hidden: list[str]


def shorten_middle(text: str, width: int) -> str:
    """`text` in at most `width` cells: whole when it fits, else its start and end around `…`."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    head = _take(text, width // 2)
    tail_room = width - 1 - cell_len(head)  # a wide character that did not fit: the end's
    tail = _take(text[::-1], tail_room)[::-1] if tail_room else ""
    return f"{head}…{tail}"


def _take(text: str, room: int) -> str:
    out, used = [], 0
    for char in text:
        used += cell_len(char)
        if used > room:
            break
        out.append(char)
    return "".join(out)


def _plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def _natural(col: Col, cells: list[Cell]) -> int:
    widths = [cell_len(line) for c in cells for line in _plain(c).split("\n")]
    return max([cell_len(col.header), *widths])


def _minimum(col: Col, cells: list[Cell], natural: int) -> int:
    header_word = max(cell_len(word) for word in col.header.split() or [""])
    if col.kind == "number":
        widths = [cell_len(line) for c in cells for line in _plain(c).split("\n")]
        return max([header_word, *widths])
    floor = _ID_MIN if col.kind == "id" else _TEXT_MIN
    return min(natural, max(header_word, floor))


def _overhead(count: int) -> int:
    """What rich's default box adds to the cells of `count` columns: the two edges, the
    separators between columns, and one space of padding on each side of each cell."""
    return 2 + max(count - 1, 0) + 2 * count


def fit_table(
    cols: Sequence[Col], rows: Sequence[Sequence[Cell]], *, width: int | None
) -> FittedTable:
    """Lay `rows` out in at most `width` cells (None: at their natural width)."""
    # Escaped first (`literal`): what is measured is what is printed.
    rows = [[c if isinstance(c, Text) else literal(c) for c in row] for row in rows]
    columns = [[row[i] for row in rows] for i in range(len(cols))]
    natural = [_natural(c, cells) for c, cells in zip(cols, columns, strict=True)]
    minimum = [_minimum(c, cells, n) for c, cells, n in zip(cols, columns, natural, strict=True)]
    shown = list(range(len(cols)))
    sizes = natural if width is None else minimum
    hidden: list[str] = []
    if width is not None:
        while sum(sizes[i] for i in shown) + _overhead(len(shown)) > width:
            droppable = [i for i in shown if cols[i].priority > 0]
            if not droppable:
                break
            drop = max(droppable, key=lambda i: (cols[i].priority, i))
            shown.remove(drop)
            hidden.append(cols[drop].header)
        sizes = _grow(cols, shown, list(minimum), natural, width)
    table = Table(box=box.HEAVY_HEAD)
    for i in shown:
        col = cols[i]
        table.add_column(
            col.header,
            justify="right" if col.kind == "number" else "left",
            width=sizes[i],
            no_wrap=col.kind == "id",
            overflow="fold",
        )
    for row in rows:
        table.add_row(*(_cell(cols[i], row[i], sizes[i]) for i in shown))
    total = sum(sizes[i] for i in shown) + _overhead(len(shown))
    return FittedTable(table, total, [h for h in (c.header for c in cols) if h in hidden])


def _grow(
    cols: Sequence[Col], shown: list[int], sizes: list[int], natural: list[int], width: int
) -> list[int]:
    """Hand the room left to ids first (so they are whole), then to text, then to the
    headers of numbers (fewer header lines), by priority."""
    spare = width - sum(sizes[i] for i in shown) - _overhead(len(shown))
    for kind in ("id", "text", "number"):
        for i in sorted(shown, key=lambda i: cols[i].priority):
            if spare <= 0:
                return sizes
            if cols[i].kind != kind:
                continue
            more = min(spare, natural[i] - sizes[i])
            if kind == "number" and more < natural[i] - sizes[i]:
                continue  # a header on fewer lines, or not at all
            sizes[i] += more
            spare -= more
    return sizes


def _cell(col: Col, cell: Cell, size: int) -> Cell:
    if col.kind == "id" and isinstance(cell, Text) and cell_len(cell.plain) > size:
        return Text(shorten_middle(cell.plain, size))  # escaped already
    return cell


def output_width(console: Console, *, wide: bool) -> int | None:
    """The width tables get: None (natural) with `--wide` or when piped without `COLUMNS`."""
    if wide:
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return console.width if console.is_terminal else None


def print_table(
    console: Console,
    cols: Sequence[Col],
    rows: Sequence[Sequence[Cell]],
    *,
    title: str | Text | None = None,
    wide: bool = False,
    note: Console | None = None,
) -> None:
    """Print a title line, the table fitted to the output, and (on `note`, stderr by
    default) which columns were left out for the width."""
    fitted = fit_table(cols, rows, width=output_width(console, wide=wide))
    if title is not None:
        console.print(title if isinstance(title, Text) else literal(title))
    saved = console.width
    console.width = max(saved, fitted.width)  # a natural-width table is never re-squeezed
    try:
        console.print(fitted.table)
    finally:
        console.width = saved
    if fitted.hidden:
        from ._common import stderr

        (note or stderr()).print(
            literal(f"not shown at this width: {', '.join(fitted.hidden)} (--wide shows them)"),
            style="dim",
        )


def wide_option() -> Callable[[Callable[..., object]], Callable[..., object]]:
    """The `--wide` option of the commands that print tables."""
    return click.option(
        "--wide",
        is_flag=True,
        help="Print every column with every cell whole, however wide the table.",
    )
