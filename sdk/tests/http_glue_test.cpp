// oe/cpp/http.hpp against a scripted oe.http/1: every filled host buffer is released exactly
// once (also across moves), failures carry the host's message, and too-old tables are refused.
#include <oe/cpp/http.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "local_fake_host.hpp"

namespace oe::sdk {
namespace {

constexpr std::string_view kResponse = R"({"status":200,"headers":{},"body":"[1]"})";
constexpr std::string_view kRefused = "GET http://127.0.0.1:1/: connection refused";

// Fills `buf` as a host would: its opaque points at the context that counts the releases.
void fill(oe_host_ctx* call, oe_host_buf* buf, std::string_view text) {
  *buf = oe_host_buf{text.data(), text.size(), call};
  ++call->outstanding_buffers;
}

void OE_ABI releaseBuf(oe_host_ctx* /*ctx*/, oe_host_buf* buf) {
  if (buf == nullptr || buf->opaque == nullptr) {
    return;
  }
  auto* call = static_cast<oe_host_ctx*>(buf->opaque);
  --call->outstanding_buffers;
  ++call->releases;
  *buf = oe_host_buf{nullptr, 0, nullptr};
}

// Answers 200 after checking it received the request text unchanged.
oe_status OE_ABI fetchOk(oe_host_ctx* call, oe_str request, oe_host_buf* out_response,
                         oe_host_buf* out_error) {
  call->state["request"] = std::string(request.ptr, request.len);
  fill(call, out_response, kResponse);
  *out_error = oe_host_buf{nullptr, 0, nullptr};
  return OE_OK;
}

oe_status OE_ABI fetchRefused(oe_host_ctx* call, oe_str /*request*/, oe_host_buf* out_response,
                              oe_host_buf* out_error) {
  *out_response = oe_host_buf{nullptr, 0, nullptr};
  fill(call, out_error, kRefused);
  return OE_UNAVAILABLE;
}

oe_status OE_ABI fetchSilent(oe_host_ctx* /*call*/, oe_str /*request*/,
                             oe_host_buf* out_response, oe_host_buf* out_error) {
  *out_response = oe_host_buf{nullptr, 0, nullptr};
  *out_error = oe_host_buf{nullptr, 0, nullptr};
  return OE_DEADLINE_EXCEEDED;
}

oe_http_api table(decltype(oe_http_api::fetch) fetch_fn) {
  return oe_http_api{sizeof(oe_http_api), fetch_fn};
}

// The fake host's table with a release that counts on the context the buffer names.
const oe_host_api& countingHost() {
  static const oe_host_api kHost = [] {
    oe_host_api host = *testing::LocalFakeHost::api();
    host.release = &releaseBuf;
    return host;
  }();
  return kHost;
}

HttpFetch fetch(const oe_http_api& table, oe_host_ctx* call, std::string_view request) {
  return Http(countingHost(), table).fetch(call, request);
}

TEST(HttpGlue, FetchGivesTheResponseAndReleasesItOnce) {
  oe_host_ctx call;
  const oe_http_api http = table(&fetchOk);
  {
    const HttpFetch reply = fetch(http, &call, R"({"method":"GET","url":"http://x/"})");
    ASSERT_TRUE(reply.ok());
    EXPECT_EQ(reply.status(), OE_OK);
    EXPECT_EQ(reply.response(), kResponse);
    EXPECT_EQ(reply.error(), "");
    EXPECT_EQ(call.state["request"], R"({"method":"GET","url":"http://x/"})");
    EXPECT_EQ(call.releases, 0);
  }
  EXPECT_EQ(call.releases, 1);
  EXPECT_EQ(call.outstanding_buffers, 0);
}

TEST(HttpGlue, AFailureCarriesTheHostsMessageAndStatus) {
  oe_host_ctx call;
  const oe_http_api http = table(&fetchRefused);
  {
    const HttpFetch reply = fetch(http, &call, "{}");
    EXPECT_FALSE(reply.ok());
    EXPECT_EQ(reply.status(), OE_UNAVAILABLE);
    EXPECT_EQ(reply.error(), kRefused);
    EXPECT_EQ(reply.response(), "");
  }
  EXPECT_EQ(call.releases, 1);
  EXPECT_EQ(call.outstanding_buffers, 0);
}

TEST(HttpGlue, AFailureWithoutAMessageNamesTheStatus) {
  oe_host_ctx call;
  const oe_http_api http = table(&fetchSilent);
  const HttpFetch reply = fetch(http, &call, "{}");
  EXPECT_EQ(reply.error(), "oe.http/1 failed with status " + std::to_string(OE_DEADLINE_EXCEEDED));
  EXPECT_EQ(call.releases, 0);
}

TEST(HttpGlue, MovesHandTheBufferOverWithoutReleasingTwice) {
  oe_host_ctx call;
  const oe_http_api http = table(&fetchOk);
  {
    HttpFetch first = fetch(http, &call, "{}");
    HttpFetch second = std::move(first);
    EXPECT_EQ(second.response(), kResponse);
    HttpFetch third = fetch(http, &call, "{}");
    third = std::move(second);  // releases third's own buffer, takes second's
    EXPECT_EQ(call.releases, 1);
    EXPECT_EQ(third.response(), kResponse);
  }
  EXPECT_EQ(call.releases, 2);
  EXPECT_EQ(call.outstanding_buffers, 0);
}

TEST(HttpGlue, AFoundHttpFetchesWithTheContextItWasFoundWith) {
  oe_host_ctx call;
  const oe_http_api full = table(&fetchOk);
  call.extensions[OE_EXT_HTTP] = &full;
  {
    const HttpFetch reply = findHttp(countingHost(), &call).fetch(R"({"url":"http://y/"})");
    ASSERT_TRUE(reply.ok()) << reply.error();
    EXPECT_EQ(call.state["request"], R"({"url":"http://y/"})");
  }
  EXPECT_EQ(call.releases, 1);
  EXPECT_EQ(call.outstanding_buffers, 0);
}

TEST(HttpGlue, AnEmptyHttpAnswersUnimplemented) {
  const HttpFetch reply = Http().fetch(nullptr, "{}");
  EXPECT_EQ(reply.status(), OE_UNIMPLEMENTED);
  EXPECT_EQ(reply.error(), "this host does not offer oe.http/1");
}

TEST(HttpGlue, FindHttpRefusesMissingOrTooShortTables) {
  const oe_host_api& host = *testing::LocalFakeHost::api();
  oe_host_ctx ctx;
  EXPECT_FALSE(findHttp(host, &ctx));

  const oe_http_api full = table(&fetchOk);
  ctx.extensions[OE_EXT_HTTP] = &full;
  EXPECT_TRUE(findHttp(host, &ctx));

  oe_http_api truncated = full;  // a table that ends before fetch
  truncated.struct_size = offsetof(oe_http_api, fetch);
  ctx.extensions[OE_EXT_HTTP] = &truncated;
  EXPECT_FALSE(findHttp(host, &ctx));

  oe_http_api no_fetch = full;
  no_fetch.fetch = nullptr;
  ctx.extensions[OE_EXT_HTTP] = &no_fetch;
  EXPECT_FALSE(findHttp(host, &ctx));
}

TEST(HttpGlue, StatusForHttpMapsTheSharedCodesAndLeavesTheRest) {
  EXPECT_EQ(statusForHttp(401, OE_UNKNOWN), OE_UNAUTHENTICATED);
  EXPECT_EQ(statusForHttp(403, OE_UNKNOWN), OE_PERMISSION_DENIED);
  EXPECT_EQ(statusForHttp(404, OE_UNKNOWN), OE_NOT_FOUND);
  EXPECT_EQ(statusForHttp(429, OE_UNKNOWN), OE_RESOURCE_EXHAUSTED);
  EXPECT_EQ(statusForHttp(500, OE_UNKNOWN), OE_UNAVAILABLE);
  EXPECT_EQ(statusForHttp(599, OE_UNKNOWN), OE_UNAVAILABLE);
  EXPECT_EQ(statusForHttp(400, OE_FAILED_PRECONDITION), OE_FAILED_PRECONDITION);
  EXPECT_EQ(statusForHttp(600, OE_UNKNOWN), OE_UNKNOWN);
}

}  // namespace
}  // namespace oe::sdk
