#include "oe/httpd/target.hpp"

#include <gtest/gtest.h>

namespace oe::httpd {
namespace {

TEST(DecodeTargetTest, DecodesPathAndQuery) {
  auto decoded =
      decodeTarget("/api/runs/a%20b%2Fc+d?status=running&x=1+2%2B3&flag&&empty=&x=%C3%A9");
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(decoded->path, "/api/runs/a b/c+d");  // '+' is a space only in the query
  const std::multimap<std::string, std::string> want = {
      {"status", "running"}, {"x", "1 2+3"}, {"flag", ""}, {"empty", ""}, {"x", "\xc3\xa9"}};
  EXPECT_EQ(decoded->query, want);
}

TEST(DecodeTargetTest, RefusesMalformedTargets) {
  for (const char* target : {"", "api/runs", "http://host/x", "/a%", "/a%2", "/a%zz", "/a%00b",
                             "/a?x=%0", "/a?x=%00", "/a?%g1=2"}) {
    EXPECT_FALSE(decodeTarget(target)) << target;
  }
}

TEST(ListenAddressTest, ParsesAndClassifies) {
  auto v4 = parseListenAddress("127.0.0.1:8420");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 8420);
  EXPECT_TRUE(v4->loopback);
  auto other_loopback = parseListenAddress("127.1.2.3:0");
  ASSERT_TRUE(other_loopback);
  EXPECT_TRUE(other_loopback->loopback);
  auto v6 = parseListenAddress("[::1]:0");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_TRUE(v6->loopback);
  auto local = parseListenAddress("localhost:80");
  ASSERT_TRUE(local);
  EXPECT_EQ(local->host, "127.0.0.1");
  auto any = parseListenAddress("0.0.0.0:8420");
  ASSERT_TRUE(any);
  EXPECT_FALSE(any->loopback);
  auto any6 = parseListenAddress("[::]:8420");
  ASSERT_TRUE(any6);
  EXPECT_FALSE(any6->loopback);
  for (const char* bad : {"127.0.0.1", "127.0.0.1:", ":80", "example.com:80", "127.0.0.1:65536",
                          "127.0.0.1:-1", "[::1:80", "::1:80", "[127.0.0.1]:80", "1.2.3.4:8x"}) {
    auto parsed = parseListenAddress(bad);
    EXPECT_FALSE(parsed) << bad;
    if (!parsed) {
      EXPECT_NE(parsed.error().message.find("--listen"), std::string::npos);
    }
  }
}

TEST(LoopbackHostTest, OnlyLoopbackNames) {
  for (const char* host : {"localhost", "LOCALHOST:8420", "127.0.0.1", "127.0.0.1:1", "127.9.9.9",
                           "[::1]", "[::1]:8420", "[0:0:0:0:0:0:0:1]:80"}) {
    EXPECT_TRUE(isLoopbackHost(host)) << host;
  }
  for (const char* host :
       {"", "evil.example", "evil.example:8420", "localhost.evil.example", "127.0.0.1.evil.example",
        "10.0.0.1", "[::2]", "[::1]x", "::1", "localhost:80x", "[::1", "0.0.0.0"}) {
    EXPECT_FALSE(isLoopbackHost(host)) << host;
  }
  // inet_pton reads a C string: a NUL must not end the name early.
  using namespace std::string_literals;
  EXPECT_FALSE(isLoopbackHost("127.0.0.1\0.evil.example"s));
  EXPECT_FALSE(isLoopbackHost("[::1\0]"s));
  EXPECT_FALSE(isLoopbackHost("[::1]:842\n"s));  // found by oe_fuzz_request_target
  EXPECT_FALSE(isLoopbackHost("[::1]:x"s));
  EXPECT_FALSE(parseListenAddress("127.0.0.1\0x:80"s));
}

}  // namespace
}  // namespace oe::httpd
