"""The demo's stand-in for an LLM: a chat-completions endpoint over HTTP whose answers are the
synthetic judge's (one grade above what a careful person would give, at most 3), so the demo
runs `rankmon judge`'s own worker against it, as a deployment runs it against a model.

It reads the pair from the demo's prompt (`DEMO_PROMPT`: the default rubric, then a line
naming the query and document ids) and answers with a sentence and `Grade: N`, counting the
prompt's characters / 4 as its tokens.
"""

from __future__ import annotations

import re
import socket
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar, Final

import orjson

from monitor.demo.serving import Served
from monitor.demo.synthetic import SyntheticCorpus
from monitor.judge.prompt import DEFAULT_TEMPLATE

__all__ = ["DEMO_PROMPT", "StandInJudge"]

DEMO_PROMPT: Final = DEFAULT_TEMPLATE + "\n(query id {query_id}, document id {doc_id})\n"
_IDS: Final = re.compile(r"\(query id (\S+), document id (\S+)\)")


class _Handler(BaseHTTPRequestHandler):
    corpus: ClassVar[SyntheticCorpus]
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # headers and body go out in two writes: Nagle would hold the body for the
        # worker's delayed ACK, 40 ms a pair
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        request: Any = orjson.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        prompt = request["messages"][-1]["content"]
        found = _IDS.search(prompt)
        if found is None:
            text = "I cannot tell which document this is."
        else:
            grade = min(3, self.corpus.true_grade(found.group(1), found.group(2)) + 1)
            text = f"The passage bears on the query.\nGrade: {grade}"
        tokens = sum(len(m["content"]) for m in request["messages"]) // 4 + 10
        body = orjson.dumps({
            "object": "chat.completion",
            "model": request.get("model", "synthetic"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"total_tokens": tokens},
        })  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class StandInJudge(Served):
    """The endpoint on a free loopback port, from `start` (or `with`) until `stop`."""

    def __init__(self, corpus: SyntheticCorpus) -> None:
        super().__init__(type("Handler", (_Handler,), {"corpus": corpus}), "stand-in-llm",
                         "127.0.0.1", 0)  # fmt: skip

    @property
    def url(self) -> str:
        return self.address("/v1/chat/completions")
