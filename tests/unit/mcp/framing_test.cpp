// MCP's stdio framing: what each kind of line parses to, garbage answered rather than fatal,
// lines split across reads, overlong lines dropped, and one whole line per written message.
#include "oe/mcp/framing.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

namespace oe::mcp {
namespace {

TEST(ParseMessage, ReadsRequestsNotificationsAndResponses) {
  auto request = parseMessage(R"({"jsonrpc":"2.0","id":7,"method":"tools/list"})");
  ASSERT_TRUE(request.message);
  EXPECT_EQ(request.message->kind, Message::Kind::kRequest);
  EXPECT_EQ(request.message->id, 7);
  EXPECT_EQ(request.message->method, "tools/list");
  EXPECT_EQ(request.message->params, Json::object());

  auto named = parseMessage(R"({"jsonrpc":"2.0","id":"a-1","method":"x","params":{"k":1}})");
  ASSERT_TRUE(named.message);
  EXPECT_EQ(named.message->id, "a-1");
  EXPECT_EQ(named.message->params["k"], 1);

  auto note = parseMessage(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  ASSERT_TRUE(note.message);
  EXPECT_EQ(note.message->kind, Message::Kind::kNotification);

  auto response = parseMessage(R"({"jsonrpc":"2.0","id":3,"result":{}})");
  ASSERT_TRUE(response.message);
  EXPECT_EQ(response.message->kind, Message::Kind::kResponse);
}

TEST(ParseMessage, GarbageIsAnErrorReplyNotAnException) {
  const auto code = [](std::string_view line) {
    auto parsed = parseMessage(line);
    EXPECT_FALSE(parsed.message) << line;
    return parsed.error ? parsed.error->code : 0;
  };
  EXPECT_EQ(code("not json"), kParseError);
  EXPECT_EQ(code("{\"jsonrpc\":\"2.0\",\"id\":1,"), kParseError);
  EXPECT_EQ(code("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]"), kInvalidRequest);
  EXPECT_EQ(code("42"), kInvalidRequest);
  EXPECT_EQ(code(R"({"id":1,"method":"ping"})"), kInvalidRequest);
  EXPECT_EQ(code(R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})"), kInvalidRequest);
  EXPECT_EQ(code(R"({"jsonrpc":"2.0","id":{},"method":"ping"})"), kInvalidRequest);
  EXPECT_EQ(code(R"({"jsonrpc":"2.0","id":1,"method":5})"), kInvalidRequest);
  EXPECT_EQ(code(R"({"jsonrpc":"2.0","id":1})"), kInvalidRequest);
  EXPECT_EQ(code(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":[1]})"), kInvalidParams);
}

TEST(ParseMessage, AnErrorKeepsTheIdWhenItCouldBeRead) {
  auto parsed = parseMessage(R"({"jsonrpc":"1.0","id":"q","method":"ping"})");
  ASSERT_TRUE(parsed.error);
  EXPECT_EQ(parsed.error->id, "q");
  auto no_id = parseMessage("garbage");
  ASSERT_TRUE(no_id.error);
  EXPECT_TRUE(no_id.error->id.is_null());
}

TEST(ParseMessage, ABadNotificationIsNeverAnswered) {
  auto parsed = parseMessage(R"({"jsonrpc":"2.0","method":"notifications/x","params":"oops"})");
  ASSERT_TRUE(parsed.message);
  EXPECT_FALSE(parsed.error);
  EXPECT_EQ(parsed.message->params, Json::object());
}

TEST(ParseMessage, BlankLinesAreNothing) {
  auto parsed = parseMessage("  \t\r");
  EXPECT_FALSE(parsed.message);
  EXPECT_FALSE(parsed.error);
}

class Pipe : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::pipe(fds_), 0); }
  void TearDown() override {
    closeWrite();
    ::close(fds_[0]);
  }
  void send(std::string_view bytes) {
    ASSERT_EQ(::write(fds_[1], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  void closeWrite() {
    if (fds_[1] >= 0) {
      ::close(fds_[1]);
      fds_[1] = -1;
    }
  }
  int fds_[2] = {-1, -1};
};

TEST_F(Pipe, LinesAreSplitAtNewlinesWhateverTheChunks) {
  send("{\"a\":1}\r\n{\"b\"");
  send(":2}\n\nlast without newline");
  closeWrite();
  LineReader reader(fds_[0]);
  bool overlong = false;
  EXPECT_EQ(reader.next(overlong), "{\"a\":1}");
  EXPECT_EQ(reader.next(overlong), "{\"b\":2}");
  EXPECT_EQ(reader.next(overlong), "");
  EXPECT_EQ(reader.next(overlong), "last without newline");
  EXPECT_EQ(reader.next(overlong), std::nullopt);
}

TEST_F(Pipe, AnOverlongLineIsDroppedWholeAndReported) {
  send(std::string(100, 'x') + "\nshort\n");
  closeWrite();
  LineReader reader(fds_[0], 16);
  bool overlong = false;
  EXPECT_EQ(reader.next(overlong), "short");
  EXPECT_TRUE(overlong);
  EXPECT_EQ(reader.next(overlong), std::nullopt);
  EXPECT_FALSE(overlong);
}

TEST_F(Pipe, EachMessageIsOneLineEvenWithNewlinesAndBadUtf8) {
  LineWriter writer(fds_[1]);
  ASSERT_TRUE(writer.write(resultMessage(1, Json{{"text", "two\nlines"}})));
  ASSERT_TRUE(writer.write(notificationMessage("n", Json{{"bad", std::string("\xff\xfe")}})));
  closeWrite();
  LineReader reader(fds_[0]);
  bool overlong = false;
  const auto first = reader.next(overlong);
  ASSERT_TRUE(first);
  EXPECT_EQ(Json::parse(*first)["result"]["text"], "two\nlines");
  const auto second = reader.next(overlong);
  ASSERT_TRUE(second);
  EXPECT_EQ(Json::parse(*second)["method"], "n");
  EXPECT_EQ(reader.next(overlong), std::nullopt);
}

TEST(LineWriter, AWriterWhoseReaderIsGoneTurnsOffInsteadOfDying) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  LineWriter writer(fds[1]);
  EXPECT_FALSE(writer.write(resultMessage(1, Json::object())));  // EPIPE, not SIGPIPE
  EXPECT_FALSE(writer.write(resultMessage(2, Json::object())));
  ::close(fds[1]);
}

}  // namespace
}  // namespace oe::mcp
