"""The scripted scenarios: what the demo model says in each dialect, and the script that shapes it.

- `_script`: `SCENARIOS`, the scenario tokens, and `read_script`, which reads them from a
  request's `model` or `x-mcc-scenario` header;
- `_reply`: the texts every dialect shares, the `Reply` base class, and error bodies;
- `_responses`, `_chat`, `_messages`, `_completions`: one `Reply` per dialect, its JSON body and its
  stream events.

How the replies go over HTTP (status, compression, chunking, failures) is the model
server's business (`demo.model_server`).
"""

from __future__ import annotations

from ._chat import ChatReply
from ._completions import CompletionsReply
from ._messages import MessagesReply
from ._reply import CREATED, Event, Reply, error_body
from ._responses import ResponsesReply
from ._script import SCENARIOS, Script, read_script

__all__ = [
    "CREATED",
    "REPLIES",
    "SCENARIOS",
    "ChatReply",
    "CompletionsReply",
    "Event",
    "MessagesReply",
    "Reply",
    "ResponsesReply",
    "Script",
    "error_body",
    "read_script",
]

REPLIES: dict[str, type[Reply]] = {
    "responses": ResponsesReply,
    "chat": ChatReply,
    "messages": MessagesReply,
    "completions": CompletionsReply,
}
"""The reply class of each dialect, by dialect name."""
