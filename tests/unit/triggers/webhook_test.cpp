// Webhook deliveries: signatures checked against HMACs computed by the `openssl dgst` command,
// GitHub's header form, replayed delivery ids (in a real SQLite store), args_from.
#include "oe/triggers/webhook.hpp"

#include <gtest/gtest.h>

#include <string>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace oe::triggers {
namespace {

constexpr const char* kSecret = "hook-secret-0123456789";

// The HMAC-SHA256 of the file's bytes under `key`, as the openssl command computes it.
std::string opensslHmac(const std::filesystem::path& file, const std::string& key) {
  const auto r = oe::test::runProcess({"openssl", "dgst", "-sha256", "-hmac", key, file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const size_t at = r.out.find("= ");
  EXPECT_NE(at, std::string::npos) << r.out;
  std::string hex = r.out.substr(at + 2);
  while (!hex.empty() && (hex.back() == '\n' || hex.back() == '\r')) {
    hex.pop_back();
  }
  return hex;
}

spec::TriggerSpec hookTrigger() {
  spec::TriggerSpec t;
  t.id = "webhook:new-issue";
  spec::WebhookTrigger w;
  w.name = "new-issue";
  w.secret.name = "webhook new-issue";
  w.secret.file = "hook.secret";
  t.webhook = w;
  t.args = Json{{"source", "github"}};
  t.args_from = {{"issue", "$.body.issue.number"},
                 {"title", "$.body.issue.title"},
                 {"event", "$.headers.x_github_event"},
                 {"absent", "$.body.nothing.here"}};
  return t;
}

class WebhookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.write("hook.secret", std::string(kSecret) + "\n");
    auto store = openSqliteTriggerStore(dir_ / ".openexpertise/triggers.sqlite");
    ASSERT_TRUE(store.ok()) << store.error().message;
    store_ = std::move(store).value();
  }

  WebhookOutcome deliver(std::string_view body, const Headers& headers, int64_t now_ms = 1000) {
    return receiveWebhook("exp", trigger_, dir_.path(), body, headers, *store_, now_ms);
  }

  oe::test::TempDir dir_;
  std::unique_ptr<TriggerStore> store_;
  spec::TriggerSpec trigger_ = hookTrigger();
};

TEST_F(WebhookTest, SignatureMatchesOpenssl) {
  const std::string body = R"({"issue": {"number": 42, "title": "Crash \u00e9"}})";
  const auto file = dir_.write("body.json", body);
  EXPECT_EQ(webhookSignature(kSecret, body), "sha256=" + opensslHmac(file, kSecret));
  EXPECT_NE(webhookSignature(kSecret, body), webhookSignature("other-secret-000", body));
}

TEST_F(WebhookTest, AcceptsASignedDeliveryAndMapsArgs) {
  const std::string body = R"({"issue": {"number": 42, "title": "Crash"}, "action": "opened"})";
  const std::string signature = "sha256=" + opensslHmac(dir_.write("b.json", body), kSecret);
  const auto out = deliver(body, {{"x-oe-signature", signature}, {"x-github-event", "issues"}});
  ASSERT_EQ(out.verdict, WebhookVerdict::kAccepted) << out.message;
  EXPECT_EQ(out.status(), 202);
  EXPECT_EQ(out.args, Json::parse(R"({"source": "github", "issue": 42, "title": "Crash",
                                      "event": "issues"})"));
}

TEST_F(WebhookTest, AcceptsGithubsHeaderAndUpperCaseHex) {
  const std::string body = R"({"issue": {"number": 7}})";
  std::string hex = opensslHmac(dir_.write("b.json", body), kSecret);
  for (char& c : hex) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  const auto out = deliver(body, {{"x-hub-signature-256", "sha256=" + hex}});
  ASSERT_EQ(out.verdict, WebhookVerdict::kAccepted) << out.message;
  EXPECT_EQ(out.args["issue"], 7);
}

TEST_F(WebhookTest, RefusesMissingAndWrongSignatures) {
  const std::string body = R"({"issue": {"number": 42}})";
  const std::string good = webhookSignature(kSecret, body);
  std::string flipped = good;
  flipped.back() = flipped.back() == '0' ? '1' : '0';
  const struct {
    Headers headers;
    const char* says;
  } cases[] = {
      {{}, "no signature"},
      {{{"x-oe-signature", flipped}}, "does not match the body"},
      {{{"x-oe-signature", webhookSignature("not-the-secret!", body)}}, "does not match"},
      {{{"x-oe-signature", good.substr(7)}}, "not of the form"},
      {{{"x-oe-signature", "sha1=" + good.substr(7)}}, "not of the form"},
      {{{"x-oe-signature", good + "00"}}, "not of the form"},
      {{{"x-oe-signature", "sha256=" + std::string(64, 'g')}}, "not of the form"},
      {{{"x-hub-signature", good}}, "no signature"},  // GitHub's SHA-1 header: not accepted
  };
  for (const auto& c : cases) {
    const auto out = deliver(body, c.headers);
    EXPECT_EQ(out.verdict, WebhookVerdict::kRefused) << c.says;
    EXPECT_EQ(out.status(), 401);
    EXPECT_NE(out.message.find(c.says), std::string::npos) << out.message;
    EXPECT_EQ(out.message.find(kSecret), std::string::npos);
  }
  // The body signed is the body checked: a changed byte is refused.
  EXPECT_EQ(deliver(R"({"issue": {"number": 43}})", {{"x-oe-signature", good}}).verdict,
            WebhookVerdict::kRefused);
  EXPECT_EQ(deliver(body, {{"x-oe-signature", good}}).verdict, WebhookVerdict::kAccepted);
}

TEST_F(WebhookTest, ReplayedDeliveryIdsAreIgnoredWithinTheRetention) {
  const std::string body = R"({"issue": {"number": 1}})";
  const std::string signature = webhookSignature(kSecret, body);
  const Headers first = {{"x-oe-signature", signature}, {"x-oe-delivery", "d-1"}};
  EXPECT_EQ(deliver(body, first, 1000).verdict, WebhookVerdict::kAccepted);
  const auto replay = deliver(body, first, 2000);
  EXPECT_EQ(replay.verdict, WebhookVerdict::kReplayed);
  EXPECT_EQ(replay.status(), 200);
  // GitHub's header is the same id space.
  EXPECT_EQ(
      deliver(body, {{"x-hub-signature-256", signature}, {"x-github-delivery", "d-1"}}).verdict,
      WebhookVerdict::kReplayed);
  EXPECT_EQ(deliver(body, {{"x-oe-signature", signature}, {"x-oe-delivery", "d-2"}}).verdict,
            WebhookVerdict::kAccepted);
  // Another experience's hook of the same name has its own ids.
  EXPECT_EQ(receiveWebhook("other", trigger_, dir_.path(), body,
                           {{"x-oe-signature", signature}, {"x-oe-delivery", "d-2"}}, *store_, 5000)
                .verdict,
            WebhookVerdict::kAccepted);
  // A forged delivery with a known id is refused for its signature, not ignored as a replay.
  EXPECT_EQ(deliver(body, {{"x-oe-signature", "sha256=" + std::string(64, '0')},
                           {"x-oe-delivery", "d-1"}})
                .verdict,
            WebhookVerdict::kRefused);
  // Past the retention the id is forgotten.
  EXPECT_EQ(deliver(body, first, 1000 + kDeliveryRetentionMs + 1).verdict,
            WebhookVerdict::kAccepted);
  EXPECT_EQ(deliver(body, {{"x-oe-signature", signature}, {"x-oe-delivery", std::string(201, 'x')}})
                .verdict,
            WebhookVerdict::kBadRequest);
}

TEST_F(WebhookTest, AnUnreadableSecretIsUnavailableNotAccepted) {
  std::filesystem::remove(dir_ / "hook.secret");
  const std::string body = "{}";
  const auto out = deliver(body, {{"x-oe-signature", webhookSignature(kSecret, body)}});
  EXPECT_EQ(out.verdict, WebhookVerdict::kUnavailable);
  EXPECT_EQ(out.status(), 503);
  EXPECT_NE(out.message.find("secret cannot be read"), std::string::npos) << out.message;
}

TEST(WebhookArgsTest, RootHoldsBodyAndHeaders) {
  const Json root = deliveryRoot("not json", {{"X-GitHub-Event", "push"}, {"x-a", "1"}});
  EXPECT_EQ(root["body"], "not json");
  EXPECT_EQ(root["headers"]["x_github_event"], "push");
  EXPECT_EQ(root["headers"]["x_a"], "1");
  spec::TriggerSpec t = hookTrigger();
  const Json args = webhookArgs(t, root);
  EXPECT_EQ(args, Json::parse(R"({"source": "github", "event": "push"})"));
}

}  // namespace
}  // namespace oe::triggers
