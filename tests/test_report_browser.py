"""The report in a real browser: headless Chromium, driven over the DevTools protocol (a websocket), loads the HTML
page from disk; every image must decode, the console must stay clean, every claim id must be on the page, and the
screenshot must not be blank. Skipped only when no Chromium binary is installed (CI installs Debian's)."""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import featlab
from featlab.report.html import write_html
from featlab.report.summary import build

TINY = dict(seeds=1, k=4, d=32, m=2, n=60, n_test=20, T=5, radii=[0, 2], pgd_steps=2, thm46_starts=2, thm46_steps=2)
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def find_chromium() -> str | None:
    for name in (os.environ.get("FEATLAB_CHROMIUM"), *BROWSERS):
        if name and (path := shutil.which(name)):
            return path
    return None


class Chromium:
    """A headless Chromium and one page, spoken to with Chrome DevTools Protocol messages over a websocket."""

    def __init__(self, binary: str, profile: Path, width: int = 1280, height: int = 1600):
        import websocket  # websocket-client, from the [test] extra

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--disable-extensions", "--hide-scrollbars", f"--window-size={width},{height}",
             "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.05)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as r:
            page = next(t for t in json.load(r) if t["type"] == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        self.events: list[dict] = []
        self._id = 0

    def send(self, method: str, **params) -> dict:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_for(self, event: str, timeout: float = 60) -> None:
        if any(e.get("method") == event for e in self.events):
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            self.events.append(msg)
            if msg.get("method") == event:
                return
        raise TimeoutError(event)

    def evaluate(self, expression: str):
        return self.send("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def errors(self) -> list[str]:
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e.get("method") == "Runtime.exceptionThrown":
                out.append(str(p.get("exceptionDetails", {}).get("text")))
            elif e.get("method") == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
            elif e.get("method") == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(f"{p['entry'].get('text')} ({p['entry'].get('url', '')})")
        return out

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def render(html: Path, screenshot: Path, profile: Path) -> dict:
    """Load ``html`` in headless Chromium; return what the page shows and save a screenshot of its first screen."""
    binary = find_chromium()
    browser = Chromium(binary, profile)
    try:
        for domain in ("Page", "Runtime", "Log"):
            browser.send(f"{domain}.enable")
        browser.send("Page.navigate", url=html.resolve().as_uri())
        browser.wait_for("Page.loadEventFired")
        images = browser.evaluate("[...document.images].map(i => [i.alt, i.complete, i.naturalWidth])")
        text = browser.evaluate("document.body.innerText")
        scripts = browser.evaluate("document.scripts.length")
        shot = browser.send("Page.captureScreenshot", format="png")["data"]
        screenshot.write_bytes(base64.b64decode(shot))
        return {"images": images, "text": text, "scripts": scripts, "errors": browser.errors()}
    finally:
        browser.close()


@pytest.fixture(scope="session")
def report_page(tmp_path_factory):
    out = tmp_path_factory.mktemp("browser") / "runs"
    main = featlab.run("fa-synthetic", out=out, quiet=True, **TINY)
    featlab.run("fa-synthetic", out=out, quiet=True, control="untrained", **TINY)
    # one point, the main run itself (cached): a sweep table and its plot in the page at no training cost
    featlab.sweep("fa-synthetic", seed=[0], **{k: v for k, v in TINY.items() if k != "radii"}, radii=[[0, 2]],
                  out=out, progress=False, plot="x=seed y=binary.cos_in_class_mean")
    html = write_html(build(out, chosen={"fa-synthetic": main.dir}), out / "report.html")
    return html, main


def test_report_renders_in_headless_chromium(report_page, tmp_path, one_thread):
    if find_chromium() is None:
        if os.environ.get("CI") == "true":  # .ci/run installs it: a skip there would hide the check
            pytest.fail("no chromium binary in CI; .ci/run should have installed Debian's chromium")
        pytest.skip("no chromium binary (apt-get install chromium)")
    html, main = report_page
    shot = tmp_path / "report.png"
    page = render(html, shot, tmp_path / "profile")
    assert page["images"], "the report shows no figure"
    broken = [alt for alt, complete, width in page["images"] if not complete or width <= 0]
    assert not broken, f"images that did not load: {broken}"
    assert len(page["images"]) >= len(main.figures) + 1  # the run's figures and the sweep plot
    assert page["errors"] == []
    assert page["scripts"] == 0  # nothing to run: the page reads without JavaScript
    for c in main.claims:
        assert c["id"] in page["text"]
    assert "Does it reproduce?" in page["text"] and "fails, as it should" in page["text"]  # control's column
    from matplotlib.image import imread

    pixels = imread(io.BytesIO(shot.read_bytes()))
    assert pixels.shape[0] >= 800 and pixels.shape[1] >= 1000
    assert np.asarray(pixels[..., :3]).std() > 0.05, "the screenshot is blank"
    if os.environ.get("FEATLAB_KEEP_SCREENSHOT"):  # to look at it: FEATLAB_KEEP_SCREENSHOT=dir pytest ...
        shutil.copy(shot, Path(os.environ["FEATLAB_KEEP_SCREENSHOT"]) / "report.png")
