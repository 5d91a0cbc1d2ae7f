#!/usr/bin/env python3
"""A tiny Gemini agent for the agent runner's own tests (run through --agent-cmd / command_recipe).

It reads HICCUP_BASE_URL and HICCUP_PROMPT, streams turns from the mock server, runs each
run_shell_command call's `command` with /bin/sh, and sends the function responses back.
FAKE_AGENT_MODE=correct (default) discards a failed attempt's calls before retrying;
FAKE_AGENT_MODE=duplicate keeps them (gemini-cli 0.61.0's bug), so the call runs twice.
Exit 0 when a turn ends without calls, 1 when retries are exhausted.
"""
import http.client, json, os, subprocess, sys, urllib.parse

base = urllib.parse.urlparse(os.environ["HICCUP_BASE_URL"])
prompt = os.environ["HICCUP_PROMPT"]
mode = os.environ.get("FAKE_AGENT_MODE", "correct")
path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
history = [{"role": "user", "parts": [{"text": "<context>fake agent</context>"}, {"text": prompt}]}]


def attempt():
    """One streamed attempt: (calls, text, finished)."""
    conn = http.client.HTTPConnection(base.hostname, base.port, timeout=30)
    calls, text, finished = [], "", False
    try:
        conn.request("POST", path, json.dumps({"contents": history}), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            resp.read()
            return calls, text, False
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data: "):
                continue
            frame = json.loads(line[6:])
            cand = frame["candidates"][0]
            for part in cand.get("content", {}).get("parts", []):
                if "functionCall" in part:
                    calls.append(part["functionCall"])
                if "text" in part:
                    text += part["text"]
            if cand.get("finishReason") == "STOP":
                finished = True
    except (OSError, http.client.HTTPException, ValueError):
        pass
    finally:
        conn.close()
    return calls, text, finished


for turn in range(8):
    pending = []
    for tries in range(4):
        calls, text, finished = attempt()
        pending = (pending + calls) if mode == "duplicate" else calls
        if finished:
            break
    else:
        sys.exit(1)
    history.append({"role": "model", "parts": [{"text": text}] * bool(text) +
                    [{"functionCall": c} for c in calls]})
    if not pending:
        print(text)
        sys.exit(0)
    responses = []
    for c in pending:
        subprocess.run(["/bin/sh", "-c", c["args"]["command"]], check=False)
        responses.append({"functionResponse": {"name": c["name"], "response": {"output": "ok"}}})
    history.append({"role": "user", "parts": responses})
sys.exit(1)
