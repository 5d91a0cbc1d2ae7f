// Credentials that clients send (an API key in the query string, as Gemini clients do with
// `?key=`, or in a header) are never stored: the journal, the reports and transcripts built from
// it, and `hiccup serve`'s console and --journal file keep the redacted form (issue 42).
#pragma once

#include <string>
#include <string_view>

namespace mock {

/// What a redacted credential reads as.
inline constexpr std::string_view kRedacted = "REDACTED";

/// True for a query parameter name that carries a credential (case-insensitive): key, api_key,
/// apikey, api-key, x-api-key, x-goog-api-key, access_token, token, auth, authorization,
/// client_secret, secret, password, sig, signature.
bool is_credential_parameter(std::string_view name);

/// True for a header that carries a credential (case-insensitive): Authorization,
/// Proxy-Authorization, x-api-key, x-goog-api-key, api-key, Cookie.
bool is_credential_header(std::string_view name);

/// `target` (path and query) with the value of every credential parameter of its query replaced by
/// kRedacted (`/v1beta/models/m:generateContent?key=AIza…&alt=sse` →
/// `…?key=REDACTED&alt=sse`); an empty value stays empty. The path and other parameters as sent.
std::string redact_target(std::string_view target);

/// A header's value as it may be stored: kRedacted for a credential header (an `Authorization`
/// value keeps its scheme: `Bearer REDACTED`), else `value` unchanged.
std::string redact_header(std::string_view name, std::string_view value);

}  // namespace mock
