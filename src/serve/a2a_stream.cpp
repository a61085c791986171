#include "a2a_stream.hpp"

#include <algorithm>

#include "stream_hub.hpp"

namespace cairn::serve {

namespace {

// A stream's batch stops after this many bytes of frames (the rest follows
// in the next one), so that a long replay is never held whole.
constexpr std::size_t kBatchBytes = 1u << 20;

// A task's StreamResponses: the task first, then its updates (TaskEvents),
// read from the log as the session's hub says records came; ends after the
// final status or an input request.
class TaskStream : public LiveStream {
 public:
  TaskStream(std::shared_ptr<SessionHost> host, TaskEvents events, std::int64_t read_after, std::string first_frame,
             bool end_after_first)
      : host_(std::move(host)), events_(std::move(events)), last_read_(read_after), initial_(std::move(first_frame)),
        end_now_(end_after_first) {
    inbox_->ref = events_.view().id.ref;
    host_->hub->add(inbox_);
  }
  ~TaskStream() override { host_->hub->remove(inbox_.get()); }

  void set_wakeup(std::function<void()> wakeup) override {
    bool pending = false;
    {
      std::lock_guard lock(inbox_->mu);
      inbox_->wakeup = wakeup;
      pending = !inbox_->frames.empty() || inbox_->end_frame;
    }
    wakeup_ = wakeup;
    if (pending && wakeup) wakeup();
  }

  Batch take(bool quiet) override {
    Batch batch;
    batch.text() = std::move(initial_);
    initial_.clear();
    if (end_now_ || events_.done()) {
      batch.done = true;
      return batch;
    }
    // The first take reads what the log already holds (a run that went on,
    // or ended, before this stream was there); later ones what woke them.
    std::int64_t newest = std::exchange(first_, false) ? host_->session->size() - 1 : backlog_;
    bool overflowed = false;
    std::optional<std::string> end_frame;
    {
      std::lock_guard lock(inbox_->mu);
      for (const auto& frame : inbox_->take_frames()) {
        if (frame->seq) newest = std::max(newest, *frame->seq);
      }
      overflowed = std::exchange(inbox_->overflowed, false);
      end_frame = inbox_->end_frame;
    }
    if (end_frame) {  // the session was deleted: its tasks are gone
      batch.done = true;
      return batch;
    }
    if (quiet || overflowed) newest = host_->session->size() - 1;
    backlog_ = newest;
    if (auto read = emit_until(newest, batch); !read) {
      batch.text() += sse_frame(Json{{"type", "stream_error"}, {"error", {{"code", read.error().code}, {"message", read.error().message}}}});
      batch.done = true;
      return batch;
    }
    // Bounded batches: more is read at the next take, which the server asks
    // for at once after writing this one.
    if (last_read_ < backlog_ && !events_.done() && wakeup_) wakeup_();
    batch.done = events_.done();
    return batch;
  }

  std::string final_frame() override { return ""; }

 private:
  Status emit_until(std::int64_t until, Batch& batch) {
    std::string& out = batch.text();
    while (last_read_ < until && !events_.done() && out.size() < kBatchBytes) {
      auto lines = host_->session->get_log(last_read_, static_cast<std::size_t>(std::min<std::int64_t>(until - last_read_, 256)));
      if (!lines) return std::unexpected(lines.error());
      if (lines->empty()) break;
      for (const auto& line : *lines) {
        last_read_ = line.seq;
        if (auto record = decode_line(line)) events_.feed(*record, out);
        if (events_.done() || out.size() >= kBatchBytes) break;
      }
    }
    return {};
  }

  std::shared_ptr<SessionHost> host_;
  std::shared_ptr<StreamHub::Inbox> inbox_ = std::make_shared<StreamHub::Inbox>();
  TaskEvents events_;
  std::int64_t last_read_;
  std::int64_t backlog_ = -1;  // the newest seq known to be there
  std::string initial_;
  bool end_now_;
  bool first_ = true;
  std::function<void()> wakeup_;
};

}  // namespace

std::shared_ptr<LiveStream> task_stream(std::shared_ptr<SessionHost> host, TaskEvents events, std::int64_t read_after,
                                        std::string first_frame, bool end_after_first) {
  return std::make_shared<TaskStream>(std::move(host), std::move(events), read_after, std::move(first_frame), end_after_first);
}

std::shared_ptr<DeferredReply> Settling::start(std::shared_ptr<SessionHost> host, TaskView view,
                                                std::chrono::milliseconds limit, std::shared_ptr<WorkQueue> work,
                                                Answer answer, bool until_end) {
  auto settling = std::make_shared<Settling>(Key{}, std::move(host), view.id, std::move(work), std::move(answer),
                                             until_end);
  if (settling->settled(view)) {
    settling->deferred_->fulfil(settling->answer_(view));
    return settling->deferred_;
  }
  auto ref = settling->host_->harness->ref(view.id.ref);
  if (!ref) {
    settling->deferred_->fulfil(settling->answer_(view));
    return settling->deferred_;
  }
  const std::string run = view.id.run;
  std::weak_ptr<Settling> weak = settling;
  Subscription subscription = ref->on_event([weak, run](const Event& event) {
    auto self = weak.lock();
    if (!self) return;
    const bool ours = event.run_id == run &&
                      (event.type == EventType::run_end || event.type == EventType::input_requested ||
                       event.type == EventType::run_cancel);
    // A client gone: let go of the listener at the ref's next event.
    if (ours || self->deferred_->abandoned()) self->check_soon(false);
  });
  {
    // It keeps itself until it settles; the limit's timer holds it weakly.
    std::lock_guard lock(settling->mu_);
    if (!settling->finished_.load()) {
      settling->subscription_ = std::move(subscription);
      settling->self_ = settling;
    }
  }
  // What happened before the listener was there.
  settling->check_soon(false);
  const bool timed = settling->work_->post_after(limit, [weak] {
    if (auto self = weak.lock()) self->check(true);
  });
  if (!timed) {
    settling->deferred_->fulfil(Reply{error_response(503, "closed", "the server is stopping")});
    settling->finish();
  }
  return settling->deferred_;
}

Settling::Settling(Key, std::shared_ptr<SessionHost> host, TaskId id, std::shared_ptr<WorkQueue> work, Answer answer,
                   bool until_end)
    : host_(std::move(host)), id_(std::move(id)), work_(std::move(work)), answer_(std::move(answer)), until_end_(until_end) {}

void Settling::check_soon(bool final) {
  if (!work_->post([self = shared_from_this(), final] { self->check(final); })) finish();
}

void Settling::check(bool final) {
  if (finished_.load()) return;
  if (deferred_->abandoned()) return finish();
  auto read = read_task(*host_->session, id_);
  A2aResult<TaskView> view = [&]() -> A2aResult<TaskView> {
    if (!read) return std::unexpected(internal(read.error().message));
    if (!*read) return std::unexpected(task_not_found(id_.id()));
    return std::move(**read);
  }();
  if (view && !settled(*view) && !final) return;
  deferred_->fulfil(answer_(view));
  finish();
}

void Settling::finish() {
  finished_.store(true);
  Subscription gone;
  std::shared_ptr<Settling> last;  // may be the last hold: let go after the lock
  std::lock_guard lock(mu_);
  gone = std::move(subscription_);
  last = std::move(self_);
}

}  // namespace cairn::serve
