// See invoke_pool.hpp.
#include "oe/run/invoke_pool.hpp"

#include <algorithm>

namespace oe::run::engine {

InvokePool::InvokePool(size_t threads) {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < std::max<size_t>(threads, 1); ++i) {
    start();
  }
}

InvokePool::~InvokePool() {
  std::vector<Worker> workers;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    workers = std::move(workers_);
  }
  work_.notify_all();
  for (Worker& worker : workers) {
    worker.thread.join();
  }
}

void InvokePool::post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(task));
  }
  work_.notify_one();
}

void InvokePool::giveUp(std::thread::id thread) {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(workers_.begin(), workers_.end(), [thread](const Worker& worker) {
    return worker.thread.get_id() == thread;
  });
  if (it == workers_.end()) {
    return;
  }
  it->given_up->store(true);
  it->thread.detach();
  workers_.erase(it);
  start();
}

void InvokePool::start() {
  auto given_up = std::make_shared<std::atomic<bool>>(false);
  workers_.push_back(Worker{std::thread([this, given_up] { loop(given_up); }), given_up});
}

void InvokePool::loop(const std::shared_ptr<std::atomic<bool>>& given_up) {
  // `given_up` is this thread's own copy (held by its closure), so it stays readable after the
  // pool is gone.
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock lock(mutex_);
      work_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {
        return;  // stopping, and nothing left to run
      }
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
    task = nullptr;
    if (given_up->load()) {
      return;  // the pool may be gone: touch nothing of it
    }
  }
}

}  // namespace oe::run::engine
