"""A small agent loop over the OpenAI Chat Completions wire format (streaming), with httpx.

It stands in for the agent runtime a team tests: it streams a model turn, collects the tool calls,
runs the tools once the turn has finished, sends their results back, and retries a turn whose
stream failed. `retry_bug=True` switches on a classic defect: on a broken stream it runs the calls
received so far and keeps their results for the retry (so a call runs twice, and the next request
answers a call the committed turn does not hold).
"""
import json

import httpx

MODEL = "gpt-4o"
TOOLS = [{
    "type": "function",
    "function": {
        "name": "deploy",
        "description": "Deploy a build to an environment.",
        "parameters": {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]},
    },
}]


class StreamBroken(Exception):
    """The stream ended before its finish; `calls` holds the calls received so far."""

    def __init__(self, message, calls):
        super().__init__(message)
        self.calls = calls


class AgentFailed(Exception):
    """The agent gave up: the server rejected a request or the retries ran out."""


def stream_turn(client, base_url, messages):
    """One attempt: POST /v1/chat/completions with stream=true. Returns (text, calls, finish);
    raises StreamBroken when the stream fails before its finish and [DONE]."""
    text, calls, finish, done = "", {}, None, False
    body = {"model": MODEL, "messages": messages, "tools": TOOLS, "stream": True}
    try:
        with client.stream("POST", f"{base_url}/v1/chat/completions", json=body) as r:
            if r.status_code >= 500 or r.status_code == 429:
                raise StreamBroken(f"HTTP {r.status_code}", [])
            if r.status_code != 200:
                r.read()
                raise AgentFailed(f"HTTP {r.status_code}: {r.text}")
            for line in r.iter_lines():
                line = line.rstrip("\r\n")  # httpx 0.23 keeps the line ending
                if not line.startswith("data: "):
                    continue
                data = line[len("data: "):]
                if data == "[DONE]":
                    done = True
                    break
                chunk = json.loads(data)
                for choice in chunk.get("choices", []):
                    delta = choice.get("delta") or {}
                    text += delta.get("content") or ""
                    for tc in delta.get("tool_calls") or []:
                        call = calls.setdefault(tc["index"], {"id": "", "name": "", "arguments": ""})
                        call["id"] = tc.get("id") or call["id"]
                        fn = tc.get("function") or {}
                        call["name"] += fn.get("name") or ""
                        call["arguments"] += fn.get("arguments") or ""
                    finish = choice.get("finish_reason") or finish
    except httpx.TransportError as e:  # reset, or closed without the chunked terminator
        raise StreamBroken(str(e), [calls[i] for i in sorted(calls)]) from e
    if finish is None or not done:
        raise StreamBroken("stream ended without its finish", [calls[i] for i in sorted(calls)])
    return text, [calls[i] for i in sorted(calls)], finish


def run_agent(base_url, prompt, tools, max_attempts=4, retry_bug=False):
    """Runs `prompt` to an answer. `tools` maps a tool name to fn(call_id, **args) -> str.
    Returns the final text; raises AgentFailed."""
    messages = [{"role": "user", "content": prompt}]
    kept_results = []  # the bug: results of a broken attempt's calls, kept across the retry
    with httpx.Client(timeout=10) as client:
        for _turn in range(10):
            for attempt in range(max_attempts):
                try:
                    text, calls, finish = stream_turn(client, base_url, messages)
                    break
                except StreamBroken as e:
                    if retry_bug:
                        for call in e.calls:
                            kept_results.append(run_tool(tools, call))
                    if attempt == max_attempts - 1:
                        raise AgentFailed(f"retries exhausted: {e}") from e
            if finish == "content_filter":
                raise AgentFailed("the answer was filtered")
            if not calls:
                return text
            messages.append({
                "role": "assistant", "content": text or None,
                "tool_calls": [{"id": c["id"], "type": "function",
                                "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls],
            })
            for result in kept_results + [run_tool(tools, c) for c in calls]:
                messages.append(result)
            kept_results = []
    raise AgentFailed("too many turns")


def run_tool(tools, call):
    output = tools[call["name"]](call["id"], **json.loads(call["arguments"] or "{}"))
    return {"role": "tool", "tool_call_id": call["id"], "content": output}
