// The tool input: the spliced fast path must give byte for byte what parsing the request and
// dumping the input gives, and must step aside for every request it cannot vouch for.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tool_io.hpp"

namespace oe::tool::test {
namespace {

const ToolIdentity kWho{"n1", "./tools/t.so", "/x/tools/t.so"};

std::string viaParse(const std::string& request) {
  auto parsed = buildToolInputParsed(request, kWho);
  return parsed ? *parsed : "error: " + parsed.failure().message;
}

std::string viaFastPath(const std::string& request) {
  auto built = buildToolInput(request, kWho);
  return built ? *built : "error: " + built.failure().message;
}

TEST(ToolInput, SplicedInputEqualsTheParsedOne) {
  const std::vector<std::string> requests = {
      // What the host sends (canonical compact JSON, keys sorted).
      R"({"node":{"args":{"i":3,"out":"f3"},"id":"n3","impl":"./t.so","kind":"tool"},)"
      R"("args":{"i":3,"out":"f3"},"state_view":{"a":[1,2,{"b":null}]},)"
      R"("edge_inputs":{"up":{"x":"y\"z\\w\n"}},"context":{"run_id":"r","attempt":1}})",
      R"({"args":{},"state_view":{},"edge_inputs":{}})",
      R"({"args":null,"state_view":null,"edge_inputs":null})",
      R"({"node":{}})",
      R"({})",
      R"({"args":{"neg":-12,"zero":0,"t":true,"f":false,"n":null,"s":""},"edge_inputs":[1,2]})",
      R"({"edge_inputs":{"a":{}},"args":{"deep":[[[]],{}]},"state_view":"text"})",
      // Handed to the parser (same answer, including the errors):
      R"({"args":{"x":1.5}})",                          // a float
      R"({"args":{"x":1e3}})",                          // not canonical
      R"({"args":{"x":-0}})",                           // -0
      R"({"args":{"x":"\u0041\/"}})",                   // escapes a dump would not write
      R"({"args":{"x":"é"}})",                          // non-ASCII
      R"({ "args": {"x": 1} })",                        // whitespace
      R"({"args":{"_state":1,"k":2}})",                 // keys the input sets itself
      R"({"args":{"_edge_inputs":{"a":1}}})",
      R"({"args":[1,2]})",                              // not an object: an error
      R"({"args":{"a":1},"args":{"b":2}})",             // a repeated member
      R"({"args":{"a":01}})",                           // not JSON: an error
      R"({"args":{"a":1})",                             // truncated: an error
      R"([1,2])",                                       // not an object: an error
      R"({"args":{"a":123456789012345678901234}})",     // beyond 64 bits
  };
  for (const std::string& request : requests) {
    EXPECT_EQ(viaFastPath(request), viaParse(request)) << request;
  }
}

TEST(ToolInput, ArgsComeFirstThenEdgeInputsThenState) {
  EXPECT_EQ(viaFastPath(R"({"args":{"b":1,"a":2},"state_view":{"s":1},"edge_inputs":{"e":2}})"),
            R"({"b":1,"a":2,"_edge_inputs":{"e":2},"_state":{"s":1}})");
  EXPECT_EQ(viaFastPath(R"({"args":{}})"), R"({"_edge_inputs":{},"_state":{}})");
}

TEST(NodeConfig, ScannedWhenCanonicalElseLeftToTheParser) {
  auto scanned = scanNodeConfig(
      R"({"experience_dir":"/x/exp","node":{"args":{"a":[1,{"id":"no"}]},"id":"n1",)"
      R"("impl":"./tools/t.so","kind":"tool","writes":["f"]}})");
  ASSERT_TRUE(scanned);
  EXPECT_EQ(scanned->experience_dir, "/x/exp");
  EXPECT_EQ(scanned->id, "n1");
  EXPECT_EQ(scanned->impl, "./tools/t.so");

  auto no_dir = scanNodeConfig(R"({"node":{"impl":"t.mjs"}})");
  ASSERT_TRUE(no_dir);
  EXPECT_EQ(no_dir->experience_dir, "");
  EXPECT_EQ(no_dir->id, "");

  for (const char* other : {
           R"({"node":{"id":"n1"}})",                       // no impl: the parser words it
           R"({"node":{"id":"n1","impl":""}})",             // empty impl
           R"({"node":{"id":"n1","impl":7}})",              // not a string
           R"({"node":{"id":"n"1","impl":"t.so"}})",       // an escape
           R"({"experience_dir":"/d\e","node":{"impl":"t.so"}})",
           R"({"experience_dir":3,"node":{"impl":"t.so"}})",
           R"({"node":{"id":"é","impl":"t.so"}})",          // non-ASCII
           R"({"node":[]})",                                // not an object
           R"({"dir":"/x"})",                               // no node
           R"({ "node": {"impl":"t.so"} })",                // whitespace
           R"(not json)",
       }) {
    EXPECT_FALSE(scanNodeConfig(other)) << other;
  }
}

}  // namespace
}  // namespace oe::tool::test
