"""A PNG of a web page after it has run for a while, through headless Chromium's DevTools protocol
(for the picture of ``pokerbot watch --web`` in docs/commands/watch.md; the page draws over a websocket, so a
plain ``--screenshot`` catches only the splash).

    chromium-headless-shell --remote-debugging-port=9222 --no-sandbox about:blank &
    python scripts/web_screenshot.py http://127.0.0.1:8000/ docs/img/watch_web.png [--wait 20]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import itertools

import aiohttp


async def capture(url: str, out: str, wait: float, port: int, width: int, height: int) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{port}/json/list") as response:
            target = next(t for t in await response.json() if t["type"] == "page")
        async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            ids = itertools.count(1)

            async def call(method: str, **params) -> dict:
                number = next(ids)
                await ws.send_json({"id": number, "method": method, "params": params})
                async for message in ws:
                    data = message.json()
                    if data.get("id") == number:
                        return data.get("result", {})
                raise ConnectionError("DevTools connection closed")

            await call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
            await call("Page.navigate", url=url)
            await asyncio.sleep(wait)
            shot = await call("Page.captureScreenshot", format="png")
            with open(out, "wb") as handle:
                handle.write(base64.b64decode(shot["data"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("out")
    parser.add_argument("--wait", type=float, default=20.0, help="seconds to let the page run")
    parser.add_argument("--port", type=int, default=9222, help="Chromium's remote-debugging port")
    parser.add_argument("--size", default="1280x820")
    args = parser.parse_args()
    width, height = (int(x) for x in args.size.split("x"))
    asyncio.run(capture(args.url, args.out, args.wait, args.port, width, height))


if __name__ == "__main__":
    main()
