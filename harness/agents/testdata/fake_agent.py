#!/usr/bin/env python3
"""A tiny Gemini agent for the agent runner's own tests (run through --agent-cmd / command_recipe).

It reads HICCUP_BASE_URL and HICCUP_PROMPT, streams turns from the mock server, runs each
run_shell_command call's `command` with /bin/sh, and sends the function responses back.
FAKE_AGENT_MODE=correct (default) discards a failed attempt's calls before retrying;
FAKE_AGENT_MODE=duplicate keeps them (gemini-cli 0.61.0's bug), so the call runs twice;
FAKE_AGENT_MODE=no-wait retries at once, ignoring RetryInfo.retryDelay (Retry-After);
FAKE_AGENT_MODE=retry-filter retries a SAFETY finish with the unchanged request;
FAKE_AGENT_MODE=silent completes without printing the final text;
FAKE_AGENT_MODE=show-partial prints a failed attempt's text too;
FAKE_AGENT_MODE=give-up exits 1 after the first attempt that fails (no retry at all);
FAKE_AGENT_MODE=continue runs each call as soon as its frame arrives and, when the attempt then
fails, keeps what it delivered (text and whole calls) as the turn and goes on (the `continue`
recovery design of claude-code and codex; an attempt cut before any call is retried);
FAKE_AGENT_MODE=continue-drop is `continue` that leaves the calls that ran out of the kept turn
(a side effect the model never hears of).
FAKE_AGENT_MODE=continue-text is `continue` that keeps an attempt cut after text only too, as a
model content, and asks for more with no prompt after it; the next answer's parts join that same
model content (codex 0.171.0 keeps such text as an assistant message item, and the next answer's
items follow it with no user item between).
FAKE_AGENT_MODE=retry-4xx retries a 400, 401, 403 or 404 like a 5xx (codex retries a 401 and a 403);
FAKE_AGENT_MODE=skip-undecodable is `correct` that skips a data frame whose JSON does not parse
and reads on (an attempt then fails only when the rest of the stream does).
With FAKE_AGENT_JSONL=1 every attempt's shown text is printed at once as a JSON line
{"type": "text", "text": ...}, and the final text is not printed again.
The correct agent waits RetryInfo.retryDelay before retrying an HTTP error, gives up at once on
a status that is not retryable (400, 401, 403, 404), fails on SAFETY, takes a MAX_TOKENS finish as
the end of the turn (what it delivered whole is the turn), and retries an attempt that ended any
other way (a cut, an in-stream error, an undecodable frame, a stream without its finish).
FAKE_AGENT_ATTEMPTS (default 4) is its attempt budget per turn.
FAKE_AGENT_TRUNCATED_FAILS=1: a turn that ends with a MAX_TOKENS finish and no call is shown, then
reported as a failure ("incomplete answer: max tokens", exit 1), as codex 0.171.0 does.
FAKE_AGENT_RESUME=1: a turn that ends with a MAX_TOKENS finish and no call, or with a SAFETY finish,
is shown and kept as a model content, and a user reminder asks for more ("Output token limit hit.
Resume directly." / "Your response above was stopped by a safety classifier."), as claude-code
2.1.332 does; the run goes on with the answer to it.
FAKE_AGENT_ASK_AGAIN=1: after the final answer, asks once more ("Anything else?") and prints the
first answer (a request past the script that no unfinished answer asked for).
FAKE_AGENT_STRICT_END=1: an attempt whose connection fails after its finish (the body does not end
cleanly: a cut, FIN or reset after the terminal frame) failed and is retried, as claude-code does.
FAKE_AGENT_SHOW_PARTIAL=1 (with FAKE_AGENT_JSONL=1): every attempt's text is shown, a failed one's
too, in any mode (show-partial's display with give-up: the streamed text, then the failure).
FAKE_AGENT_RETRACT=1 (with FAKE_AGENT_JSONL=1): before it retries an attempt it prints
{"type": "retry", "preserveText": false}, taking back the text it showed of it (qwen-code's retry line).
FAKE_AGENT_MALFORMED_KEEPS_TEXT=1: an attempt that ends with a MALFORMED_FUNCTION_CALL finish
after text keeps that text as a model content, drops its calls (they never run) and asks for more
("Resume directly."), as qwen-code 0.24.4 does; one without text is retried.
FAKE_AGENT_MERGE=1: an attempt cut after text only is kept as a model content and "Resume directly."
asks for more; the answer to it is appended to that kept content (its text and calls; the prompt
is dropped), as qwen-code 0.24.4 merges a continuation into the turn it kept; a refusal is not
kept this way. FAKE_AGENT_ABANDON=1 (with FAKE_AGENT_MERGE=1): after a merge, an answer with calls
is shown and the run ends with success, its calls never run (a bug).
FAKE_AGENT_PHANTOM=1: after the function responses of the first turn with calls, a model content
"No response requested." and a user "Go on." are added, words no server sent (claude-code's
history after a cancel): the server then numbers the next request a turn ahead (a bug).
Each call's function response says what its command did (run_call): "ok" or its output, its exit
code and output when it failed, a timeout when FAKE_AGENT_TOOL_TIMEOUT_S is set and it ran longer.
Exit 0 when a turn ends without calls, 1 when retries are exhausted or the answer is blocked.
"""
import http.client, json, os, re, signal, subprocess, sys, time, urllib.parse

base = urllib.parse.urlparse(os.environ["HICCUP_BASE_URL"])
prompt = os.environ["HICCUP_PROMPT"]
mode = os.environ.get("FAKE_AGENT_MODE", "correct")
path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
history = [{"role": "user", "parts": [{"text": "<context>fake agent</context>"}, {"text": prompt}]}]


blocked = False
truncated = False  # the last attempt ended with a MAX_TOKENS finish
truncated_fails = os.environ.get("FAKE_AGENT_TRUNCATED_FAILS") == "1"
show_partial = os.environ.get("FAKE_AGENT_SHOW_PARTIAL") == "1"
resume = os.environ.get("FAKE_AGENT_RESUME") == "1"
strict_end = os.environ.get("FAKE_AGENT_STRICT_END") == "1"
ask_again = os.environ.get("FAKE_AGENT_ASK_AGAIN") == "1"
results = {}  # the continue modes: each call's function response, by the call's id(), run as it arrived
jsonl = os.environ.get("FAKE_AGENT_JSONL") == "1"
attempts = int(os.environ.get("FAKE_AGENT_ATTEMPTS", "4"))
retract = os.environ.get("FAKE_AGENT_RETRACT") == "1"
malformed_keeps_text = os.environ.get("FAKE_AGENT_MALFORMED_KEEPS_TEXT") == "1"
malformed = False
merge = os.environ.get("FAKE_AGENT_MERGE") == "1"
merging = merged_once = False
abandon = os.environ.get("FAKE_AGENT_ABANDON") == "1"
phantom = os.environ.get("FAKE_AGENT_PHANTOM") == "1"


tool_timeout = float(os.environ["FAKE_AGENT_TOOL_TIMEOUT_S"]) if os.environ.get("FAKE_AGENT_TOOL_TIMEOUT_S") else None


def run_call(c):
    """Runs the call's command in a process group of its own and returns its function response:
    {"output": "ok"} for a quiet success, {"output": STDOUT} for one that prints, {"error": STDOUT,
    "exit_code": N} for a non-zero exit, {"error": "timed out after T s"} when FAKE_AGENT_TOOL_TIMEOUT_S
    is set and the command outlives it (the group is killed, as a CLI's shell tool does)."""
    p = subprocess.Popen(["/bin/sh", "-c", c["args"]["command"]], stdout=subprocess.PIPE,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=tool_timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return {"error": f"timed out after {tool_timeout:g} s"}
    text = out.decode(errors="replace").strip()
    if p.returncode != 0:
        return {"error": text, "exit_code": p.returncode}
    return {"output": text or "ok"}


def attempt():
    """One streamed attempt: (calls, text, finished). In the continue modes each call runs here,
    as soon as its frame arrives."""
    global blocked, truncated, malformed
    truncated = malformed = False
    conn = http.client.HTTPConnection(base.hostname, base.port, timeout=30)
    calls, text, finished = [], "", False
    try:
        conn.request("POST", path, json.dumps({"contents": history}), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status in (400, 401, 403, 404) and mode != "retry-4xx":
            sys.exit(1)  # not retryable: the same request cannot succeed
        if resp.status != 200:
            delay = re.search(r'"retryDelay": *"([0-9.]+)s"', resp.read().decode())
            if delay and mode != "no-wait":
                time.sleep(float(delay.group(1)))
            return calls, text, False
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data: "):
                continue
            try:
                frame = json.loads(line[6:])
            except ValueError:
                if mode == "skip-undecodable":
                    continue
                raise
            cand = frame["candidates"][0]
            for part in cand.get("content", {}).get("parts", []):
                if "functionCall" in part:
                    calls.append(part["functionCall"])
                    if mode.startswith("continue"):
                        results[id(part["functionCall"])] = run_call(part["functionCall"])
                if "text" in part:
                    text += part["text"]
            if cand.get("finishReason") in ("STOP", "MAX_TOKENS"):
                finished = True
                truncated = cand.get("finishReason") == "MAX_TOKENS"
            if cand.get("finishReason") == "MALFORMED_FUNCTION_CALL":
                malformed = True
            if cand.get("finishReason") == "SAFETY" and mode != "retry-filter":
                blocked = True
    except (OSError, http.client.HTTPException, ValueError, KeyError, IndexError, TypeError, AttributeError):
        # a lost connection, an undecodable frame, an in-stream error: the attempt failed (after
        # its finish too, with FAKE_AGENT_STRICT_END)
        if strict_end:
            finished = False
    finally:
        conn.close()
    return calls, text, finished


for turn in range(8):
    pending = []
    for tries in range(attempts):
        calls, text, finished = attempt()
        if jsonl and text and (finished or mode == "show-partial" or show_partial):
            print(json.dumps({"type": "text", "text": text}), flush=True)
        if blocked and resume:
            break
        if merge and not finished and text and not calls and not blocked:
            break  # kept below, and continued
        if malformed and malformed_keeps_text and text:
            if jsonl and not show_partial and mode != "show-partial":
                print(json.dumps({"type": "text", "text": text}), flush=True)  # kept: shown
            break
        if blocked or (mode == "give-up" and not finished):
            sys.exit(1)
        pending = (pending + calls) if mode == "duplicate" else calls
        if finished or (mode.startswith("continue") and calls) or (mode == "continue-text" and text):
            break
        if jsonl and retract and tries + 1 < attempts:
            print(json.dumps({"type": "retry", "preserveText": False}), flush=True)
    else:
        sys.exit(1)
    if resume and (blocked or (truncated and not calls)):
        if not jsonl:
            print(text, flush=True)
        history.append({"role": "model", "parts": [{"text": text}] * bool(text)})
        reminder = "Your response above was stopped by a safety classifier." if blocked else "Output token limit hit. Resume directly."
        history.append({"role": "user", "parts": [{"text": reminder}]})
        blocked = False
        continue
    if merge and not finished and text and not calls and not blocked:
        if jsonl:
            print(json.dumps({"type": "text", "text": text}), flush=True)
        history.append({"role": "model", "parts": [{"text": text}]})
        history.append({"role": "user", "parts": [{"text": "Resume directly."}]})
        merging = True
        continue
    if merging:
        history.pop()  # the "Resume directly." prompt
        history[-1]["parts"] += [{"text": text}] * bool(text) + [{"functionCall": c} for c in calls]
        merging = False
        merged_once = True
        if not calls:
            if not jsonl:
                print(text)
            sys.exit(0)
        history.append({"role": "user", "parts": [{"functionResponse": {"name": c["name"], "response": run_call(c)}} for c in calls]})
        continue
    if malformed and malformed_keeps_text and text:
        history.append({"role": "model", "parts": [{"text": text}]})
        history.append({"role": "user", "parts": [{"text": "Resume directly."}]})
        continue
    if abandon and merged_once and calls:
        if not jsonl:
            print(text)
        sys.exit(0)  # the calls asked for are never run, and success is reported
    if truncated_fails and truncated and not calls:
        if not jsonl:
            print(text)
        print("incomplete answer: max tokens", file=sys.stderr)
        sys.exit(1)
    kept = [] if mode == "continue-drop" and not finished else calls
    parts = [{"text": text}] * bool(text) + [{"functionCall": c} for c in kept]
    if mode == "continue-text" and history[-1]["role"] == "model":
        history[-1]["parts"] += parts
    else:
        history.append({"role": "model", "parts": parts})
    if mode == "continue-text" and not finished and not calls:
        continue  # the cut text is kept: ask for more of it
    if not pending:
        if ask_again:
            history.append({"role": "user", "parts": [{"text": "Anything else?"}]})
            attempt()
        if mode != "silent" and not jsonl:
            print(text)
        sys.exit(0)
    responses = []
    for c in pending:
        response = results.get(id(c)) if mode.startswith("continue") else run_call(c)
        responses.append({"functionResponse": {"name": c["name"], "response": response or {"output": "ok"}}})
    if kept:
        history.append({"role": "user", "parts": responses})
        if phantom:
            history.append({"role": "model", "parts": [{"text": "No response requested."}]})
            history.append({"role": "user", "parts": [{"text": "Go on."}]})
            phantom = False
    else:
        history.append({"role": "user", "parts": [{"text": "Continue."}]})
sys.exit(1)
