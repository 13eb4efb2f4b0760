"""A scripted OpenAI- and Anthropic-compatible HTTP server on 127.0.0.1 for end-to-end tests of
`kforge optimize --llm`: each route answers from a function of (request, call index), every
request is remembered, and a route may stall to look like a slow model."""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


@dataclass
class Received:
    method: str
    path: str
    headers: dict
    body: dict | None


@dataclass
class Reply:
    status: int = 200
    body: object = field(default_factory=dict)
    headers: dict = field(default_factory=dict)
    delay_s: float = 0.0


Route = Callable[[Received, int], Reply]


def chat_reply(text: str, prompt_tokens: int = 1000, completion_tokens: int = 200, finish: str = "stop") -> Reply:
    return Reply(200, {"id": "chatcmpl-1", "object": "chat.completion",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                    "finish_reason": finish}],
                       "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}})


def anthropic_reply(text: str, input_tokens: int = 1000, output_tokens: int = 200) -> Reply:
    return Reply(200, {"id": "msg_1", "type": "message", "role": "assistant",
                       "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                       "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}})


def models(*ids: str) -> Route:
    return lambda request, index: Reply(200, {"object": "list", "data": [{"id": i, "object": "model"} for i in ids]})


class FakeLlmServer:
    def __init__(self, routes: dict[tuple[str, str], Route]):
        self.routes = routes
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _serve(self, method: str):
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                request = Received(method, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with server._lock:
                    index = sum(1 for r in server.received if r.method == method and r.path == self.path)
                    server.received.append(request)
                route = server.routes.get((method, self.path))
                reply = route(request, index) if route else Reply(404, {"error": {"message": "no such route"}})
                if reply.delay_s and server._stopping.wait(reply.delay_s):
                    return
                payload = reply.body if isinstance(reply.body, (str, bytes)) else json.dumps(reply.body)
                data = payload.encode() if isinstance(payload, str) else payload
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self):
                self._serve("GET")

            def do_POST(self):
                self._serve("POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def calls(self, method: str, path: str) -> list[Received]:
        with self._lock:
            return [r for r in self.received if r.method == method and r.path == path]

    def __enter__(self) -> "FakeLlmServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
