// Characterization test of the Bedrock answer: the exact bytes the cloud path writes (event-stream
// messages, exception events, Bedrock's HTTP errors and their headers) for a fixed corpus of
// Anthropic answers played through CloudResponder (text with escapes and non-ASCII, calls in
// fragments, reasoning, in-stream errors of every status the exception table maps, a malformed
// frame, a sliced stream, cuts) and of hand-written SSE writes (multi-line data, CRLF, comments, an
// event without data, writes split at odd offsets, an unterminated last frame), against
// mock_server/testdata/eventstream_bytes.txt. The encoder is written for speed; this pins it to the
// bytes its first implementation wrote. HICCUP_UPDATE_GOLDEN=1 rewrites the file (review the diff:
// every changed byte is a wire change).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "mock_server/eventstream/cloud_paths.h"
#include "mock_server/eventstream/eventstream.h"

#ifndef HICCUP_SOURCE_DIR
#error "HICCUP_SOURCE_DIR must name the source tree"
#endif

namespace eventstream_bytes_test {

namespace {

using nlohmann::json;

const std::string kBody =
    R"({"anthropic_version":"bedrock-2023-05-31","max_tokens":100,"messages":[{"role":"user","content":"go"}]})";
const std::string kPath = "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream";

/// `bytes` as lowercase hex, 64 digits a line; past 4 KiB its length, its FNV-1a 64 and its
/// first and last 64 bytes.
void hex(std::ostringstream& out, std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  if (bytes.size() > 4096) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ULL;
    out << bytes.size() << " bytes, fnv1a64 " << h << ", first and last 64:\n";
    hex(out, bytes.substr(0, 64));
    hex(out, bytes.substr(bytes.size() - 64));
    return;
  }
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    out << kHex[c >> 4] << kHex[c & 15];
    if (i % 32 == 31 || i + 1 == bytes.size()) out << "\n";
  }
}

mock::CallEvent call(std::string name, json args, int fragments) {
  mock::CallEvent c;
  c.name = std::move(name);
  c.args = std::move(args);
  c.fragments = fragments;
  return c;
}

struct Case {
  std::string label;
  mock::Attempt attempt;
};

std::vector<Case> corpus() {
  using mock::FinishReason;
  const std::string escapes = std::string("q\"b\\s/ n\n t\t r\r ") + '\x01' + " end";
  const std::string unicode = "h\xc3\xa9llo \xe2\x80\x93 \xf0\x9f\x98\x80";
  std::vector<Case> c;
  auto stream = [](std::vector<mock::Event> events, std::optional<mock::Fault> fault = std::nullopt,
                   std::optional<int> slice = std::nullopt) {
    mock::Attempt a;
    a.events = std::move(events);
    a.fault = std::move(fault);
    a.slice_bytes = slice;
    return a;
  };
  c.push_back({"three texts, stop", stream({mock::TextEvent{"The build"}, mock::TextEvent{" is deployed"},
                                            mock::TextEvent{" to staging."}, mock::FinishEvent{}})});
  c.push_back({"escapes, empty text, unicode, max_tokens",
               stream({mock::TextEvent{escapes}, mock::TextEvent{""}, mock::TextEvent{unicode},
                       mock::FinishEvent{FinishReason::kMaxTokens}})});
  c.push_back({"text, two calls in fragments, stop",
               stream({mock::TextEvent{"before"}, call("run_shell", {{"cmd", "ls -la \"/tmp\""}, {"n", 3}}, 3),
                       call("deploy", {{"env", unicode}}, 1), mock::FinishEvent{}})});
  c.push_back({"reasoning, text, stop", stream({mock::ReasoningEvent{"think \"first\"", ""}, mock::TextEvent{"done"},
                                                mock::FinishEvent{}})});
  for (int status : {400, 404, 429, 500, 503, 504, 529}) {
    c.push_back({"text, in-stream error " + std::to_string(status),
                 stream({mock::TextEvent{"part"}, mock::FinishEvent{}}, mock::ErrorEventFault{1, status})});
  }
  c.push_back({"in-stream error 529 first", stream({mock::TextEvent{"x"}}, mock::ErrorEventFault{0, 529})});
  c.push_back({"malformed frame after the text", stream({mock::TextEvent{"x"}, mock::FinishEvent{}}, mock::MalformedFault{1})});
  c.push_back({"sliced by 7 bytes", stream({mock::TextEvent{"sliced text"}, mock::FinishEvent{}}, std::nullopt, 7)});
  c.push_back({"sliced by 100 bytes", stream({mock::TextEvent{"sliced text"}, mock::FinishEvent{}}, std::nullopt, 100)});
  c.push_back({"cut after the text, 10 bytes", stream({mock::TextEvent{"Hello"}, mock::FinishEvent{}}, mock::CutFault{1, 10})});
  c.push_back({"cut first, 1 byte", stream({mock::TextEvent{"Hello"}, mock::FinishEvent{}}, mock::CutFault{0, 1})});
  c.push_back({"cut after the text, 5000 bytes", stream({mock::TextEvent{"Hello"}, mock::FinishEvent{}}, mock::CutFault{1, 5000})});
  c.push_back({"disconnect after the text", stream({mock::TextEvent{"Hello"}, mock::FinishEvent{}}, mock::DisconnectFault{1})});
  c.push_back({"end after the text", stream({mock::TextEvent{"Hello"}, mock::FinishEvent{}}, mock::EndFault{1})});
  for (int status : {400, 401, 404, 408, 424, 429, 500, 501, 503, 529}) {
    mock::Attempt a;
    a.status = status;
    if (status == 429) a.retry_after_s = 3;
    c.push_back({"status " + std::to_string(status), a});
  }
  return c;
}

/// Hand-written SSE writes, converted as they are.
std::vector<std::pair<std::string, std::vector<std::string>>> sse_corpus() {
  std::string three;
  for (int i = 0; i < 3; ++i) three += "event: e\ndata: {\"type\":\"t" + std::to_string(i) + "\"}\n\n";
  std::vector<std::string> by5;
  for (std::size_t at = 0; at < three.size(); at += 5) by5.push_back(three.substr(at, 5));
  return {
      {"one frame", {"event: message_start\ndata: {\"type\":\"message_start\"}\n\n"}},
      {"three frames in one write", {three}},
      {"three frames in writes of 5 bytes", by5},
      {"empty writes between", {"", "event: a\ndata: {}\n\n", "", "event: b\ndata: {}\n\n", ""}},
      {"multi-line data, CRLF, comment, no space after the colon",
       {": a comment\r\nevent:x\r\ndata:{\"a\":\r\ndata: 1}\r\n\n", "data: only data\n\n"}},
      {"an event without data", {"event: ping\n\n"}},
      {"an error event with a long message",
       {"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"" +
        std::string(300, 'o') + "\"}}\n\n"}},
      {"an error event that does not parse", {"event: error\ndata: {not json\n\n"}},
      {"an error event of an unknown type",
       {"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"weird_error\",\"message\":\"m\\u00e9\"}}\n\n"}},
      {"an unterminated last frame", {"event: a\ndata: {}\n\n", "event: b\ndata: {\"x\":"}},
      {"an unterminated frame split", {"event: a\ndata: {}\n\nevent: b\nda", "ta: {\"x\":1"}},
      {"a large payload", {"event: d\ndata: " + std::string(70000, 'z') + "\n\n"}},
  };
}

std::string encode_all() {
  std::ostringstream out;
  for (const Case& c : corpus()) {
    mock::Script script;
    script.provider = "anthropic";
    script.turns.push_back({{c.attempt}});
    auto engine = std::make_shared<mock::ScriptEngine>(std::move(script));
    auto responder = mock::cloud::make_cloud_responder(engine, kPath);
    REQUIRE(responder);
    const mock::Plan plan = responder->respond({"POST", kPath, kBody});
    out << "=== " << c.label << "\nstatus " << plan.status << " " << plan.content_type << " streaming "
        << plan.streaming << " ending " << static_cast<int>(plan.ending) << " body_bytes " << plan.body_bytes << "\n";
    for (const auto& [k, v] : plan.headers) out << k << ": " << v << "\n";
    std::size_t w = 0;
    for (const mock::Action& a : plan.actions) {
      if (const auto* write = std::get_if<mock::WriteAction>(&a)) {
        out << "-- write " << w++ << (write->terminal ? " terminal" : "") << "\n";
        hex(out, write->bytes);
      }
    }
    out << "-- body\n";
    hex(out, plan.body);
  }
  for (const auto& [label, writes] : sse_corpus()) {
    out << "=== sse: " << label << "\n";
    std::vector<std::string_view> views(writes.begin(), writes.end());
    const std::vector<std::string> converted = mock::cloud::sse_writes_to_eventstream(views);
    for (std::size_t w = 0; w < converted.size(); ++w) {
      out << "-- write " << w << "\n";
      hex(out, converted[w]);
    }
  }
  out << "=== messages\n";
  hex(out, mock::eventstream::encode_message({}, ""));
  hex(out, mock::eventstream::encode_message({{":a", ""}, {std::string(300, 'n'), std::string(70000, 'v')}}, "p"));
  hex(out, mock::eventstream::chunk_message(""));
  hex(out, mock::eventstream::chunk_message(std::string("\0\xff\x01", 3)));
  hex(out, mock::eventstream::exception_message("throttlingException", "{\"message\":\"slow down\"}"));
  return out.str();
}

std::string golden_path() { return std::string(HICCUP_SOURCE_DIR) + "/mock_server/testdata/eventstream_bytes.txt"; }

}  // namespace

TEST_CASE("eventstream: the Bedrock answers of the corpus are the pinned bytes") {
  const std::string actual = encode_all();
  const char* update = std::getenv("HICCUP_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(golden_path(), std::ios::binary) << actual;
    WARN("rewrote " << golden_path());
  }
  std::ifstream in(golden_path(), std::ios::binary);
  REQUIRE(in.good());
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string expected = buf.str();
  // Name the first differing line, not two large strings.
  std::istringstream a(actual), e(expected);
  std::string la, le;
  int line = 0;
  while (true) {
    ++line;
    const bool more_a = static_cast<bool>(std::getline(a, la));
    const bool more_e = static_cast<bool>(std::getline(e, le));
    if (!more_a && !more_e) break;
    INFO("line " << line << " of " << golden_path());
    REQUIRE(more_a == more_e);
    REQUIRE(la == le);
  }
  CHECK(actual.size() == expected.size());
}

}  // namespace eventstream_bytes_test
