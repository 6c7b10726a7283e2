"""``GET /``: the browser client (``agent/web/index.html``), one static page on the ``/ws`` leg."""

from __future__ import annotations

import importlib.resources
from typing import Any

from starlette.responses import HTMLResponse


async def page(request: Any) -> HTMLResponse:
    return HTMLResponse((importlib.resources.files("agent") / "web" / "index.html").read_text(encoding="utf-8"))
