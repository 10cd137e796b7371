"""A real HTTP server speaking the chat-completions protocol (no model behind it): it answers
each request from what the prompt says, so tests know the grade it gives.

The user message decides the answer: a document text holding `GRADE=N` is graded N (a reason,
then `Grade: N`); one holding `REFUSE` is declined; one holding `BABBLE` gets an answer with no
grade; one holding `SLOW=S` is answered after S seconds; one holding `DRIP=S` gets its answer a
byte every S seconds (each read fast, the whole slow). `busy` first requests are answered
429 with `Retry-After: 1`. Every request is counted, by its (query, document) prompt.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

from tests.support.loopback import LoopbackServer

__all__ = ["ChatServer"]

_GRADE = re.compile(r"GRADE=(\d+)")
_SLOW = re.compile(r"SLOW=([\d.]+)")
_DRIP = re.compile(r"DRIP=([\d.]+)")


class _Handler(BaseHTTPRequestHandler):
    server_state: ClassVar[dict[str, Any]]
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        state = self.server_state
        length = int(self.headers.get("Content-Length", "0"))
        request = json.loads(self.rfile.read(length))
        messages = request["messages"]
        user = messages[-1]["content"]
        with state["lock"]:
            state["requests"][user] += 1
            state["bodies"].append(request)
            state["auth"].append(self.headers.get("Authorization"))
            busy = state["busy"] > 0
            if busy:
                state["busy"] -= 1
        if busy:
            self._send(429, b'{"error": "slow down"}', {"Retry-After": "1"})
            return
        if (slow := _SLOW.search(user)) is not None:
            time.sleep(float(slow.group(1)))
        if "REFUSE" in user:
            text = "I can't help with rating this content."
        elif "BABBLE" in user:
            text = "It is hard to say how relevant this is."
        elif (grade := _GRADE.search(user)) is not None:
            text = f"The passage speaks to the query.\nGrade: {grade.group(1)}"
        else:
            text = "Grade: 0"
        body = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": request["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100},
        }  # fmt: skip
        data = json.dumps(body).encode()
        if (drip := _DRIP.search(user)) is not None:
            self._send(200, data[:1], length=len(data))
            for byte in range(1, len(data)):
                time.sleep(float(drip.group(1)))
                self.wfile.write(data[byte : byte + 1])
                self.wfile.flush()
            return
        self._send(200, data)

    def _send(
        self,
        status: int,
        body: bytes,
        headers: dict[str, str] | None = None,
        *,
        length: int | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body) if length is None else length))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


class ChatServer(LoopbackServer):
    """The chat-completions server; `url` is its endpoint."""

    def __init__(self, *, busy: int = 0) -> None:
        self.state: dict[str, Any] = {
            "lock": threading.Lock(),
            "requests": Counter(),
            "bodies": [],
            "auth": [],
            "busy": busy,
        }
        handler = type("Handler", (_Handler,), {"server_state": self.state})
        super().__init__(handler)

    @property
    def url(self) -> str:
        return self.address("/v1/chat/completions")

    @property
    def requests(self) -> int:
        with self.state["lock"]:
            return sum(self.state["requests"].values())
