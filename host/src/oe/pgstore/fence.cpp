// ScopeFence: the epoch check every write of a run carries.
#include "oe/pgstore/fence.hpp"

namespace oe::pgstore {

std::string ScopeFence::condition(int scope_param, int epoch_param) {
  const std::string scope = "$" + std::to_string(scope_param);
  const std::string epoch = "$" + std::to_string(epoch_param) + "::bigint";
  return "(" + epoch + " = 0 OR EXISTS (SELECT 1 FROM oe_scopes WHERE scope = " + scope +
         " AND epoch = " + epoch + " FOR SHARE))";
}

std::string ScopeFence::message(const std::string& scope) {
  return "another coordinator took scope \"" + scope +
         "\" since this run took it (its lock's session was lost, and another run or oe "
         "command took the scope meanwhile): this run stops and writes nothing more, so that "
         "the state keeps one writer. See `oe runs --store URL`; resume once the other is done";
}

std::string ScopeFence::lost() {
  std::function<void(std::string)> handler;
  {
    std::lock_guard lock(mutex_);
    lost_ = true;
    if (!told_ && handler_) {
      told_ = true;
      handler = handler_;
    }
  }
  const std::string why = message(scope_);
  if (handler) {
    handler(why);
  }
  return why;
}

void ScopeFence::onLost(std::function<void(std::string)> handler) {
  std::function<void(std::string)> tell;
  {
    std::lock_guard lock(mutex_);
    handler_ = std::move(handler);
    if (lost_ && !told_ && handler_) {
      told_ = true;
      tell = handler_;
    }
  }
  if (tell) {
    tell(message(scope_));
  }
}

}  // namespace oe::pgstore
