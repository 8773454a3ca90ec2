"""Drives Switchboard's /mcp with the official MCP Python SDK (PyPI `mcp`).

Reads a plan as JSON on stdin:
    {"url": ".../mcp", "token": "csk_...", "calls": [{"tool": "...", "args": {...}}, ...]}
connects over the streamable HTTP transport with the token as the bearer, initializes,
lists the tools and makes the calls in order. Prints one JSON object:
    {"server": name, "tools": [names], "results": [{"ok": structuredContent, "text": ...}
                                                   | {"error": {"code", "message", "data"}}]}
or, when the session itself is refused, {"connect_error": {"code", "message", "data"}}.
"""

import asyncio
import base64
import hashlib
import json
import sys

from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def error_of(e: MCPError) -> dict:
    return {"code": e.code, "message": e.message, "data": e.data}


async def main() -> None:
    plan = json.load(sys.stdin)
    out: dict = {"results": []}
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {plan['token']}"})
    async with http:
        async with streamable_http_client(plan["url"], http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                try:
                    init = await session.initialize()
                    out["server"] = init.server_info.name
                    tools = await session.list_tools()
                    out["tools"] = [t.name for t in tools.tools]
                    out["schemas"] = {t.name: t.input_schema for t in tools.tools}
                except MCPError as e:
                    out["connect_error"] = error_of(e)
                    print(json.dumps(out))
                    return
                for call in plan["calls"]:
                    try:
                        r = await session.call_tool(call["tool"], call.get("args") or {})
                        text = "".join(getattr(c, "text", "") for c in r.content)
                        # Binary content (images, blob resources): its type and digest.
                        blobs = []
                        for c in r.content:
                            data = getattr(c, "data", None)
                            res = getattr(c, "resource", None)
                            if data is None and res is not None:
                                data = getattr(res, "blob", None)
                            if data is not None:
                                mime = (getattr(c, "mime_type", None) or getattr(c, "mimeType", None)
                                        or getattr(res, "mime_type", None)
                                        or getattr(res, "mimeType", None))
                                raw = base64.b64decode(data)
                                blobs.append({"type": c.type, "mimeType": mime,
                                              "sha256": hashlib.sha256(raw).hexdigest()})
                        out["results"].append(
                            {"ok": r.structured_content, "text": text, "isError": r.is_error,
                             "blobs": blobs}
                        )
                    except MCPError as e:
                        out["results"].append({"error": error_of(e)})
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
