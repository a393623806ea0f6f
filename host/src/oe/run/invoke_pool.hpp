// The threads that run plugin calls. Unlike a plain thread pool it can give up a thread whose
// call will not return (a plugin that ignores cancellation past timeout_ms and its grace): the
// thread is detached and replaced, so the run keeps its capacity and can end without joining it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace oe::run::engine {

class InvokePool {
 public:
  explicit InvokePool(size_t threads);
  // Runs what is queued, then joins the threads it still has; given-up threads are not waited
  // for (they leave on their own when their call returns, touching nothing of the pool).
  ~InvokePool();
  InvokePool(const InvokePool&) = delete;
  InvokePool& operator=(const InvokePool&) = delete;

  void post(std::function<void()> task);

  // Gives up `thread`, one of the pool's, while the task it runs is known not to return yet (the
  // caller holds what that task waits for before it returns): the thread leaves once its task
  // returns, and a new one takes its place at once.
  void giveUp(std::thread::id thread);

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> given_up;
  };
  void start();  // under mutex_
  void loop(const std::shared_ptr<std::atomic<bool>>& given_up);

  std::mutex mutex_;
  std::condition_variable work_;
  std::deque<std::function<void()>> queue_;
  std::vector<Worker> workers_;
  bool stopping_ = false;
};

}  // namespace oe::run::engine
