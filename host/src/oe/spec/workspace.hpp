// Where oe keeps an experience's stores: the state, the node cache, the run history and its
// definition pins, the spec snapshot and the state of nested runs (docs/storage.md).
#pragma once

#include <filesystem>

namespace oe::spec {

// The name of the file whose stores keep upstream's layout, `.openexpertise/` itself.
inline constexpr const char* kDefaultExperienceFile = "experience.yaml";

// The folder of the stores of the experience in `yaml_path` (a YAML file, as
// resolveExperiencePath gives it): `<dir>/.openexpertise` for experience.yaml, as upstream has
// it, and `<dir>/.openexpertise/<file name>` for any other file (`b.yaml` ->
// `.openexpertise/b.yaml/`), so two YAML files of one folder never share a state, a cache or a
// run history. The name keeps its extension: no oe-owned entry of `.openexpertise/` ends in
// .yaml or .yml, so it cannot collide with one. Relative in, relative out.
[[nodiscard]] std::filesystem::path workspaceDir(const std::filesystem::path& yaml_path);

}  // namespace oe::spec
