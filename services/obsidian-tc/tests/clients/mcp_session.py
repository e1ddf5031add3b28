"""Drives obsidian-tc with the official Python MCP SDK (a real client), for the Rust tests.

    python mcp_session.py http URL TOKEN    < steps.json
    python mcp_session.py stdio CMD [ARG..] < steps.json   (the token comes in CMD's environment)

steps.json is a list of {"op": "list_tools"}, {"op": "call", "name": ..., "args": {...}},
{"op": "list_resources", "cursor": ...} (cursor optional) or {"op": "read_resource", "uri": ...}.
Prints one JSON object: the negotiated protocol, server info, capabilities, instructions and one
result per step (tool lists as the client parsed them; call results with isError and
structuredContent; a resource request the server refused as {"error": {code, message, data}}).
With OTC_TEST_ELICIT=accept or decline in the environment the client declares elicitation and
answers every request so (accept with {"confirm": true}); the requests' messages come back in
"elicitations". With OTC_TEST_MCP_MODE=2026-07-28 the client speaks that revision (no
initialize; each request carries its version and capabilities; confirmations come as
input-required results the SDK answers and retries); the default is the handshake era.
"""
import asyncio
import json
import os
import sys

import httpx2
from mcp import Client, StdioServerParameters, types
from mcp.shared.exceptions import MCPError
from mcp.client.streamable_http import streamable_http_client


async def run(server, steps):
    out = {"results": [], "elicitations": []}
    answer = os.environ.get("OTC_TEST_ELICIT")
    options = {}
    if answer:
        async def elicit(context, params):
            out["elicitations"].append(params.message)
            if answer == "accept":
                return types.ElicitResult(action="accept", content={"confirm": True})
            return types.ElicitResult(action="decline")

        options["elicitation_callback"] = elicit
    mode = os.environ.get("OTC_TEST_MCP_MODE", "legacy")
    async with Client(server, mode=mode, **options) as client:
        out["protocol_version"] = client.protocol_version
        if client.server_info is not None:
            out["server_name"] = client.server_info.name
            out["server_version"] = client.server_info.version
        out["instructions"] = client.instructions
        capabilities = getattr(client, "server_capabilities", None)
        if capabilities is not None:
            out["capabilities"] = capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)
        for step in steps:
            if step["op"] == "list_tools":
                listed = await client.list_tools()
                out["results"].append([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools])
            elif step["op"] == "call":
                result = await client.call_tool(step["name"], step.get("args", {}))
                out["results"].append(result.model_dump(mode="json", by_alias=True, exclude_none=True))
            elif step["op"] in ("list_resources", "read_resource"):
                try:
                    if step["op"] == "list_resources":
                        result = await client.list_resources(cursor=step.get("cursor"))
                    else:
                        result = await client.read_resource(step["uri"])
                    out["results"].append(result.model_dump(mode="json", by_alias=True, exclude_none=True))
                except MCPError as e:
                    out["results"].append({"error": {"code": e.code, "message": e.message, "data": e.data}})
            else:
                raise SystemExit(f"unknown op {step['op']}")
    return out


async def main():
    kind = sys.argv[1]
    steps = json.load(sys.stdin)
    if kind == "http":
        url, token = sys.argv[2], sys.argv[3]
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=60))
        try:
            out = await run(streamable_http_client(url, http_client=http), steps)
        finally:
            await http.aclose()
    elif kind == "stdio":
        command = sys.argv[2:]
        out = await run(StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ)), steps)
    else:
        raise SystemExit(f"unknown transport {kind}")
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
