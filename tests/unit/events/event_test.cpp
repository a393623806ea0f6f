// Event: the bus's view of one event, with its JSON parsed only on demand.
#include "oe/events/event.hpp"

#include <gtest/gtest.h>

namespace oe::events {
namespace {

TEST(EventTest, ALogEventGivesItsFieldsWithoutParsing) {
  // Not JSON at all: nothing but json() looks at the line.
  const Event event("node.finished", "n1", "{not json", true);
  EXPECT_EQ(event.type(), "node.finished");
  EXPECT_EQ(event.nodeId(), "n1");
  EXPECT_TRUE(event.cached());
  EXPECT_EQ(event.line(), "{not json");
  EXPECT_TRUE(event.json().is_discarded());
}

TEST(EventTest, APhaseTheWriterKnewIsFreeAnUnknownOneIsRead) {
  const std::optional<std::string> phase = "collect";
  const std::optional<std::string> none;
  EXPECT_EQ(Event("node.started", "n1", "{not json", false, &phase).phase(), "collect");
  EXPECT_EQ(Event("node.started", "n1", "{not json", false, &none).phase(), "");
  // A plugin's event: the writer does not know its fields.
  const std::string line = R"({"type":"my.event","node_id":"n1","phase":"plug"})";
  EXPECT_EQ(Event("my.event", "n1", line, false).phase(), "plug");
  EXPECT_EQ(Event("my.event", "n1", "{not json", false).phase(), "");
  EXPECT_EQ(Event(Json{{"type", "node.log"}, {"phase", "p"}}).phase(), "p");
}

TEST(EventTest, JsonIsParsedOnceAndKept) {
  const std::string line = R"({"type":"node.failed","run_id":"r","node_id":"n1","error":"boom"})";
  const Event event("node.failed", "n1", line, false);
  const Json& first = event.json();
  EXPECT_EQ(first["error"], "boom");
  EXPECT_EQ(&event.json(), &first);
}

TEST(EventTest, AnEventBuiltFromJsonReadsItsFieldsFromIt) {
  const Event event(Json{{"type", "node.items"}, {"node_id", "each"}, {"count", 3}});
  EXPECT_EQ(event.type(), "node.items");
  EXPECT_EQ(event.nodeId(), "each");
  EXPECT_FALSE(event.cached());
  EXPECT_EQ(event.json()["count"], 3);
  EXPECT_EQ(Json::parse(event.line()), event.json());

  const Event replay(Json{{"type", "node.finished"}, {"node_id", "x"}, {"cached", true}});
  EXPECT_TRUE(replay.cached());
}

TEST(EventTest, AnEventWithoutTypeOrNodeHasEmptyOnes) {
  const Event run_event(Json{{"type", "run.finished"}, {"status", "success"}});
  EXPECT_EQ(run_event.type(), "run.finished");
  EXPECT_EQ(run_event.nodeId(), "");
  const Event odd(Json{{"type", 7}, {"node_id", nullptr}, {"cached", "yes"}});
  EXPECT_EQ(odd.type(), "");
  EXPECT_EQ(odd.nodeId(), "");
  EXPECT_FALSE(odd.cached());
  const Event not_object(Json::array({1, 2}));
  EXPECT_EQ(not_object.type(), "");
  EXPECT_TRUE(not_object.json().is_array());
}

}  // namespace
}  // namespace oe::events
