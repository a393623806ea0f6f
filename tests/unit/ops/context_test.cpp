// Loading an experience for a front end as values: what failed to load or validate comes back as
// diagnostics with the file they are about, for the front end to print.
#include "oe/ops/context.hpp"

#include <gtest/gtest.h>

#include "support/temp_dir.hpp"

namespace oe::ops {
namespace {

class NullLog final : public plugins::LogSink {
 public:
  void write(oe_log_level, std::string_view, std::string_view) override {}
};

TEST(LoadValidated, AYamlErrorIsADiagnosticWithoutAModel) {
  test::TempDir dir;
  dir.write("experience.yaml", "name: [unclosed\n");
  NullLog log;
  plugins::PluginRegistry registry(&log, plugins::Access::kExecute);
  const Validated v = loadValidated(dir.path(), registry, /*strict=*/false, /*for_run=*/true);
  EXPECT_FALSE(v.experience);
  ASSERT_FALSE(v.diagnostics.empty());
  EXPECT_TRUE(hasErrors(v.diagnostics));
  EXPECT_TRUE(v.file.empty());  // no model to name
}

TEST(LoadValidated, AReferenceErrorNamesTheFileOfTheModel) {
  test::TempDir dir;
  dir.write("experience.yaml",
            "name: x\nversion: 0.1.0\nstate:\n  schema:\n    a: {type: string}\ngraph:\n"
            "  nodes:\n    - id: n\n      kind: no-plugin-provides-this\n      writes: [a]\n"
            "  edges: []\n");
  NullLog log;
  plugins::PluginRegistry registry(&log, plugins::Access::kExecute);
  const Validated v = loadValidated(dir.path(), registry, /*strict=*/false, /*for_run=*/true);
  EXPECT_FALSE(v.experience);
  ASSERT_TRUE(hasErrors(v.diagnostics));
  bool named = false;
  for (const auto& d : v.diagnostics) {
    named = named ||
            d.message.find("unknown node kind \"no-plugin-provides-this\"") != std::string::npos;
  }
  EXPECT_TRUE(named);
  EXPECT_EQ(std::filesystem::path(v.file).filename(), "experience.yaml");
  EXPECT_FALSE(std::filesystem::exists(dir / ".openexpertise")) << "no snapshot of a bad file";
}

}  // namespace
}  // namespace oe::ops
