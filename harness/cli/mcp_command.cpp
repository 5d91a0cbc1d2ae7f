// `hiccup mcp URL`: the MCP stdio transport for clients that spawn their MCP servers, bridged to
// the Streamable HTTP endpoint of a running `hiccup serve` (mock/mcp/stdio_bridge.h), so a CLI
// configured with a command plays the same scripted tools, journal and counts as one that speaks
// HTTP.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>

#include "harness/cli/args.h"
#include "harness/cli/commands.h"
#include "mock_server/mcp/stdio_bridge.h"

namespace harness::cli {
namespace {

constexpr const char* kMcpUsage = R"(usage: hiccup mcp URL [--read-timeout-s N] [--drain-s N]

The MCP stdio transport bridged to the MCP endpoint of a running `hiccup serve`: URL is that
endpoint, http://127.0.0.1:PORT/mcp for the default session or http://127.0.0.1:PORT/s/ID/mcp
for session ID. Reads newline-delimited JSON-RPC messages on stdin and POSTs each to URL (MCP
Streamable HTTP, with the Mcp-Session-Id initialize brought); writes every message the endpoint
answers to stdout, one per line (progress notifications as they come, then the response). The
session's scenario scripts each tools/call (docs/SCENARIO-FORMAT.md "tools"); it is journaled at
GET /_hiccup/sessions/ID/tool_calls as over HTTP. A lost reply writes nothing (a note on stderr);
a hung call writes nothing. When stdin ends (the client shuts its server down, MCP stdio), the
answers still in flight are waited for up to --drain-s and written, then the bridge exits; a
call still running then (a hung one) is abandoned with a note on stderr. Only JSON-RPC messages
reach stdout: an answer that is not one (a wrong session id in URL gets the control API's error)
is noted on stderr, and a request with an id gets a JSON-RPC error (-32603) naming it, as does a
request that finds nothing listening at URL.

exit codes: 0 every request reached the endpoint; 2 usage error; 3 nothing accepted connections
at URL for some request (no `hiccup serve` there, or it stopped).

Configure it as a client's stdio MCP server, e.g. {"command": "hiccup", "args": ["mcp",
"http://127.0.0.1:PORT/s/ID/mcp"]}.

options:
  --read-timeout-s N    give up an answer silent this long (default 86400: a hung call outlives
                        any client's patience)
  --drain-s N           at the end of stdin, wait this long for answers still in flight
                        (default 10; 0 exits at once)
)";

}  // namespace

int mcp_command(const Args& args) {
  // The endpoint may close while a large message is still being sent, and the client may close
  // stdout: a failed write, not a process killed by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  ArgReader in(args);
  std::string timeout_text = "86400";
  std::string drain_text = "10";
  std::vector<std::string> positional;
  while (!in.done()) {
    if (in.flag("--help") || in.flag("-h")) {
      std::cout << kMcpUsage;
      return kExitPassed;
    }
    if (in.value("--read-timeout-s", timeout_text) || in.value("--drain-s", drain_text)) {
    } else if (in.peek().rfind("-", 0) == 0) in.set_error("unknown option \"" + in.take() + "\"");
    else positional.push_back(in.take());
  }
  const auto timeout = in.number("--read-timeout-s", timeout_text, 1, std::numeric_limits<int>::max(), "a whole number >= 1");
  const auto drain = in.number("--drain-s", drain_text, 0, 86400, "a whole number of seconds, 0..86400");
  if (positional.size() != 1 && in.error().empty()) in.set_error("expected one URL (the MCP endpoint of a hiccup serve session)");
  std::string url_error;
  std::optional<mock::mcp::Endpoint> endpoint;
  if (in.error().empty()) {
    endpoint = mock::mcp::parse_endpoint(positional.front(), url_error);
    if (!endpoint) in.set_error(url_error);
  }
  if (!in.error().empty()) return usage_error("mcp", in.error());
  mock::mcp::BridgeOptions options;
  options.read_timeout_s = static_cast<int>(*timeout);
  mock::mcp::StdioBridge bridge(*endpoint, options);
  bridge.run(std::cin, std::cout, std::cerr, /*wait=*/false);
  // stdin ended: the client shuts its server down (MCP stdio), which may close stdin right after
  // its last request (a script piping messages in). The answers in flight are written first, for
  // at most --drain-s; what still runs then (a hung call) is abandoned with the process.
  if (const std::size_t abandoned = bridge.drain(std::chrono::seconds(*drain)); abandoned > 0) {
    std::cerr << "hiccup mcp: stdin ended; " << abandoned << " request(s) still without an answer after "
              << *drain << " s abandoned\n";
  }
  int code = kExitPassed;
  if (const std::uint64_t refused = bridge.refused(); refused > 0) {
    std::cerr << "hiccup mcp: " << refused << " of " << bridge.posted() << " request(s) found nothing accepting connections at "
              << "http://" << endpoint->host << ':' << endpoint->port << endpoint->path << " (exit 3)\n";
    code = kExitInvalidInput;
  }
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(code);
}

}  // namespace harness::cli
