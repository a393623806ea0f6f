// spec::workspaceDir: experience.yaml keeps upstream's `.openexpertise/`; any other file of the
// folder gets a folder of its own inside it.
#include "oe/spec/workspace.hpp"

#include <gtest/gtest.h>

namespace oe::spec {
namespace {

TEST(WorkspaceDir, ExperienceYamlKeepsUpstreamsFolder) {
  EXPECT_EQ(workspaceDir("/x/experience.yaml"), std::filesystem::path("/x/.openexpertise"));
  EXPECT_EQ(workspaceDir("experience.yaml"), std::filesystem::path(".openexpertise"));
  EXPECT_EQ(workspaceDir("./experience.yaml"), std::filesystem::path("./.openexpertise"));
}

TEST(WorkspaceDir, AnotherFileGetsAFolderNamedAfterIt) {
  EXPECT_EQ(workspaceDir("/x/b.yaml"), std::filesystem::path("/x/.openexpertise/b.yaml"));
  EXPECT_EQ(workspaceDir("/x/b.yml"), std::filesystem::path("/x/.openexpertise/b.yml"));
  EXPECT_EQ(workspaceDir("/x/experience.yml"),
            std::filesystem::path("/x/.openexpertise/experience.yml"));
  EXPECT_EQ(workspaceDir("sub/b.yaml"), std::filesystem::path("sub/.openexpertise/b.yaml"));
  // Never one of the folders oe keeps in .openexpertise/ itself.
  EXPECT_EQ(workspaceDir("/x/cache.yaml"), std::filesystem::path("/x/.openexpertise/cache.yaml"));
}

}  // namespace
}  // namespace oe::spec
