"""Debian's headless Chromium driven as a person would use it, over the DevTools protocol: open a
page, click an element (a real mouse press at its place), press a key (a real key event), and
read the page back. No test framework between: the protocol's own commands over its websocket.

```python
with Browser(tmp_path) as browser:
    browser.open("http://127.0.0.1:PORT/judge")
    browser.wait_for("document.querySelector('#card') && !document.querySelector('#card').hidden")
    browser.click("#grades button[data-grade='2']")
    browser.press("u")
```
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

import websocket

from tests.support.realparts import require_binary

__all__ = ["Browser", "BrowserError"]

_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")


class BrowserError(AssertionError):
    """The browser did not do or show what the test waited for."""


class Browser:
    """One headless Chromium with one page (module docstring)."""

    def __init__(self, profile: Path, timeout_s: float = 30.0) -> None:
        self.profile = profile
        self.timeout_s = timeout_s
        self._process: subprocess.Popen[str] | None = None
        self._socket: Any = None
        self._ids = itertools.count(1)
        self.console: list[str] = []  # what the page's scripts logged or threw

    def __enter__(self) -> Browser:
        binary = require_binary("chromium")
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--remote-debugging-port=0", "--window-size=1100,900",
                 f"--user-data-dir={self.profile}"]  # fmt: skip
        self._process = subprocess.Popen(
            [binary, *flags, "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self._process.stderr is not None
        deadline = time.monotonic() + self.timeout_s
        browser_url = None
        while browser_url is None:
            line = self._process.stderr.readline()
            if not line and self._process.poll() is not None:
                raise BrowserError(f"chromium ended with {self._process.returncode}")
            if time.monotonic() > deadline:
                raise BrowserError("chromium did not open its DevTools port")
            found = _LISTENING.search(line)
            if found:
                browser_url = found.group(1)
        port = browser_url.split("/")[2]
        with urllib.request.urlopen(f"http://{port}/json/list", timeout=10) as answer:
            targets = json.load(answer)
        page = next(t for t in targets if t["type"] == "page")
        self._socket = websocket.create_connection(
            page["webSocketDebuggerUrl"], timeout=self.timeout_s, suppress_origin=True
        )
        self.send("Runtime.enable")
        self.send("Page.enable")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._socket is not None:
            self._socket.close()
        if self._process is not None:
            self._process.kill()
            self._process.wait(timeout=10)
            assert self._process.stderr is not None
            self._process.stderr.close()

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """One protocol command; its result (events met on the way are kept in `console`
        when they are the page's logs or errors)."""
        number = next(self._ids)
        self._socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv())
            if message.get("id") == number:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if message.get("method") == "Runtime.exceptionThrown":
                details = message["params"]["exceptionDetails"]
                self.console.append(str(details.get("exception", {}).get("description", details)))
            elif message.get("method") == "Runtime.consoleAPICalled":
                args = message["params"].get("args", [])
                self.console.append(" ".join(str(a.get("value", "")) for a in args))

    def open(self, url: str) -> None:
        self.send("Page.navigate", url=url)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (a promise is awaited)."""
        result = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str) -> Any:
        """Poll until the expression is truthy; its value."""
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except BrowserError:
                value = None  # the page is still loading
            if value:
                return value
            time.sleep(0.05)
        raise BrowserError(f"never true: {expression} (page said: {self.console})")

    def click(self, selector: str) -> None:
        """A mouse press and release at the middle of the element."""
        box = self.wait_for(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " if (!e || e.disabled) return null; const r = e.getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        x, y = box
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def press(self, key: str) -> None:
        """A key pressed and released, as typed (one printable character)."""
        self.send("Input.dispatchKeyEvent", type="keyDown", key=key, text=key)
        self.send("Input.dispatchKeyEvent", type="keyUp", key=key)
