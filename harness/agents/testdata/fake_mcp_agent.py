#!/usr/bin/env python3
"""A tiny Gemini agent that runs its tools over MCP, for the black-box judge's tool-boundary tests.

It reads HICCUP_BASE_URL, HICCUP_PROMPT and FAKE_MCP_URL (the recipe's {mcp_url}), streams turns
from the mock server and runs each call named mcp_hiccup_TOOL as an MCP `tools/call` of TOOL over
Streamable HTTP (initialize first, the Mcp-Session-Id on every later message), with a per-call
timeout of FAKE_MCP_TIMEOUT_S seconds (default 1). The function response it sends the model:
{"output": TEXT} for a result, {"error": TEXT} for an error result (isError) or a JSON-RPC error,
{"error": "outcome unknown: ..."} for a call that timed out or whose reply was lost, and
{"error": "session expired"} after a 404 (it initializes a new MCP session for later calls).
FAKE_AGENT_MODE=correct (default) does all that;
FAKE_AGENT_MODE=resend sends a call that timed out or lost its reply once more (a replay of a call
whose outcome is unknown, to a tool that may not be idempotent);
FAKE_AGENT_MODE=error-as-success answers an error result to the model as {"output": TEXT};
FAKE_AGENT_MODE=no-timeout waits on a tool call for ever (no per-call timeout);
FAKE_AGENT_MODE=dead-session never initializes again after a 404 (every later call fails).
Exit 0 when a turn ends without calls, 1 when a request fails.
"""
import http.client, json, os, sys, urllib.parse

base = urllib.parse.urlparse(os.environ["HICCUP_BASE_URL"])
mcp = urllib.parse.urlparse(os.environ["FAKE_MCP_URL"])
prompt = os.environ["HICCUP_PROMPT"]
mode = os.environ.get("FAKE_AGENT_MODE", "correct")
timeout = None if mode == "no-timeout" else float(os.environ.get("FAKE_MCP_TIMEOUT_S", "1"))
path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
history = [{"role": "user", "parts": [{"text": prompt}]}]
session = None
dead = False
next_id = 0


def post(message, wait):
    """POSTs one JSON-RPC message to the MCP endpoint: (status, headers, the response or None)."""
    conn = http.client.HTTPConnection(mcp.hostname, mcp.port, timeout=wait)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session:
        headers["Mcp-Session-Id"] = session
    try:
        conn.request("POST", mcp.path, json.dumps(message), headers)
        resp = conn.getresponse()
        body = resp.read().decode()
        answer = None
        for line in body.splitlines():
            if line.startswith("data: "):
                frame = json.loads(line[6:])
                if "id" in frame:
                    answer = frame
        if answer is None and body.strip().startswith("{"):
            answer = json.loads(body)
        return resp.status, resp.headers, answer
    finally:
        conn.close()


def initialize():
    global session, next_id
    session = None
    next_id += 1
    status, headers, _ = post({"jsonrpc": "2.0", "id": next_id, "method": "initialize",
                               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                          "clientInfo": {"name": "fake-mcp-agent", "version": "0"}}}, 10)
    session = headers.get("Mcp-Session-Id")
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, 10)


def call_tool(name, args):
    """One tools/call: the function response for the model."""
    global next_id, dead
    if dead:
        return {"error": "the MCP session is gone"}
    if session is None:
        initialize()
    next_id += 1
    try:
        status, _, answer = post({"jsonrpc": "2.0", "id": next_id, "method": "tools/call",
                                  "params": {"name": name, "arguments": args}}, timeout)
    except (OSError, http.client.HTTPException, ValueError) as e:
        return {"error": f"outcome unknown: {type(e).__name__}"}
    if status == 404:
        if mode == "dead-session":
            dead = True
        else:
            initialize()
        return {"error": "session expired"}
    if answer is None:
        return {"error": "outcome unknown: the reply was lost"}
    if "error" in answer:
        return {"error": answer["error"].get("message", "error")}
    result = answer.get("result", {})
    text = "".join(c.get("text", "") for c in result.get("content", []))
    if result.get("isError") and mode != "error-as-success":
        return {"error": text}
    return {"output": text}


def attempt():
    conn = http.client.HTTPConnection(base.hostname, base.port, timeout=30)
    calls, text = [], ""
    conn.request("POST", path, json.dumps({"contents": history}), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        sys.exit(1)
    for raw in resp:
        line = raw.decode().strip()
        if not line.startswith("data: "):
            continue
        cand = json.loads(line[6:])["candidates"][0]
        for part in cand.get("content", {}).get("parts", []):
            if "functionCall" in part:
                calls.append(part["functionCall"])
            if "text" in part:
                text += part["text"]
    conn.close()
    return calls, text


for turn in range(8):
    calls, text = attempt()
    history.append({"role": "model", "parts": [{"text": text}] * bool(text) + [{"functionCall": c} for c in calls]})
    if not calls:
        print(text)
        sys.exit(0)
    responses = []
    for c in calls:
        tool = c["name"][len("mcp_hiccup_"):] if c["name"].startswith("mcp_hiccup_") else c["name"]
        response = call_tool(tool, c.get("args", {}))
        if mode == "resend" and response.get("error", "").startswith("outcome unknown"):
            response = call_tool(tool, c.get("args", {}))
        responses.append({"functionResponse": {"name": c["name"], "response": response}})
    history.append({"role": "user", "parts": responses})
sys.exit(1)
