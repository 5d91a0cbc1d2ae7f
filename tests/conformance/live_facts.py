#!/usr/bin/env python3
"""Holds hiccup's streaming answers against facts from recordings of live API traffic.

tests/conformance/live_facts.json says, per wire format and per stream kind (`text`, `call`), the
order of events the public recordings of live answers show (a grammar) and, per event, the fields
they carried: JSON pointer, JSON type, required or optional, constant values, fewest array
elements. This script starts `hiccup serve` (no default session), creates one session per format
and kind over the control API (a two-piece text answer; a call with its arguments in four
fragments), requests each format's streaming path with a minimal valid request, splits the SSE
frames and checks them:

  framing        each frame `event:`/`data:` lines as the format has them, split by its separator;
                 the `event:` line equal to the data's `type`; the Content-Type header
  grammar        the sequence of event names matches the stream's grammar
  fields         every recorded field present (where its parent is) with a recorded type; values
                 and minimum array lengths as recorded
  extra fields   fields no recording showed: printed as warnings, never a failure

A difference listed in the format's `known_differences` passes and is printed as KNOWN; one not
listed fails, naming format, stream, event, frame, JSON pointer, expected and found; a listed one
that no longer occurs fails too (remove it from the fixture). The notation is the fixture's own
`notation` member. Exit status: 0 no unlisted difference, 1 differences, 2 usage or setup error.

Usage: live_facts.py --hiccup BUILD/hiccup [--facts FILE] [--verbose] [--self-test]
(--self-test: drifts made in a copy of the fixture must each fail; see DRIFTS.)
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))

QUESTION = "What is the weather in New York City, USA?"

# One scenario per stream kind (docs/SCENARIO-FORMAT.md); the call's follow-up turn is there for
# the lint (a turn ending with calls needs an answer turn), it is never requested.
def scenario(provider, kind):
    if kind == "text":
        turns = [{"attempts": [{"events": [{"text": "Current weather in New York City"},
                                           {"text": ", USA: Sunny."}, {"finish": "stop"}]}]}]
    else:
        turns = [{"attempts": [{"events": [{"call": {"name": "get_weather", "fragments": 4,
                                                     "args": {"location": "New York City, USA"}}},
                                           {"finish": "stop"}]}]},
                 {"attempts": [{"events": [{"text": "Sunny."}, {"finish": "stop"}]}]}]
    return {"schema": 1, "name": f"live-facts-{provider}-{kind}", "provider": provider,
            "prompt": QUESTION, "turns": turns}

# Each format's streaming path and a minimal valid request (docs/WIRE-FORMATS.md).
REQUESTS = {
    "gemini": ("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
               {"contents": [{"role": "user", "parts": [{"text": QUESTION}]}]}),
    "openai-chat": ("/v1/chat/completions",
                    {"model": "gpt-4o-mini", "stream": True, "stream_options": {"include_usage": True},
                     "messages": [{"role": "user", "content": QUESTION}]}),
    "openai-responses": ("/v1/responses", {"model": "gpt-5", "stream": True, "input": QUESTION}),
    "anthropic": ("/v1/messages", {"model": "claude-sonnet-4-6", "max_tokens": 1024, "stream": True,
                                   "messages": [{"role": "user", "content": QUESTION}]}),
}


def json_type(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def split_pointer(p):
    return [s.replace("~1", "/").replace("~0", "~") for s in p.split("/")[1:]]


def resolve(doc, pointer):
    """The value at `pointer` ('0' indexes an array), or a sentinel when absent."""
    v = doc
    for s in split_pointer(pointer):
        if isinstance(v, dict) and s in v:
            v = v[s]
        elif isinstance(v, list) and s.isdigit() and int(s) < len(v):
            v = v[int(s)]
        else:
            return ABSENT
    return v


ABSENT = object()


def expand(doc, pattern):
    """Yields (concrete pointer, value or ABSENT) for a pattern whose `*` runs over array
    elements; only locations whose parent exists are yielded (a missing parent is its own field)."""
    segs = split_pointer(pattern)

    def go(v, i, path):
        if i == len(segs):
            yield path, v
            return
        s = segs[i]
        if s == "*":
            if isinstance(v, list):
                for k, x in enumerate(v):
                    yield from go(x, i + 1, f"{path}/{k}")
            return
        if isinstance(v, dict):
            if s in v:
                yield from go(v[s], i + 1, f"{path}/{s}")
            elif i == len(segs) - 1:
                yield f"{path}/{s}", ABSENT

    yield from go(doc, 0, "")


def patterns_of(doc, prefix=""):
    """Every field of `doc` as a pattern (array indexes as `*`)."""
    out = set()
    if isinstance(doc, dict):
        for k, v in doc.items():
            p = f"{prefix}/{k}"
            out.add(p)
            out |= patterns_of(v, p)
    elif isinstance(doc, list):
        for v in doc:
            p = f"{prefix}/*"
            out.add(p)
            out |= patterns_of(v, p)
    return out


def compile_grammar(grammar):
    """A regex over event names: each name becomes one private-use character."""
    names = {}
    out = []
    for tok in re.findall(r"\(|\)[?*+]?|[^\s()]+", grammar):
        if tok == "(" or tok.startswith(")"):
            out.append(tok)
            continue
        suffix = tok[-1] if tok[-1] in "?*+" else ""
        name = tok[:-1] if suffix else tok
        ch = names.setdefault(name, chr(0xE000 + len(names)))
        out.append(re.escape(ch) + suffix)
    return re.compile("".join(out)), names


def matches_grammar(grammar, sequence):
    rx, names = compile_grammar(grammar)
    if any(n not in names for n in sequence):
        return False
    return rx.fullmatch("".join(names[n] for n in sequence)) is not None


class Findings:
    def __init__(self):
        self.items = []  # dicts: format, stream, event, pointer, kind, expected, found, where
        self.warnings = []

    def add(self, **kw):
        self.items.append(kw)


def frames_of(body, framing):
    """[(event line or None, data text)] split by the format's separator; framing problems as
    strings in the second list."""
    problems = []
    sep = framing["frame_separator"]
    if sep == "\r\n\r\n" and re.search(r"(?<!\r)\n\n", body):
        problems.append("a frame ends with \\n\\n, the recordings end every frame with \\r\\n\\r\\n")
    out = []
    for block in body.split(sep):
        if not block.strip():
            continue
        ev, data = None, []
        for line in block.replace("\r\n", "\n").split("\n"):
            if line.startswith("event:"):
                ev = line[len("event:"):].strip()
            elif line.startswith("data:"):
                data.append(line[len("data:"):].lstrip(" "))
            elif line.strip():
                problems.append(f"a line that is neither event: nor data: {line[:60]!r}")
        out.append((ev, "\n".join(data)))
    return out, problems


def name_event(fmt_facts, ev_line, data):
    naming = fmt_facts["naming"]
    if fmt_facts["framing"]["event_line"]:
        name = ev_line or "(no event line)"
        ptr = naming.get("refine", {}).get(name)
        if ptr is not None:
            v = resolve(data, ptr)
            name += ":" + (v if isinstance(v, str) else "?")
        return name
    for rule in naming["rules"]:
        ok = True
        for cond in rule["if"]:
            v = resolve(data, cond["pointer"])
            if cond["is"] == "present":
                ok = v is not ABSENT
            elif cond["is"] == "absent":
                ok = v is ABSENT
            elif cond["is"] == "non-null":
                ok = v is not ABSENT and v is not None
            if not ok:
                break
        if ok:
            return rule["name"]
    return "(unnamed)"


def check_event(fmt, stream, name, index, data, spec, findings):
    where = f"frame {index}"
    optional = set(spec.get("optional", []))
    fields = spec["fields"]
    for pattern, types in fields.items():
        allowed = types.split("|")
        for concrete, v in expand(data, pattern):
            if v is ABSENT:
                if pattern not in optional:
                    findings.add(format=fmt, stream=stream, event=name, pointer=pattern, kind="missing",
                                 expected=types, found="nothing", where=f"{where} {concrete}")
            elif json_type(v) not in allowed and not (json_type(v) == "integer" and "number" in allowed):
                findings.add(format=fmt, stream=stream, event=name, pointer=pattern, kind="type",
                             expected=types, found=json_type(v), where=f"{where} {concrete}")
    for pattern, want in spec.get("values", {}).items():
        for concrete, v in expand(data, pattern):
            if v is not ABSENT and v != want:
                findings.add(format=fmt, stream=stream, event=name, pointer=pattern, kind="value",
                             expected=json.dumps(want), found=json.dumps(v), where=f"{where} {concrete}")
    for pattern, least in spec.get("min_items", {}).items():
        for concrete, v in expand(data, pattern):
            if isinstance(v, list) and len(v) < least:
                findings.add(format=fmt, stream=stream, event=name, pointer=pattern, kind="min_items",
                             expected=f"at least {least} element(s)", found=f"{len(v)}",
                             where=f"{where} {concrete}")
    open_ = spec.get("open", [])
    for extra in sorted(patterns_of(data) - set(fields)):
        if any(extra.startswith(o + "/") for o in open_):
            continue  # free-form content (a call's arguments)
        parent = extra.rsplit("/", 1)[0]
        if parent and parent not in fields:
            continue  # only the outermost unrecorded field is worth a line
        findings.warnings.append(f"{fmt} {stream}: {name} {where}: {extra} is not in any recording")


def check_stream(fmt, stream, facts, body, content_type, findings, verbose):
    fmt_facts = facts["formats"][fmt]
    framing = fmt_facts["framing"]
    want_ct = framing["content_type"]
    want_ct = want_ct if isinstance(want_ct, list) else [want_ct]
    norm = lambda t: t.replace(" ", "").lower()  # noqa: E731
    if norm(content_type) not in {norm(t) for t in want_ct}:
        findings.add(format=fmt, stream=stream, event=None, pointer=None, kind="content_type",
                     expected=" or ".join(want_ct), found=content_type, where="response header")
    frames, problems = frames_of(body, framing)
    for p in problems:
        findings.add(format=fmt, stream=stream, event=None, pointer=None, kind="framing",
                     expected=framing["frame_separator"].encode("unicode_escape").decode(), found=p,
                     where="body")
    sequence = []
    literals = fmt_facts["naming"].get("literal", [])
    for i, (ev_line, text) in enumerate(frames):
        if text in literals:
            sequence.append(text)
            continue
        try:
            data = json.loads(text)
        except ValueError as e:
            findings.add(format=fmt, stream=stream, event=None, pointer=None, kind="framing",
                         expected="JSON data", found=f"{e}: {text[:80]!r}", where=f"frame {i}")
            continue
        if framing["event_line"] != (ev_line is not None):
            findings.add(format=fmt, stream=stream, event=None, pointer=None, kind="framing",
                         expected="an event: line" if framing["event_line"] else "no event: line",
                         found=repr(ev_line), where=f"frame {i}")
        if ev_line is not None and isinstance(data, dict) and data.get("type") != ev_line:
            findings.add(format=fmt, stream=stream, event=ev_line, pointer="/type", kind="value",
                         expected=json.dumps(ev_line), found=json.dumps(data.get("type")), where=f"frame {i}")
        name = name_event(fmt_facts, ev_line, data)
        sequence.append(name)
        spec = fmt_facts["events"].get(name)
        if spec is None:
            findings.add(format=fmt, stream=stream, event=name, pointer=None, kind="unrecorded_event",
                         expected="an event the recordings show", found=name, where=f"frame {i}")
            continue
        check_event(fmt, stream, name, i, data, spec, findings)
    grammar = fmt_facts["streams"][stream]["grammar"]
    if verbose:
        print(f"  {fmt} {stream}: {' '.join(sequence)}")
    if not matches_grammar(grammar, sequence):
        findings.add(format=fmt, stream=stream, event=None, pointer=None, kind="grammar",
                     expected=grammar, found=" ".join(sequence), where="event order")


def known_for(facts, fmt):
    return facts["formats"][fmt].get("known_differences", [])


def matches_known(finding, known):
    if known["kind"] != finding["kind"]:
        return False
    for key in ("stream", "event", "pointer"):
        if key in known and known[key] != finding.get(key):
            return False
    if known["kind"] == "grammar":
        # a grammar difference lists hiccup's own order: the finding must match it exactly
        return matches_grammar(known["hiccup"], finding["found"].split())
    return True


def start_server(hiccup):
    # stderr to a file, not a pipe: a server that writes much (a sanitizer's report) never blocks
    err = tempfile.TemporaryFile(mode="w+")
    child = subprocess.Popen([hiccup, "serve", "--port", "0"], stdout=subprocess.PIPE, stderr=err, text=True)
    url = child.stdout.readline().strip()
    if not url.startswith("http://"):
        child.kill()
        child.wait()
        err.seek(0)
        raise RuntimeError(f"hiccup serve printed no URL (got {url!r}); stderr:\n{err.read()}")
    return child, url


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy for 127.0.0.1


def post(url, body, timeout=20):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with _OPENER.open(req, timeout=timeout) as r:
        return r.headers.get("Content-Type", ""), r.read().decode("utf-8")


def fetch_streams(hiccup):
    """Serves each format's text and call scenario and returns [(format, stream, content type,
    body)]. Raises RuntimeError or OSError when the server cannot be run or asked."""
    child, url = start_server(hiccup)
    out = []
    try:
        for fmt, (path, request) in REQUESTS.items():
            for stream in ("text", "call"):
                sid = f"{fmt}-{stream}"
                post(f"{url}/_hiccup/sessions", {"id": sid, "scenario": scenario(fmt, stream)})
                ctype, body = post(f"{url}/s/{sid}{path}", request)
                out.append((fmt, stream, ctype, body))
    finally:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
    return out


def evaluate(facts, streams, verbose=False):
    """Checks the streams against the facts: (failure lines, known lines, warning lines)."""
    findings = Findings()
    for fmt, stream, ctype, body in streams:
        check_stream(fmt, stream, facts, body, ctype, findings, verbose)
    # One line per difference (format, stream, event, pointer, kind), naming the frames it was seen in.
    groups = {}
    for fd in findings.items:
        key = (fd["format"], fd["stream"], fd["event"] or "", fd["pointer"] or "", fd["kind"],
               fd["expected"], fd["found"])
        groups.setdefault(key, []).append(fd)
    failures, known_lines, used = [], [], set()
    for fds in groups.values():
        fd = fds[0]
        hit = next((k for k, known in enumerate(known_for(facts, fd["format"])) if matches_known(fd, known)), None)
        where = ", ".join(sorted({x["where"] for x in fds}, key=lambda w: (len(w), w)))
        line = (f"{fd['format']} {fd['stream']}" + (f" {fd['event']}" if fd["event"] else "") +
                (f" {fd['pointer']}" if fd["pointer"] else "") +
                f": {fd['kind']}: expected {fd['expected']}, found {fd['found']} ({where})")
        if hit is None:
            failures.append("FAIL " + line)
        else:
            used.add((fd["format"], hit))
            known_lines.append("KNOWN " + line)
    for fmt in facts["formats"]:
        for k, known in enumerate(known_for(facts, fmt)):
            if (fmt, k) not in used:
                what = ", ".join(f"{key} {known[key]}" for key in ("stream", "event", "pointer") if key in known)
                failures.append(f"FAIL {fmt}: known difference no longer seen ({known['kind']}"
                                + (f"; {what}" if what else "") + "): remove it from the fixture "
                                "(tests/conformance/live_facts.json) and from docs/WIRE-FORMATS.md")
    return failures, known_lines, sorted(set(findings.warnings))


# The self-test: each drift, made in a copy of the fixture, must fail with a line holding these words.
def _rename(facts, fmt, event, old, new):
    fields = facts["formats"][fmt]["events"][event]["fields"]
    fields[new] = fields.pop(old)


DRIFTS = [
    ("a field renamed", lambda f: _rename(f, "anthropic", "content_block_delta:text_delta", "/delta/text", "/delta/txt"),
     ["FAIL anthropic text content_block_delta:text_delta /delta/txt: missing: expected string, found nothing"]),
    ("a nested field renamed", lambda f: _rename(f, "openai-chat", "call_arguments",
                                                 "/choices/*/delta/tool_calls/*/function/arguments",
                                                 "/choices/*/delta/tool_calls/*/function/args"),
     ["FAIL openai-chat call call_arguments /choices/*/delta/tool_calls/*/function/args: missing"]),
    ("a type changed", lambda f: f["formats"]["openai-responses"]["events"]["response.output_text.delta"]
                                  ["fields"].__setitem__("/sequence_number", "string"),
     ["FAIL openai-responses text response.output_text.delta /sequence_number: type: expected string, found integer"]),
    ("a value changed", lambda f: f["formats"]["gemini"]["events"]["finish"]["values"]
                                  .__setitem__("/candidates/*/finishReason", "MAX_TOKENS"),
     ['FAIL gemini text finish /candidates/*/finishReason: value: expected "MAX_TOKENS", found "STOP"']),
    ("the Content-Type changed", lambda f: f["formats"]["gemini"]["framing"].__setitem__("content_type", "application/json"),
     ["FAIL gemini text: content_type: expected application/json, found text/event-stream"]),
    ("a frame separator changed", lambda f: f["formats"]["anthropic"]["framing"].__setitem__("frame_separator", "\r\n\r\n"),
     ["FAIL anthropic text: framing"]),
    ("the event order changed", lambda f: f["formats"]["openai-responses"]["streams"]["call"].__setitem__(
        "grammar", "response.created response.output_item.added:function_call response.function_call_arguments.delta+ "
                   "response.function_call_arguments.done response.output_item.done:function_call response.completed"),
     ["FAIL openai-responses call: grammar"]),
    ("a difference no known difference lists", lambda f: f["formats"]["openai-responses"]["events"]["response.created"]
                                                         ["optional"].remove("/response/store"),
     ["FAIL openai-responses text response.created /response/store: missing",
      "FAIL openai-responses call response.created /response/store: missing"]),
    ("an event order hiccup no longer sends", lambda f: f["formats"]["anthropic"]["streams"]["text"].__setitem__(
        "grammar", "message_start ping content_block_start:text content_block_delta:text_delta+ content_block_stop "
                   "message_delta message_stop"),
     ["FAIL anthropic text: grammar: expected message_start ping content_block_start:text"]),
    ("a listed difference that does not occur", lambda f: f["formats"]["gemini"]["known_differences"].append(
        {"kind": "missing", "pointer": "/responseId", "note": "self-test"}),
     ["FAIL gemini: known difference no longer seen (missing; pointer /responseId)"]),
]


def self_test(facts, streams):
    """Runs every drift of DRIFTS; returns the problems (empty when each one failed as it should)."""
    problems = []
    failures, _, _ = evaluate(facts, streams)
    if failures:
        problems.append("the fixture as it is does not pass:\n  " + "\n  ".join(failures))
    for label, mutate, wanted in DRIFTS:
        drifted = json.loads(json.dumps(facts))
        mutate(drifted)
        failures, _, _ = evaluate(drifted, streams)
        for want in wanted:
            if not any(line.startswith(want) for line in failures):
                problems.append(f"{label}: no failure line starting {want!r}; got:\n  " +
                                ("\n  ".join(failures) or "(no failure)"))
        print(f"{label}: {len(failures)} failure(s)" + (f": {failures[0]}" if failures else ""))
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hiccup", required=True, help="the hiccup binary")
    ap.add_argument("--facts", default=os.path.join(HERE, "live_facts.json"))
    ap.add_argument("--verbose", action="store_true", help="print each stream's event names")
    ap.add_argument("--self-test", action="store_true",
                    help="check that drifts made in a copy of the fixture (a renamed field, a changed type, "
                         "value or event order, an unlisted or stale known difference) each fail")
    args = ap.parse_args()
    try:
        with open(args.facts, encoding="utf-8") as f:
            facts = json.load(f)
    except (OSError, ValueError) as e:
        print(f"error: {args.facts}: {e}", file=sys.stderr)
        return 2
    try:
        streams = fetch_streams(args.hiccup)
    except (OSError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.self_test:
        problems = self_test(facts, streams)
        for p in problems:
            print("FAIL " + p)
        print(f"{len(DRIFTS)} drift(s) checked, {len(problems)} problem(s)")
        return 1 if problems else 0
    failures, known_lines, warnings = evaluate(facts, streams, args.verbose)
    for line in known_lines:
        print(line)
    for w in warnings:
        print("WARN " + w)
    for line in failures:
        print(line)
    print(f"{len(failures)} failure(s), {len(known_lines)} known difference line(s), {len(warnings)} warning(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
