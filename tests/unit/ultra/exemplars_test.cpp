// pickExemplars and the corpus scan.
#include "oe/ultra/exemplars.hpp"

#include <gtest/gtest.h>

#include "support/temp_dir.hpp"

namespace oe::ultra {
namespace {

Exemplar ex(std::string name, std::string description, std::string yaml = "") {
  return Exemplar{std::move(name), std::move(description), std::move(yaml)};
}

TEST(UltraExemplars, PicksTheCorpusEntriesThatShareTheMostWordsAndKinds) {
  const std::vector<Exemplar> corpus = {
      ex("brainstorming", "Ideas from a CLI, clustered and critiqued"),
      ex("review-branch", "Review a branch's diff along three dimensions, verify each finding",
         "    kind: agent\n"),
      ex("deep-research", "Research a question with sources"),
      ex("hello-tool", "The smallest tool", "    kind: tool\n"),
  };
  const Json analysis = {
      {"name", "review-pull-request"},
      {"description", "Review the diff of a pull request and verify each finding"},
      {"node_sketches", Json::array({{{"id", "review"}, {"kind", "agent"}, {"purpose", "review"}},
                                     {{"id", "fetch"}, {"kind", "tool"}, {"purpose", "fetch"}}})}};
  const auto picked = pickExemplars(analysis, corpus, 2);
  ASSERT_EQ(picked.size(), 2U);
  EXPECT_EQ(picked[0].name, "review-branch");
  EXPECT_EQ(picked[1].name, "hello-tool") << "the kind it shares is its only point";
  EXPECT_EQ(pickExemplars(analysis, corpus, 1).size(), 1U);
  EXPECT_TRUE(pickExemplars(Json{{"name", "zzz"}}, corpus, 2).empty()) << "no overlap, no exemplar";
}

TEST(UltraExemplars, TiesGoToTheEarlierName) {
  const std::vector<Exemplar> corpus = {ex("a-flow", "summarize text"),
                                        ex("b-flow", "summarize text")};
  const auto picked = pickExemplars(Json{{"description", "summarize"}}, corpus, 1);
  ASSERT_EQ(picked.size(), 1U);
  EXPECT_EQ(picked[0].name, "a-flow");
}

TEST(UltraExemplars, ScanReadsEachSubfolderWithAnExperienceAndCutsTheYaml) {
  test::TempDir tmp;
  tmp.write("b/experience.yaml", "name: b\ndescription: \"Second one\"\n" + std::string(5000, '#'));
  tmp.write("a/experience.yaml", "name: a\ndescription: First one\n");
  tmp.write("c/README.md", "no experience here");
  const auto corpus = scanCorpus(tmp.path());
  ASSERT_EQ(corpus.size(), 2U);
  EXPECT_EQ(corpus[0].name, "a");
  EXPECT_EQ(corpus[0].description, "First one");
  EXPECT_EQ(corpus[1].description, "Second one");
  EXPECT_EQ(corpus[1].yaml.size(), 4000U);
  EXPECT_TRUE(scanCorpus(tmp / "missing").empty());
}

TEST(UltraExemplars, TheShippedExamplesAreACorpus) {
  const auto corpus = scanCorpus(std::filesystem::path(OE_SOURCE_DIR) / "examples");
  EXPECT_GE(corpus.size(), 5U);
  const Json analysis = {{"name", "review"}, {"description", "review a branch diff"}};
  const auto picked = pickExemplars(analysis, corpus, 2);
  ASSERT_FALSE(picked.empty());
  EXPECT_EQ(picked[0].name, "review-branch");
}

}  // namespace
}  // namespace oe::ultra
