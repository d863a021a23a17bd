"""`mcc view`: a read-only local web viewer of a capture directory, and the conversation model
`mcc show` prints.

- `_entries`: the calls and damaged lines of one file, in file order, read on from where
  an earlier read stopped (over the one line reader, `reader.py`, through the store).
- `_index`: the rollouts table, one small summary per rollout, updated incrementally.
- `_rows`: a row of the table (`RolloutSummary`) and how a page picks rows (`Query`).
- `_outcomes`: the collector's rollouts file (reward and scalar fields per rollout).
- `_charts`: totals and fixed-bin histograms of the rollouts a page's filters match.
- `_conversation`: records into turns (the one place; both views use it), and each
  call's setup (system prompt, tools); `_continued` the completion prompt that goes on.
- `_search`: full-text search of the rollouts' messages, bounded in matches and time.
- `_app`: the Starlette app (pages, static files, JSON endpoints, security headers);
  `static/` holds the pages, their script and style (shipped in the wheel, nothing
  fetched from elsewhere).
"""

from __future__ import annotations

from ._app import CSP, create_app
from ._conversation import (
    CallView,
    Conversation,
    Limits,
    PartView,
    SetupView,
    ToolView,
    TurnView,
    build_conversation,
    pretty_json,
)
from ._entries import Call, DamagedLine, Entries
from ._index import Page, Query, RolloutIndex, RolloutSummary

__all__ = [
    "CSP",
    "Call",
    "CallView",
    "Conversation",
    "DamagedLine",
    "Entries",
    "Limits",
    "Page",
    "PartView",
    "Query",
    "RolloutIndex",
    "RolloutSummary",
    "SetupView",
    "ToolView",
    "TurnView",
    "build_conversation",
    "create_app",
    "pretty_json",
]
