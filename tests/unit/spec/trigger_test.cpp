// `triggers:` in the spec (docs/serve.md, "Triggers"): cron expressions parsed (and refused with
// the field and the reason), the model read from the file, and what `oe validate` reports, each
// at its line and column.
#include "oe/spec/trigger.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "oe/spec/loader.hpp"
#include "oe/spec/validate.hpp"
#include "unit/spec/spec_test_support.hpp"

namespace oe::spec {
namespace {

using testing::dump;
using testing::load;
using testing::loadOk;
using testing::matching;
using testing::testKinds;

std::string withTriggers(const std::string& triggers) {
  return "name: t\nversion: 0.1.0\nstate:\n  schema: {}\ngraph:\n  nodes:\n"
         "    - { id: a, kind: tool, impl: a.mjs }\n  edges: []\ntriggers:\n" +
         triggers;
}

// Everything `oe validate` says about the text (structure and meaning).
std::vector<Diagnostic> check(const std::string& yaml) {
  return checkLoaded(load(yaml), testKinds(), /*strict=*/false);
}

TEST(CronParseTest, FieldsListsRangesStepsAndNames) {
  auto e = parseCron("0,30 7-9 * JAN-mar,DEC mon-FRI");
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->minutes, (uint64_t{1} << 0) | (uint64_t{1} << 30));
  EXPECT_EQ(e->hours, (1U << 7) | (1U << 8) | (1U << 9));
  EXPECT_EQ(e->months, (1U << 1) | (1U << 2) | (1U << 3) | (1U << 12));
  EXPECT_EQ(e->weekdays, 0b0111110);
  EXPECT_FALSE(e->days_restricted);
  EXPECT_TRUE(e->weekdays_restricted);

  auto steps = parseCron("*/15 1-10/3 5/10 * 5-7");
  ASSERT_TRUE(steps.ok()) << steps.error().message;
  EXPECT_EQ(steps->minutes,
            (uint64_t{1} << 0) | (uint64_t{1} << 15) | (uint64_t{1} << 30) | (uint64_t{1} << 45));
  EXPECT_EQ(steps->hours, (1U << 1) | (1U << 4) | (1U << 7) | (1U << 10));
  EXPECT_EQ(steps->days, (1U << 5) | (1U << 15) | (1U << 25));
  EXPECT_EQ(steps->weekdays, 0b1100001);  // Friday, Saturday and Sunday (7)
  EXPECT_TRUE(steps->days_restricted);
  // `*/2` starts with `*`: not restricted, so both day fields must match.
  EXPECT_FALSE(parseCron("0 0 */2 * 1")->days_restricted);
}

TEST(CronParseTest, ErrorsNameTheFieldAndWhy) {
  const struct {
    const char* text;
    const char* says;
  } cases[] = {
      {"0 7 * *", "has 4 fields; write 5"},
      {"0 7 * * 1-5 x", "has 6 fields"},
      {"60 * * * *", "field 1 (minute) \"60\": 60 is out of range; write 0-59"},
      {"0 24 * * *", "field 2 (hour) \"24\": 24 is out of range; write 0-23"},
      {"0 0 0 * *", "field 3 (day-of-month) \"0\": 0 is out of range"},
      {"0 0 * 13 *", "field 4 (month) \"13\""},
      {"0 0 * * 8", "field 5 (day-of-week) \"8\": 8 is out of range; write 0-7"},
      {"0 0 * * 5-1", "the range 5-1 runs backwards"},
      {"*/0 * * * *", "the step \"/0\" is not a positive whole number"},
      {"*/x * * * *", "the step \"/x\""},
      {"*/61 * * * *", "the step /61 is larger than the field's range"},
      {"1,,2 * * * *", "an empty list item"},
      {"0 0 * FOO *", "\"FOO\" is not a value of this field; write 1-12 or JAN-DEC"},
      {"0 0 * * MON-", "field 5 (day-of-week)"},
      {"0 0 30 2 *", "names no day that the months of field 4"},
  };
  for (const auto& c : cases) {
    auto r = parseCron(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos)
        << c.text << ": " << r.error().message;
  }
  // February 30 is fine when a day of the week can still match (the OR rule).
  EXPECT_TRUE(parseCron("0 0 30 2 MON").ok());
}

TEST(TriggerSpecTest, ReadsCronAndWebhookTriggers) {
  Experience exp = loadOk(
      withTriggers("  - cron: \"0 7 * * 1-5\"\n    timezone: Europe/Berlin\n    missed: run_once\n"
                   "    args: { window: 24h }\n"
                   "  - webhook: { name: new-issue, secret: { env: OE_HOOK_SECRET } }\n"
                   "    args_from: { title: $.body.issue.title, issue: $.body.issue.number }\n"
                   "  - cron: \"0 7 * * 1-5\"\n    timezone: Europe/Berlin\n"));
  ASSERT_EQ(exp.triggers.size(), 3u);
  const TriggerSpec& cron = exp.triggers[0];
  ASSERT_TRUE(cron.cron);
  EXPECT_EQ(cron.id, "cron:0 7 * * 1-5@Europe/Berlin");
  EXPECT_EQ(cron.cron->timezone, "Europe/Berlin");
  EXPECT_EQ(cron.cron->missed, Missed::kRunOnce);
  EXPECT_EQ(cron.args, Json::parse(R"({"window": "24h"})"));
  EXPECT_EQ(cron.line, 10);
  const TriggerSpec& hook = exp.triggers[1];
  ASSERT_TRUE(hook.webhook);
  EXPECT_EQ(hook.id, "webhook:new-issue");
  EXPECT_EQ(hook.webhook->secret.env, "OE_HOOK_SECRET");
  // In file order, not JSON's sorted order.
  ASSERT_EQ(hook.args_from.size(), 2u);
  EXPECT_EQ(hook.args_from[0].first, "title");
  EXPECT_EQ(hook.args_from[1].second, "$.body.issue.number");
  // The same schedule twice keeps a distinct id.
  EXPECT_EQ(exp.triggers[2].id, "cron:0 7 * * 1-5@Europe/Berlin#2");
  EXPECT_EQ(exp.triggers[2].cron->missed, Missed::kSkip);
}

TEST(TriggerSpecTest, ValidateReportsEachProblemWhereItIs) {
  const std::string yaml = withTriggers(
      "  - cron: \"0 7 * * 1-8\"\n"                                                 // line 10
      "  - cron: \"0 7 * * *\"\n    timezone: Europe/Berln\n"                       // 11-12
      "  - webhook: { secret: { env: X } }\n"                                       // 13
      "  - webhook: { name: dup, secret: { env: X } }\n"                            // 14
      "  - webhook: { name: dup }\n"                                                // 15
      "    args_from: { a: body.issue, b: $.state.x }\n"                            // 16
      "  - cron: \"* * * * *\"\n    webhook: { name: both, secret: { env: X } }\n"  // 17-18
      "  - args: {}\n"                                                              // 19
      "  - cron: \"0 0 * * *\"\n    args_from: { a: $.body.a }\n"                   // 20-21
      "  - webhook: { name: w, secret: { env: X } }\n    missed: skip\n"            // 22-23
      "  - cron: \"0 0 * * *\"\n    missed: sometimes\n");                          // 24-25
  const std::vector<Diagnostic> all = check(yaml);
  auto at = [&all](const std::string& text) -> const Diagnostic* {
    auto it = std::find_if(all.begin(), all.end(), [&text](const Diagnostic& d) {
      return d.message.find(text) != std::string::npos;
    });
    return it == all.end() ? nullptr : &*it;
  };
  const struct {
    const char* text;
    int line;
  } expected[] = {
      {"field 5 (day-of-week) \"1-8\": 8 is out of range", 10},
      {"time zone \"Europe/Berln\" is not in the system's time zone database", 12},
      {"the webhook has no name", 13},
      {"webhook name \"dup\" is used twice (first on line 14)", 15},
      {"the webhook has no secret", 15},
      {"args_from.a is \"body.issue\": write a $.path into the delivery", 16},
      {"args_from.b is \"$.state.x\"", 16},
      {"has both cron: and webhook:", 17},
      {"has neither cron: nor webhook:", 19},
      {"a cron trigger has no payload", 21},
      {"missed applies to cron triggers only", 23},
  };
  for (const auto& e : expected) {
    const Diagnostic* d = at(e.text);
    ASSERT_NE(d, nullptr) << e.text << "\n" << dump(all);
    EXPECT_EQ(d->line, e.line) << d->format();
    EXPECT_GT(d->column, 0) << d->format();
    EXPECT_EQ(d->severity, Severity::kError) << d->format();
    EXPECT_EQ(d->file, "/tmp/oe-test/experience.yaml");
  }
  // The schema refuses a missed: that is neither skip nor run_once, at its value.
  EXPECT_TRUE(std::any_of(all.begin(), all.end(), [](const Diagnostic& d) {
    return d.line == 25 && d.severity == Severity::kError;
  })) << dump(all);
}

TEST(TriggerSpecTest, AGoodFileHasNothingToSay) {
  const auto all = check(
      withTriggers("  - cron: \"0 7 * * 1-5\"\n    timezone: America/New_York\n    missed: skip\n"
                   "    args: { window: 24h }\n"
                   "  - webhook: { name: new-issue, secret: { file: hook.secret } }\n"
                   "    args_from: { issue: $.body.issue, event: $.headers.x_github_event }\n"));
  // The secret file does not exist here: that one warning, and nothing else.
  ASSERT_EQ(all.size(), 1u) << dump(all);
  EXPECT_EQ(all[0].severity, Severity::kWarning);
  EXPECT_EQ(all[0].line, 14);
  EXPECT_NE(all[0].message.find("refuses every delivery"), std::string::npos);
}

TEST(ZoneFileTest, NamesAreCheckedBeforeTheDatabase) {
  EXPECT_TRUE(zoneFile("Europe/Berlin").ok());
  EXPECT_TRUE(zoneFile("America/Argentina/Buenos_Aires").ok());
  EXPECT_TRUE(zoneFile("Etc/GMT+5").ok());
  for (const char* bad : {"../../etc/passwd", "/etc/passwd", "Europe//Berlin", "Europe/./Berlin",
                          "Europe/Berlin ", ""}) {
    auto r = zoneFile(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("not an IANA time zone name"), std::string::npos) << bad;
  }
  // A file of the database that is not a zone.
  EXPECT_FALSE(zoneFile("tzdata.zi").ok());
}

}  // namespace
}  // namespace oe::spec
