// A provider request inside its span, cairn.llm.request: the wire-level
// call under a generation, with the GenAI semantic-convention attributes.
// The span's status comes from the response (a provider error is an error
// span); nothing is thrown to the caller.
#pragma once

#include <stop_token>

#include "cairn/llm/provider.hpp"
#include "cairn/secrets.hpp"

namespace cairn {

// `secrets` are redacted from whatever the span carries (error messages,
// and the content when trace::capture_content() is on).
ProviderResponse stream_traced(Provider& provider, const Model& model, const LlmContext& context,
                               const StreamOptions& options, const PayloadHook& before_payload,
                               const ProviderEventSink& on_event, std::stop_token cancel, const Secrets& secrets);

}  // namespace cairn
