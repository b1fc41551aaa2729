"""A small headless-Chromium driver over the Chrome DevTools Protocol, for the report tests.

Starts Debian's ``/usr/bin/chromium`` with a fresh profile and the debugging port on
127.0.0.1, attaches to its page over a websocket (websocket-client), and records what a
page does: console errors, uncaught exceptions, log errors (CSP violations, failed loads),
every network request and every JavaScript dialog (answered, so nothing blocks).

It also measures what a person checks by eye (:func:`mid_word_wraps`, :func:`spilling`,
:func:`sideways_scrolls`, :func:`browser_defaults`) and keeps screenshots
(:func:`keep_screenshot`: in the test's folder, and in ``$JUDGE_KEEP_SCREENSHOTS`` when set).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import websocket

CHROMIUM = Path("/usr/bin/chromium")
NEEDS_CHROMIUM = pytest.mark.skipif(
    not CHROMIUM.is_file(),
    reason=f"{CHROMIUM} is absent: install Debian's chromium (`apt-get install -y chromium`, "
           f"as .ci/run does) to open the pages in a browser")
"""The mark of a test module that drives the browser (``pytestmark = NEEDS_CHROMIUM``)."""
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-default-apps", "--disable-extensions", "--mute-audio",
         "--hide-scrollbars", "--remote-debugging-address=127.0.0.1",
         "--remote-debugging-port=0")
STEP_TIMEOUT = 30.0
"""Seconds any one wait (start, load, a command) may take before the test fails."""
KEEP_SCREENSHOTS = "JUDGE_KEEP_SCREENSHOTS"
"""The environment variable naming a folder every screenshot a test takes is copied to."""


class Page:
    """One page target: send commands, collect events."""

    def __init__(self, ws_url: str) -> None:
        self._ws = websocket.create_connection(ws_url, timeout=STEP_TIMEOUT,
                                               suppress_origin=True)
        self._next = 0
        self.events: list[dict[str, Any]] = []

    def close(self) -> None:
        self._ws.close()

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        ident = self._next
        self._ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + STEP_TIMEOUT
        while time.monotonic() < deadline:
            msg = json.loads(self._ws.recv())
            if msg.get("id") == ident:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                result: dict[str, Any] = msg.get("result", {})
                return result
            self._event(msg)
        raise TimeoutError(method)

    def _event(self, msg: dict[str, Any]) -> None:
        if "method" not in msg:
            return
        self.events.append(msg)
        if msg["method"] == "Page.javascriptDialogOpening":
            # Answer from a fresh message loop: the dialog would block the page otherwise.
            self._next += 1
            self._ws.send(json.dumps({"id": self._next, "method": "Page.handleJavaScriptDialog",
                                      "params": {"accept": False}}))

    def pump(self, seconds: float) -> None:
        """Read events for ``seconds``."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self._ws.settimeout(left)
            try:
                self._event(json.loads(self._ws.recv()))
            except websocket.WebSocketTimeoutException:
                break
        self._ws.settimeout(STEP_TIMEOUT)

    def evaluate(self, expression: str) -> Any:
        reply = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                          awaitPromise=True)
        if "exceptionDetails" in reply:
            raise RuntimeError(f"{expression!r}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def wait_for(self, expression: str, timeout: float = STEP_TIMEOUT) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            self.pump(0.1)
        raise TimeoutError(f"never true: {expression}")

    def open(self, url: str, ready: str) -> None:
        """Navigate to ``url`` and wait until the load event and then ``ready`` is true."""
        self.events.clear()
        self.send("Page.navigate", url=url)
        deadline = time.monotonic() + STEP_TIMEOUT
        while not any(e["method"] == "Page.loadEventFired" for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no load event for {url}")
            self.pump(0.1)
        self.wait_for(ready)
        self.pump(0.3)  # late console messages and requests

    # -- what the page did ------------------------------------------------------------------

    def named(self, method: str) -> list[dict[str, Any]]:
        return [e["params"] for e in self.events if e["method"] == method]

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries, as text."""
        out = [" ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
               for p in self.named("Runtime.consoleAPICalled")
               if p["type"] in ("error", "assert")]
        out += [json.dumps(p["exceptionDetails"])[:500]
                for p in self.named("Runtime.exceptionThrown")]
        out += [f"{p['entry'].get('source')}: {p['entry'].get('text')}"
                for p in self.named("Log.entryAdded") if p["entry"]["level"] == "error"]
        return out

    def requests(self) -> list[str]:
        return [p["request"]["url"] for p in self.named("Network.requestWillBeSent")]

    def dialogs(self) -> list[str]:
        return [p.get("message", "") for p in self.named("Page.javascriptDialogOpening")]

    def click(self, selector: str) -> None:
        """A real mouse click at the middle of the first element ``selector`` matches."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            f" e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect();"
            f" return [r.x + r.width / 2, r.y + r.height / 2]; }})()")
        x, y = box
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1)

    def screenshot(self, width: int = 1280, height: int = 1800, scale: float = 1.0) -> bytes:
        """A PNG of the page's top ``width`` x ``height`` CSS pixels, times ``scale``."""
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)
        self.evaluate("window.scrollTo(0, 0)")
        self.pump(0.5)  # responsive charts redraw at the new width
        data = self.send("Page.captureScreenshot", format="png", clip={
            "x": 0, "y": 0, "width": width, "height": height, "scale": scale})["data"]
        return base64.b64decode(data)


class Browser:
    """A headless Chromium with one page, recording its events."""

    def __init__(self) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="judge-chromium-"))
        self.proc = subprocess.Popen(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.extra: list[Page] = []
        try:
            self.port = port = self._port()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list",
                                        timeout=STEP_TIMEOUT) as reply:
                targets = json.loads(reply.read())
            url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
            self.page = Page(url)
            for domain in ("Page", "Runtime", "Network", "Log"):
                self.page.send(f"{domain}.enable")
        except BaseException:
            self.close()
            raise

    def new_page(self, url: str = "about:blank") -> Page:
        """Another tab of the same browser (its profile, storage and origins shared)."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/json/new?{urllib.parse.quote(url, safe='')}",
            method="PUT")
        with urllib.request.urlopen(request, timeout=STEP_TIMEOUT) as reply:
            target = json.loads(reply.read())
        page = Page(target["webSocketDebuggerUrl"])
        for domain in ("Page", "Runtime", "Network", "Log"):
            page.send(f"{domain}.enable")
        self.extra.append(page)
        return page

    def _port(self) -> int:
        marker = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + STEP_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.proc.returncode}")
            if marker.is_file():
                lines = marker.read_text().split()
                if lines:
                    return int(lines[0])
            time.sleep(0.05)
        raise TimeoutError("chromium did not open its debugging port")

    def close(self) -> None:
        page = getattr(self, "page", None)
        if page is not None:
            page.close()
        for other in getattr(self, "extra", ()):
            other.close()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        shutil.rmtree(self.profile, ignore_errors=True)


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA, non-interlaced PNG: width, height, rows of raw pixels."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks, header = 8, [], b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) \
                    & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, rows


def browser_session() -> Iterator[Browser]:
    """One browser for a test module, closed at its end.

    A module's fixture, as
    ``browser = pytest.fixture(scope="module", name="browser")(browser_session)``.
    """
    b = Browser()
    try:
        yield b
    finally:
        b.close()


def keep_screenshot(png: bytes, folder: Path, name: str) -> Path:
    """Write ``png`` to ``folder/name``, and copy it into ``$JUDGE_KEEP_SCREENSHOTS`` when set."""
    assert png.startswith(b"\x89PNG\r\n\x1a\n"), "not a PNG"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(png)
    keep = os.environ.get(KEEP_SCREENSHOTS)
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, Path(keep) / name)
    return path


def region(page: Page, selector: str, width: int = 1280) -> bytes:
    """A PNG of the page's full width across the first element ``selector`` matches."""
    top, height = page.evaluate(
        f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
        f".getBoundingClientRect(); return [r.top + window.scrollY, r.height]; }})()")
    data = page.send("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                     clip={"x": 0, "y": top, "width": width, "height": height, "scale": 1})
    return base64.b64decode(data["data"])


# Each measure runs in the page and answers a list of what is wrong, described: [] is clean.
_MID_WORD = """[...document.querySelectorAll(%s)].flatMap(el => {
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT), found = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent, range = document.createRange();
    let top = null;
    for (let i = 0; i < text.length; i++) {
      range.setStart(node, i); range.setEnd(node, i + 1);
      const box = range.getClientRects()[0];
      if (!box || /\\s/.test(text[i])) { top = null; continue; }
      if (top !== null && box.top > top + 2)
        found.push(el.textContent.trim() + ": " + text.slice(0, i) + "|" + text.slice(i));
      top = box.top;
    }
  }
  return found;
})"""
_SPILLING = """[...document.querySelectorAll(%s)].filter(el => el.scrollWidth > el.clientWidth + 1)
  .map(el => el.textContent.trim() + ": " + el.scrollWidth + " > " + el.clientWidth)"""
_SIDEWAYS = """(() => {
  const out = [], doc = document.documentElement;
  if (doc.scrollWidth > window.innerWidth) out.push("page: " + doc.scrollWidth + " px wide");
  for (const el of document.querySelectorAll("body *")) {
    const x = getComputedStyle(el).overflowX;
    if ((x === "auto" || x === "scroll") && el.scrollWidth > el.clientWidth + 1 &&
        el.clientHeight > 0)
      out.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + "." + el.className +
               ": " + el.scrollWidth + " > " + el.clientWidth);
  }
  return out;
})()"""
_DEFAULTS = """(() => {
  const props = %s, host = document.createElement("div");
  document.body.append(host);
  const shadow = host.attachShadow({mode: "open"}), out = [];
  for (const el of document.querySelectorAll(%s)) {
    const bare = document.createElement(el.tagName);
    if (el.tagName === "INPUT") bare.type = el.type;
    shadow.replaceChildren(bare);
    const mine = getComputedStyle(el), ua = getComputedStyle(bare);
    const same = props.filter(p => mine[p] === ua[p]);
    if (same.length) out.push(el.tagName.toLowerCase() + " " + JSON.stringify(
      el.textContent.trim() || el.getAttribute("placeholder") || el.id) + ": " + same.join(", "));
  }
  host.remove();
  return out;
})()"""
DEFAULT_LOOK = ("backgroundColor", "borderTopColor", "borderTopLeftRadius")
"""What a styled control changes from the browser's default look: fill, edge and corners."""
FIELD_LOOK = ("borderTopColor", "borderTopLeftRadius")
"""What a styled field changes: its edge and corners (its white fill is the default's too)."""


def mid_word_wraps(page: Page, selector: str) -> list[str]:
    """Each line break inside a word of an element ``selector`` matches, as ``text: befo|re``.

    Measured from the boxes of its characters (a DOM range per character): two letters of
    one text node on two lines. A ``<wbr>`` splits a text node, so a break there is not one.
    """
    found: list[str] = page.evaluate(_MID_WORD % json.dumps(selector))
    return found


def spilling(page: Page, selector: str) -> list[str]:
    """Elements ``selector`` matches whose content is wider than their box."""
    found: list[str] = page.evaluate(_SPILLING % json.dumps(selector))
    return found


def sideways_scrolls(page: Page) -> list[str]:
    """A page wider than the window, and every shown element that scrolls sideways."""
    found: list[str] = page.evaluate(_SIDEWAYS)
    return found


def browser_defaults(page: Page, selector: str, props: tuple[str, ...] = DEFAULT_LOOK
                     ) -> list[str]:
    """Elements ``selector`` matches that still have the browser's own look in ``props``.

    The default is read from a bare element of the same tag in a shadow root, where the
    page's stylesheet does not reach.
    """
    found: list[str] = page.evaluate(_DEFAULTS % (json.dumps(list(props)), json.dumps(selector)))
    return found
