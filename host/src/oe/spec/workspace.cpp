// workspaceDir: the one place that derives an experience's `.openexpertise/` folder.
#include "oe/spec/workspace.hpp"

namespace oe::spec {

std::filesystem::path workspaceDir(const std::filesystem::path& yaml_path) {
  const std::filesystem::path dir = yaml_path.parent_path();
  const std::filesystem::path root =
      dir.empty() ? std::filesystem::path(".openexpertise") : dir / ".openexpertise";
  const std::filesystem::path name = yaml_path.filename();
  if (name.empty() || name == kDefaultExperienceFile) {
    return root;
  }
  return root / name;
}

}  // namespace oe::spec
