// White-box tests of the MCP message handling that needs no process: classifying a server's
// lines, the messages oe writes, and upstream's normalisation of resources/read contents.
#include "mcp_protocol.hpp"

#include <gtest/gtest.h>

namespace oe::dataset {
namespace {

OrderedJson rows(const char* contents) { return mcpContentsToRows(OrderedJson::parse(contents)); }

TEST(McpProtocol, LinesAreClassified) {
  EXPECT_EQ(parseMcpLine("not json").kind, McpIncoming::Kind::kNoise);
  EXPECT_EQ(parseMcpLine("[1,2]").kind, McpIncoming::Kind::kNoise);
  EXPECT_EQ(parseMcpLine(R"({"jsonrpc":"2.0","id":1})").kind, McpIncoming::Kind::kNoise);
  EXPECT_EQ(parseMcpLine(R"({"jsonrpc":"2.0","method":7,"id":1})").kind, McpIncoming::Kind::kNoise);

  const McpIncoming note = parseMcpLine(R"({"jsonrpc":"2.0","method":"notifications/message"})");
  EXPECT_EQ(note.kind, McpIncoming::Kind::kNotification);
  EXPECT_EQ(note.method, "notifications/message");

  const McpIncoming ask = parseMcpLine(R"({"jsonrpc":"2.0","id":"s1","method":"roots/list"})");
  EXPECT_EQ(ask.kind, McpIncoming::Kind::kRequest);
  EXPECT_EQ(ask.id, "s1");

  const McpIncoming ok =
      parseMcpLine("\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"b\":1,\"a\":2}}");
  EXPECT_EQ(ok.kind, McpIncoming::Kind::kResponse);
  EXPECT_EQ(ok.id, 3);
  EXPECT_FALSE(ok.is_error);
  EXPECT_EQ(ok.result.dump(), R"({"b":1,"a":2})");  // key order kept
}

TEST(McpProtocol, ErrorsReadLikeTheTypeScriptSdks) {
  EXPECT_EQ(parseMcpLine(R"({"id":2,"error":{"code":-32602,"message":"bad uri"}})").error,
            "MCP error -32602: bad uri");
  // Servers built on the SDK already carry the prefix: it is not doubled.
  EXPECT_EQ(
      parseMcpLine(R"({"id":2,"error":{"code":-32602,"message":"MCP error -32602: gone"}})").error,
      "MCP error -32602: gone");
  EXPECT_EQ(parseMcpLine(R"({"id":2,"error":"flat"})").error, "MCP error ?: \"flat\"");
}

TEST(McpProtocol, OutgoingMessagesAreSingleLines) {
  EXPECT_EQ(mcpRequest(1, "resources/read", {{"uri", "a\nb"}}),
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{\"uri\":"
            "\"a\\nb\"}}\n");
  EXPECT_EQ(mcpNotification("notifications/initialized"),
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
  EXPECT_EQ(mcpAnswerToServer(parseMcpLine(R"({"id":"p","method":"ping"})")),
            "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"result\":{}}\n");
  EXPECT_EQ(mcpAnswerToServer(parseMcpLine(R"({"id":4,"method":"sampling/createMessage"})")),
            "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32601,\"message\":\"Method not "
            "found: sampling/createMessage\"}}\n");
}

TEST(McpProtocol, VersionsTheSdkSpeaksAreAccepted) {
  EXPECT_TRUE(isSupportedMcpVersion("2025-11-25"));
  EXPECT_TRUE(isSupportedMcpVersion("2024-11-05"));
  EXPECT_FALSE(isSupportedMcpVersion("2026-07-28"));
  EXPECT_FALSE(isSupportedMcpVersion(""));
}

TEST(McpProtocol, ContentsAreNormalisedAsUpstreamDoes) {
  // Arrays spread, objects push, whitespace around them is trimmed first.
  EXPECT_EQ(rows(R"([{"uri":"u","text":" \n[1,{\"z\":1,\"a\":2}] "}])").dump(),
            R"([1,{"z":1,"a":2}])");
  EXPECT_EQ(rows(R"([{"uri":"u","text":"{\"k\":null}","mimeType":"application/json"}])").dump(),
            R"([{"k":null}])");
  // A JSON scalar or broken JSON stays text; the original (untrimmed) text is kept.
  EXPECT_EQ(rows(R"([{"uri":"u","text":" 42 "}])").dump(), R"([{"text":" 42 "}])");
  EXPECT_EQ(rows(R"([{"uri":"u","text":"[1,","mimeType":"text/x"}])").dump(),
            R"([{"text":"[1,","mimeType":"text/x"}])");
  EXPECT_EQ(rows(R"([{"uri":"u","text":"{} trailing"}])").dump(), R"([{"text":"{} trailing"}])");
  // mimeType only when truthy, as `item.mimeType ? ... : {}`.
  EXPECT_EQ(rows(R"([{"uri":"u","text":"t","mimeType":""}])").dump(), R"([{"text":"t"}])");
  EXPECT_EQ(rows(R"([{"uri":"u","blob":"AA==","mimeType":"image/png"}])").dump(),
            R"([{"blob":"AA==","mimeType":"image/png"}])");
  EXPECT_EQ(rows(R"([{"uri":"u","blob":"AA=="}])").dump(), R"([{"blob":"AA=="}])");
  // Text wins over blob; anything else is passed through as it is.
  EXPECT_EQ(rows(R"([{"text":"x","blob":"AA=="}])").dump(), R"([{"text":"x"}])");
  EXPECT_EQ(rows(R"([{"uri":"u","text":5}, 7, null])").dump(), R"([{"uri":"u","text":5},7,null])");
  EXPECT_EQ(rows("[]").dump(), "[]");
}

}  // namespace
}  // namespace oe::dataset
