// The request cycle, one for steps and summaries alike: each attempt is
// preceded by a durable generation_started, so the count of attempts — and
// with it the retry bound (invariant 7) — survives any number of crashes.
#include <cmath>
#include <condition_variable>
#include <ctime>
#include <random>

#include <fmt/format.h>

#include "llm/traced_stream.hpp"
#include "model_output.hpp"
#include "operation.hpp"

namespace cairn {
namespace {

std::chrono::milliseconds retry_delay(const RetryPolicy& policy, std::int64_t attempt,
                                      std::optional<std::int64_t> retry_after_ms) {
  if (retry_after_ms) return std::chrono::milliseconds(std::max<std::int64_t>(0, *retry_after_ms));
  const double base = static_cast<double>(policy.base_delay.count()) * std::pow(2.0, static_cast<double>(attempt - 1));
  const double capped = std::min(base, static_cast<double>(policy.max_delay.count()));
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> spread(1.0 - policy.jitter, 1.0 + policy.jitter);
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::max(0.0, capped * spread(rng))));
}

std::string iso8601_after(std::chrono::milliseconds delay) {
  const auto at = std::chrono::system_clock::now() + delay;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                     utc.tm_hour, utc.tm_min, utc.tm_sec, ms % 1000);
}

// Sleeps unless cancelled first; true when cancelled.
bool sleep_unless_cancelled(std::chrono::milliseconds delay, std::stop_token cancel) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait_for(lock, cancel, delay, [] { return false; });
  return cancel.stop_requested();
}

bool summary_failed(const ProviderResponse& response) {
  return response.message.stop_reason == StopReason::error || response.message.stop_reason == StopReason::aborted;
}

std::string summary_text_of(const AssistantMessage& message) {
  std::string out;
  for (const auto& block : message.content) {
    if (const auto* text = std::get_if<TextContent>(&block)) out += (out.empty() ? "" : "\n") + text->text;
  }
  return out;
}

}  // namespace

template <class T>
T Operation::generation_cycle(Purpose purpose, const std::function<AttemptOutcome<T>(const Attempt&)>& attempt,
                              const std::function<Error(const Attempt&)>& exhausted) {
  const std::string_view name = cairn::to_string(purpose);
  bool retrying = false;
  while (true) {
    const Attempt current = begin_attempt(exhausted);
    AttemptOutcome<T> outcome = traced_attempt<T>(purpose, current, attempt);
    if (auto* done = std::get_if<T>(&outcome)) {
      if (retrying) core_.publish(event(EventType::retry_end, {{"purpose", name}, {"attempt", current.number}, {"success", true}}));
      return std::move(*done);
    }
    if (std::holds_alternative<AttemptAgain>(outcome)) continue;
    AttemptFailed& failure = std::get<AttemptFailed>(outcome);
    if (failure.retryable && current.number < current.config->retry.max_attempts) {
      back_off(purpose, current, failure);
      retrying = true;
      continue;
    }
    if (failure.on_give_up) failure.on_give_up();
    if (retrying) {
      core_.publish(event(EventType::retry_end, {{"purpose", name},
                                        {"attempt", current.number},
                                        {"success", false},
                                        {"finalError", failure.what}}));
    }
    throw RunFailed{std::move(failure.error)};
  }
}

// One attempt inside its span, cairn.harness.generation: an attempt that
// failed is an error span, one the cycle makes again is marked so.
template <class T>
Operation::AttemptOutcome<T> Operation::traced_attempt(Purpose purpose, const Attempt& current,
                                                       const std::function<AttemptOutcome<T>(const Attempt&)>& attempt) {
  trace::Span span("cairn.harness.generation", [&] {
    const ModelRef& model = current.config->branch.model_ref;
    return Json{{"runId", run_id_},
                {"purpose", cairn::to_string(purpose)},
                {"attempt", current.number},
                {"provider", model.provider},
                {"model", model.model_id},
                {"gen_ai.provider.name", model.provider},
                {"gen_ai.request.model", model.model_id}};
  });
  AttemptOutcome<T> outcome = attempt(current);
  if (span) {
    if (const auto* failure = std::get_if<AttemptFailed>(&outcome)) {
      span.set("retryable", failure->retryable);
      // A retryable failure's error names the give-up (retries_exhausted);
      // this attempt's was the provider's.
      span.fail(failure->retryable ? "provider_error" : failure->error.code, failure->what);
    } else if (std::holds_alternative<AttemptAgain>(outcome)) {
      span.set("again", true);
    }
  }
  return outcome;
}

template AssistantMessage Operation::generation_cycle<AssistantMessage>(
    Purpose, const std::function<AttemptOutcome<AssistantMessage>(const Attempt&)>&,
    const std::function<Error(const Attempt&)>&);
template std::vector<std::string> Operation::generation_cycle<std::vector<std::string>>(
    Purpose, const std::function<AttemptOutcome<std::vector<std::string>>(const Attempt&)>&,
    const std::function<Error(const Attempt&)>&);

// The attempt the log's count says is next, refused (RunFailed) past the
// policy's maximum or for a model the harness does not serve. Every attempt
// of a cycle works with the configuration its step took (config_).
Operation::Attempt Operation::begin_attempt(const std::function<Error(const Attempt&)>& exhausted) {
  check_cancelled();
  const Attempt attempt{.number = with_op([](const OpState& op) { return op.request_attempts; }) + 1, .config = &config_};
  if (attempt.number > config_.retry.max_attempts) throw RunFailed{exhausted(attempt)};
  if (!config_.served) {
    const ModelRef& model = config_.branch.model_ref;
    throw RunFailed{Error{Errc::unknown_model, fmt::format("model '{}/{}' is not configured", model.provider, model.model_id)}};
  }
  return attempt;
}

void Operation::append_generation_started(Purpose purpose, const Attempt& attempt) {
  append_harness(GenerationStarted{.run_id = run_id_, .purpose = purpose, .attempt = attempt.number,
                                   .model = attempt.config->branch.model_ref});
}

void Operation::back_off(Purpose purpose, const Attempt& attempt, const AttemptFailed& failure) {
  const std::string_view name = cairn::to_string(purpose);
  const RetryPolicy& policy = attempt.config->retry;
  const auto delay = retry_delay(policy, attempt.number, failure.retry_after_ms);
  if (purpose == Purpose::step) {
    // What a snapshot shows of the run's retry (RunSnapshot::Retry): a
    // step's, not a summary's.
    std::lock_guard lock(core_.mu);
    rt_->retry = RunSnapshot::Retry{attempt.number + 1, policy.max_attempts, iso8601_after(delay)};
  }
  core_.publish(event(EventType::retry_scheduled, {{"purpose", name},
                                          {"attempt", attempt.number},
                                          {"maxAttempts", policy.max_attempts},
                                          {"delayMs", delay.count()},
                                          {"errorMessage", failure.what}}));
  if (sleep_unless_cancelled(delay, cancel_)) throw RunCancelled{};
  core_.publish(event(EventType::retry_start, {{"purpose", name}, {"attempt", attempt.number + 1}}));
}

std::vector<std::string> Operation::generate(Purpose purpose, const std::vector<SummaryRequest>& requests) {
  const Errc failed_code = purpose == Purpose::compaction ? Errc::compaction_failed : Errc::branch_summary_failed;
  return generation_cycle<std::vector<std::string>>(
      purpose,
      [&](const Attempt& attempt) -> AttemptOutcome<std::vector<std::string>> {
        if (requests.empty()) return std::vector<std::string>{};
        append_generation_started(purpose, attempt);
        std::vector<std::string> texts;
        for (const auto& request : requests) {
          LlmContext context{.system_prompt = request.system_prompt};
          context.messages.push_back(UserMessage{.content = std::vector<UserBlock>{TextContent{.text = request.prompt}},
                                                 .timestamp = now_unix_ms()});
          StreamOptions options = attempt.config->stream_options;
          options.max_tokens = request.max_tokens;
          const Models::Entry& served = attempt.served();
          ProviderResponse response = stream_traced(*served.provider, served.model, context, options, {}, {}, cancel_, secrets());
          add_spend(response.message.usage);
          if (summary_failed(response)) {
            check_cancelled();
            const std::string what = sanitize_text(response.message.error_message.value_or("the provider failed"), secrets());
            return AttemptFailed{.retryable = response.retryable,
                                 .retry_after_ms = response.retry_after_ms,
                                 .what = what,
                                 .error = Error{failed_code, fmt::format("the summary request failed: {}", what)}};
          }
          texts.push_back(sanitize_text(summary_text_of(response.message), secrets()));
        }
        return texts;
      },
      [&](const Attempt& attempt) {
        return Error{failed_code, fmt::format("retries exhausted: {} attempts at the summary failed", attempt.number - 1)};
      });
}

}  // namespace cairn
