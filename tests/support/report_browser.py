#!/usr/bin/env python3
"""Drives headless chromium over a `vf report` page opened from disk, through
the DevTools protocol (stdlib only: a minimal websocket client), and prints
what it saw as one JSON object:

  bars        timeline bars that are attempts (g.bar.attempt)
  allBars     every timeline bar (attempts, blocked units, waits, rounds)
  rounds      each round's bar: its round and its label ([data-round, text])
  comments    the text of every review comment shown in the unit rows
  units       unit rows
  clicked     the unit whose row was clicked ({events, eventsBefore, rawShown})
  scripts     <script> elements other than JSON islands
  consoleErrors, exceptions, dialogs, requests (any URL but the page's own)

usage: report_browser.py CHROMIUM PAGE.html UNIT SCREENSHOT.png
"""
import base64, json, os, re, shutil, socket, struct, subprocess, sys, tempfile, time, urllib.request


class Ws:
    def __init__(self, url):
        m = re.match(r"ws://([^:/]+):(\d+)(/.*)", url)
        self.sock = socket.create_connection((m.group(1), int(m.group(2))), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        req = (f"GET {m.group(3)} HTTP/1.1\r\nHost: {m.group(1)}:{m.group(2)}\r\n"
               f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError(f"websocket handshake failed: {head!r}")
        self.buf = b""

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        if n < 126:
            head = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 65536:
            head = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(head + mask + body)

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise RuntimeError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        parts = b""
        while True:
            b1, b2 = self._read(2)
            n = b2 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            mask = self._read(4) if b2 & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            parts += data
            if b1 & 0x80:
                return parts.decode("utf-8", "replace")


class Page:
    def __init__(self, ws):
        self.ws, self.next_id, self.events = ws, 0, []

    def call(self, method, **params):
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_for(self, method, limit=20):
        end = time.time() + limit
        while time.time() < end:
            if any(e["method"] == method for e in self.events):
                return
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self.events.append(msg)
        raise RuntimeError(f"no {method} within {limit} s")

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")


def main():
    chromium, page_path, unit, shot = sys.argv[1:5]
    profile = tempfile.mkdtemp(prefix="vf-chromium-")
    proc = subprocess.Popen(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--remote-debugging-address=127.0.0.1",
         "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        port = None
        end = time.time() + 60
        while port is None and time.time() < end:
            line = proc.stderr.readline().decode("utf-8", "replace")
            if not line and proc.poll() is not None:
                raise RuntimeError("chromium exited before its DevTools endpoint came up")
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if m:
                port = int(m.group(1))
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30))
        target = next(t for t in targets if t.get("type") == "page")
        page = Page(Ws(target["webSocketDebuggerUrl"]))
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.call(f"{domain}.enable")
        page.call("Emulation.setDeviceMetricsOverride", width=1200, height=1000,
                  deviceScaleFactor=1, mobile=False)
        url = "file://" + os.path.abspath(page_path)
        page.call("Page.navigate", url=url)
        page.wait_for("Page.loadEventFired")
        out = {
            "bars": page.eval("document.querySelectorAll('#gantt g.bar.attempt').length"),
            "allBars": page.eval("document.querySelectorAll('#gantt g.bar').length"),
            "units": page.eval("document.querySelectorAll('details.unit').length"),
            "rounds": page.eval(
                "Array.from(document.querySelectorAll('#gantt g.bar[data-round]'))"
                ".map(g => [g.dataset.round, g.querySelector('text') ? g.querySelector('text').textContent : null])"),
            "comments": page.eval(
                "Array.from(document.querySelectorAll('details.unit tr.comment pre')).map(p => p.textContent)"),
            "scripts": page.eval(
                "Array.from(document.scripts).filter(s => s.type !== 'application/json').length"),
        }
        sel = json.dumps(f'details.unit[data-unit="{unit}"]')
        before = page.eval(f"document.querySelector({sel}).querySelectorAll('.ev').length")
        page.eval(f"document.querySelector({sel}).querySelector('summary').click()")
        page.eval("new Promise(r => setTimeout(r, 200))")
        events = page.eval(f"document.querySelector({sel}).querySelectorAll('.ev').length")
        page.eval(f"(() => {{ const a = document.querySelector({sel}).querySelector('.ev a.raw-link'); if (a) a.click(); }})()")
        raw = page.eval(f"(() => {{ const p = document.querySelector({sel}).querySelector('.ev pre.raw'); return p && !p.hidden ? p.textContent : null; }})()")
        out["clicked"] = {"unit": unit, "eventsBefore": before, "events": events, "rawShown": raw}
        page.call("Emulation.setDeviceMetricsOverride", width=1200, height=1500,
                  deviceScaleFactor=1, mobile=False)
        page.eval("window.scrollTo(0, 0)")
        png = page.call("Page.captureScreenshot", format="png", captureBeyondViewport=False)
        with open(shot, "wb") as f:
            f.write(base64.b64decode(png["data"]))
        # Late events (a request fired by a click) arrive before this answer.
        page.eval("new Promise(r => setTimeout(r, 100))")
        ev = page.events
        out["consoleErrors"] = [
            " ".join(str(a.get("value", a.get("description", ""))) for a in e["params"].get("args", []))
            for e in ev if e["method"] == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert")
        ] + [e["params"]["entry"].get("text", "") for e in ev
             if e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] == "error"]
        out["exceptions"] = [e["params"]["exceptionDetails"].get("text", "")
                             for e in ev if e["method"] == "Runtime.exceptionThrown"]
        out["dialogs"] = [e["params"].get("message", "")
                          for e in ev if e["method"] == "Page.javascriptDialogOpening"]
        out["requests"] = [e["params"]["request"]["url"] for e in ev
                           if e["method"] == "Network.requestWillBeSent"
                           and e["params"]["request"]["url"] != url]
        print(json.dumps(out))
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
