// Redaction of credentials in request targets and headers (see credentials.h).
#include "mock_server/credentials.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace mock {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

template <std::size_t N>
bool one_of(std::string_view name, const std::array<std::string_view, N>& names) {
  return std::any_of(names.begin(), names.end(), [&](std::string_view n) { return iequals(name, n); });
}

/// A query parameter's name as a server would read it: percent-decoded ("%6Bey" is "key"), '+' as
/// a space, surrounding spaces and a trailing "[]" (PHP-style arrays: "key[]") dropped.
std::string decoded_name(std::string_view raw) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string name;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '%' && i + 2 < raw.size() && hex(raw[i + 1]) >= 0 && hex(raw[i + 2]) >= 0) {
      name += static_cast<char>(hex(raw[i + 1]) * 16 + hex(raw[i + 2]));
      i += 2;
    } else {
      name += raw[i] == '+' ? ' ' : raw[i];
    }
  }
  while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.pop_back();
  std::size_t start = 0;
  while (start < name.size() && (name[start] == ' ' || name[start] == '\t')) ++start;
  name.erase(0, start);
  if (name.size() > 2 && name.compare(name.size() - 2, 2, "[]") == 0) name.resize(name.size() - 2);
  return name;
}

}  // namespace

bool is_credential_parameter(std::string_view name) {
  static constexpr std::array<std::string_view, 15> kNames = {
      "key", "api_key", "apikey", "api-key", "x-api-key", "x-goog-api-key", "access_token", "token",
      "auth", "authorization", "client_secret", "secret", "password", "sig", "signature"};
  return one_of(name, kNames);
}

bool is_credential_header(std::string_view name) {
  static constexpr std::array<std::string_view, 6> kNames = {
      "authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie"};
  return one_of(name, kNames);
}

std::string redact_target(std::string_view target) {
  const std::size_t q = target.find('?');
  if (q == std::string_view::npos) return std::string(target);
  std::string out(target.substr(0, q + 1));
  std::string_view query = target.substr(q + 1);
  // A fragment is not sent by clients, but kept as it came if one is.
  const std::size_t hash = query.find('#');
  const std::string_view fragment = hash == std::string_view::npos ? std::string_view() : query.substr(hash);
  query = query.substr(0, hash);
  bool first = true;
  while (true) {
    const std::size_t amp = query.find('&');
    const std::string_view param = query.substr(0, amp);
    if (!first) out += '&';
    first = false;
    const std::size_t eq = param.find('=');
    if (eq != std::string_view::npos && eq + 1 < param.size() && is_credential_parameter(decoded_name(param.substr(0, eq)))) {
      out.append(param.substr(0, eq + 1));
      out += kRedacted;
    } else {
      out.append(param);
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  out.append(fragment);
  return out;
}

std::string redact_header(std::string_view name, std::string_view value) {
  if (!is_credential_header(name) || value.empty()) return std::string(value);
  // "Bearer sk-…" keeps its scheme, which says how the client authenticated.
  const std::size_t space = value.find(' ');
  if (iequals(name, "authorization") || iequals(name, "proxy-authorization")) {
    if (space != std::string_view::npos && space > 0) return std::string(value.substr(0, space + 1)) + std::string(kRedacted);
  }
  return std::string(kRedacted);
}

}  // namespace mock
