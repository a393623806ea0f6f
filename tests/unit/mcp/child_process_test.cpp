// A child `oe` as the long tools run it, here a shell: its stdout captured, its stderr tail
// kept, its event lines passed on, and a cancellation's SIGINT reaching its process group.
#include "oe/mcp/child_process.hpp"

#include <sys/wait.h>

#include <gtest/gtest.h>

#include <vector>

namespace oe::mcp {
namespace {

TEST(RunChild, CapturesOutputAndPassesEvents) {
  ChildOptions options;
  options.argv = {"/bin/sh", "-c",
                  "echo out; echo oops >&2; echo '{\"type\":\"a\"}' >&3; echo 'not json' >&3; "
                  "printf '{\"type\":\"b\"}\\n' >&3; exit 3"};
  std::vector<std::string> types;
  options.on_event = [&types](const Json& event) { types.push_back(event.value("type", "")); };
  prockit::CancelToken token(nullptr);
  auto result = runChild(options, token);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->stdout_text, "out\n");
  EXPECT_EQ(result->stderr_tail, "oops");
  EXPECT_EQ(types, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(WIFEXITED(result->wait_status));
  EXPECT_EQ(WEXITSTATUS(result->wait_status), 3);
  EXPECT_FALSE(exitedOk(result->wait_status));
  EXPECT_FALSE(result->cancelled);
}

TEST(RunChild, CancellingSendsSigintToTheGroup) {
  ChildOptions options;
  // Says it is ready once its trap is set; exits 7 on SIGINT.
  options.argv = {"/bin/sh", "-c",
                  "trap 'exit 7' INT; echo '{\"type\":\"ready\"}' >&3; "
                  "while :; do sleep 1; done"};
  prockit::CancelToken token(nullptr);
  options.on_event = [&token](const Json&) { token.cancel(); };
  auto result = runChild(options, token);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_TRUE(result->cancelled);
  EXPECT_TRUE(WIFEXITED(result->wait_status));
  EXPECT_EQ(WEXITSTATUS(result->wait_status), 7);
}

TEST(RunChild, AProgramThatCannotStartIsAnError) {
  ChildOptions options;
  options.argv = {"/nonexistent/oe"};
  prockit::CancelToken token(nullptr);
  auto result = runChild(options, token);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("/nonexistent/oe"), std::string::npos);
}

}  // namespace
}  // namespace oe::mcp
