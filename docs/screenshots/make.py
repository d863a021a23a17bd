"""Make the viewer's screenshots in docs/screenshots/ from a fresh `mcc demo` directory.

    .venv/bin/python docs/screenshots/make.py

Runs `mcc demo` into a temporary directory, starts `mcc view` on it, and photographs
the rollouts table and the conversation of rollout 1-0 with Debian's chromium (driven by
playwright, no browser download). The demo's times differ run to run; nothing else does.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _serve(directory: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "model_call_capture.cli", "view", str(directory)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    match = re.fullmatch(r"Serving (\S+)\n", proc.stdout.readline())
    if match is None:
        proc.kill()
        raise SystemExit("mcc view did not start")
    return proc, match.group(1)


def main() -> None:
    """Write rollouts.png and conversation.png next to this script."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("needs Debian's chromium: apt-get install chromium")
    with tempfile.TemporaryDirectory() as tmp:
        demo = Path(tmp) / "demo"
        subprocess.run(
            [sys.executable, "-m", "model_call_capture.cli", "demo", "--dir", str(demo)],
            check=True,
            capture_output=True,
        )
        proc, url = _serve(demo)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1280, "height": 620})
                page.goto(url)
                page.wait_for_selector("#rollouts tbody tr[data-id]")
                page.wait_for_selector("figure[data-chart='reward'] svg rect.bar")
                page.wait_for_selector("#where b")
                page.screenshot(path=HERE / "rollouts.png")
                page.set_viewport_size({"width": 1280, "height": 1240})
                page.goto(url + "rollouts/1-0")
                page.wait_for_selector("article.call")
                page.click("#call-0 details.reasoning summary")
                page.screenshot(path=HERE / "conversation.png")
                browser.close()
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=15)
    print(f"wrote {HERE / 'rollouts.png'} and {HERE / 'conversation.png'}")


if __name__ == "__main__":
    main()
