#!/usr/bin/env python3
"""A tiny Gemini agent with a user's cancel, for the agent runner's own tests of recipes' `cancel`.

`cancel_agent.py` answers HICCUP_PROMPT: it saves the conversation to $HOME/conversation.json,
streams one turn from the mock server (HICCUP_BASE_URL) and prints the answer's text.
A 429 or 503 is waited out (its RetryInfo retryDelay, else 1 s) and the turn asked again.
`cancel_agent.py resume` continues the saved conversation with HICCUP_PROMPT as the next user turn
(the resume command of a recipe's `cancel`): a cancelled turn left nothing in it.
On SIGINT (the user's Ctrl-C) CANCEL_AGENT_MODE decides:
  correct (default): stop reading, print "cancelled" and exit 130;
  retry: send the turn's request again first (a pending retry that fires after the cancel), exit 130;
  ignore: ignore SIGINT and keep waiting on the stream (hiccup's exit wait then kills it).
  gemini: as correct, but as gemini-cli does it: a `<session_context>` text part before the prompt,
    the resumed prompt added as one more part of the last user content when no model turn follows
    it (a cancelled turn left none), and each text delta printed as it streams as a JSON line
    {"type": "message", "role": "assistant", "content": TEXT}.
"""
import http.client, json, os, signal, sys, time, urllib.parse

base = urllib.parse.urlparse(os.environ["HICCUP_BASE_URL"])
prompt = os.environ["HICCUP_PROMPT"]
mode = os.environ.get("CANCEL_AGENT_MODE", "correct")
path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
saved = os.path.join(os.environ["HOME"], "conversation.json")

history = []
if len(sys.argv) > 1 and sys.argv[1] == "resume":
    with open(saved) as f:
        history = json.load(f)
if mode == "gemini" and history and history[-1]["role"] == "user":
    history[-1]["parts"].append({"text": prompt})
elif mode == "gemini":
    history.append({"role": "user", "parts": [{"text": "<session_context>\nA test agent.\n</session_context>"}, {"text": prompt}]})
else:
    history.append({"role": "user", "parts": [{"text": prompt}]})
with open(saved, "w") as f:
    json.dump(history, f)
if mode == "ignore":
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def stream():
    conn = http.client.HTTPConnection(base.hostname, base.port, timeout=60)
    text, finished = "", False
    try:
        conn.request("POST", path, json.dumps({"contents": history}), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status in (429, 503):
            # The backoff the server asked for (Gemini's RetryInfo retryDelay, else 1 s), then the
            # turn once more (the user's Ctrl-C during the wait is a KeyboardInterrupt, as during
            # the stream).
            delay = 1.0
            for d in json.loads(resp.read() or b"{}").get("error", {}).get("details", []):
                if str(d.get("retryDelay", "")).endswith("s"):
                    delay = float(d["retryDelay"][:-1])
            conn.close()
            time.sleep(delay)
            return stream()
        if resp.status != 200:
            return text, False
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data: "):
                continue
            cand = json.loads(line[6:])["candidates"][0]
            for part in cand.get("content", {}).get("parts", []):
                text += part.get("text", "")
                if mode == "gemini" and part.get("text"):
                    print(json.dumps({"type": "message", "role": "assistant", "content": part["text"]}), flush=True)
            if cand.get("finishReason") == "STOP":
                finished = True
    finally:
        conn.close()
    return text, finished


try:
    text, finished = stream()
except KeyboardInterrupt:
    if mode == "retry":
        try:
            conn = http.client.HTTPConnection(base.hostname, base.port, timeout=5)
            conn.request("POST", path, json.dumps({"contents": history}), {"Content-Type": "application/json"})
            conn.getresponse().read(1)
        except (OSError, http.client.HTTPException):
            pass
    print("cancelled", flush=True)
    sys.exit(130)
if not finished:
    sys.exit(1)
history.append({"role": "model", "parts": [{"text": text}]})
with open(saved, "w") as f:
    json.dump(history, f)
if mode != "gemini":
    print(text)
