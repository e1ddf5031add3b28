"""Drives obsidian-tc with the official Python MCP SDK (a real client), for the Rust tests.

    python mcp_session.py http URL TOKEN    < steps.json
    python mcp_session.py stdio CMD [ARG..] < steps.json   (the token comes in CMD's environment)

steps.json is a list of {"op": "list_tools"}, {"op": "call", "name": ..., "args": {...}},
{"op": "list_resources", "cursor": ...} (cursor optional), {"op": "read_resource", "uri": ...}
or, on the 2026-07-28 wire, {"op": "task", "name": ..., "args": {...}}: the client declares the
Tasks extension, the call answers a task, and the client reads it (tasks/get), cancels it
(tasks/cancel) and reads it until it ends; the result is {"created", "read", "cancel", "ended"}.
Prints one JSON object: the negotiated protocol, server info, capabilities, instructions and one
result per step (tool lists as the client parsed them; call results with isError and
structuredContent; a resource request the server refused as {"error": {code, message, data}}).
With OTC_TEST_ELICIT=accept or decline in the environment the client declares elicitation and
answers every request so (accept with {"confirm": true}); the requests' messages come back in
"elicitations". With OTC_TEST_SAMPLE=TEXT the client declares sampling and answers every
sampling request with TEXT; the requests (system prompt and text) come back in "samplings".
With OTC_TEST_MCP_MODE=2026-07-28 the client speaks that revision (no
initialize; each request carries its version and capabilities; confirmations come as
input-required results the SDK answers and retries); the default is the handshake era.
"""
import asyncio
import json
import os
import sys

from typing import Any, Literal

import httpx2
from mcp import Client, StdioServerParameters, types
from mcp.shared.exceptions import MCPError
from mcp.client.extension import ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from pydantic import TypeAdapter

TASKS = "io.modelcontextprotocol/tasks"


class CreatedTask(types.Result):
    """A tools/call answered as a task (the Tasks extension's CreateTaskResult)."""

    result_type: Literal["task"]
    task_id: str
    status: str


class TaskRequest(types.Request[dict[str, Any], str]):
    """tasks/get, tasks/update or tasks/cancel: the task id rides in the Mcp-Name header."""

    name_param = "taskId"


class Tasks(ClientExtension):
    """The Tasks extension as a client that follows a task, reads it and cancels it."""

    identifier = TASKS

    def __init__(self, out):
        self.out = out

    def claims(self):
        return (ResultClaim(result_type="task", model=CreatedTask, resolve=self.follow),)

    async def follow(self, created, ctx):
        session = ctx.session
        raw = TypeAdapter(dict[str, Any])

        async def send(method):
            return await session.send_request(TaskRequest(method=method, params={"taskId": created.task_id}), raw)

        record = {"created": created.model_dump(mode="json", by_alias=True, exclude_none=True)}
        record["read"] = await send("tasks/get")
        record["cancel"] = await send("tasks/cancel")
        for _ in range(300):
            ended = await send("tasks/get")
            if ended.get("status") != "working":
                break
            await asyncio.sleep(0.1)
        record["ended"] = ended
        self.out["tasks"].append(record)
        return types.CallToolResult(content=[types.TextContent(type="text", text=ended.get("status", ""))])


async def run(server, steps):
    out = {"results": [], "elicitations": [], "tasks": [], "samplings": []}
    answer = os.environ.get("OTC_TEST_ELICIT")
    options = {}
    if answer:
        async def elicit(context, params):
            out["elicitations"].append(params.message)
            if answer == "accept":
                return types.ElicitResult(action="accept", content={"confirm": True})
            return types.ElicitResult(action="decline")

        options["elicitation_callback"] = elicit
    sample = os.environ.get("OTC_TEST_SAMPLE")
    if sample is not None:
        async def sampling(context, params):
            texts = [m.content.text for m in params.messages if getattr(m.content, "text", None)]
            out["samplings"].append({"system": params.system_prompt, "text": "\n".join(texts)})
            return types.CreateMessageResult(
                role="assistant", content=types.TextContent(type="text", text=sample), model="test-model"
            )

        options["sampling_callback"] = sampling
    mode = os.environ.get("OTC_TEST_MCP_MODE", "legacy")
    if any(step["op"] == "task" for step in steps):
        options["extensions"] = [Tasks(out)]
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
            elif step["op"] == "task":
                await client.call_tool(step["name"], step.get("args", {}))
                out["results"].append(out["tasks"][-1])
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
