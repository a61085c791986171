#include "http_types.hpp"

namespace cairn::serve {

void DeferredReply::fulfil(Reply reply) {
  Ready ready;
  {
    std::lock_guard lock(mu_);
    if (done_) return;
    done_ = true;
    if (!ready_) {
      reply_ = std::move(reply);
      return;
    }
    ready = std::move(ready_);
  }
  // Outside the lock: the HTTP layer's continuation may release the last
  // hold on this object.
  ready(std::move(reply));
}

void DeferredReply::on_ready(Ready ready) {
  std::optional<Reply> reply;
  {
    std::lock_guard lock(mu_);
    if (!done_) {
      ready_ = std::move(ready);
      return;
    }
    reply = std::move(reply_);
    reply_.reset();
  }
  if (reply) ready(std::move(*reply));
}

void DeferredReply::abandon() {
  std::shared_ptr<DeferredReply> inner;
  {
    std::lock_guard lock(mu_);
    abandoned_ = true;
    inner = std::move(inner_);
  }
  fulfil(Reply{});
  if (inner) inner->abandon();
}

void DeferredReply::forward_from(const std::shared_ptr<DeferredReply>& inner) {
  bool abandoned = false;
  {
    std::lock_guard lock(mu_);
    abandoned = abandoned_;
    if (!abandoned) inner_ = inner;
  }
  if (abandoned) {
    inner->abandon();
    return;
  }
  // The inner one holds this one until it is fulfilled, then lets go.
  inner->on_ready([outer = shared_from_this()](Reply reply) { outer->fulfil(std::move(reply)); });
}

bool DeferredReply::abandoned() const {
  std::lock_guard lock(mu_);
  return abandoned_;
}

void DeferredReply::forget_ready() {
  Ready dropped;
  {
    std::lock_guard lock(mu_);
    dropped = std::move(ready_);
    ready_ = nullptr;
    done_ = true;
    abandoned_ = true;
  }
  // `dropped` goes here, outside the lock.
}

}  // namespace cairn::serve
