// libFuzzer target: experience.yaml bytes through the loader (bounded by LoadLimits), `oe
// validate`'s checks (also on the partial model of a structurally broken file) and the DAG
// build. Every input must end as diagnostics or a model, never a crash, a hang or an exception.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "oe/graph/dag.hpp"
#include "oe/spec/loader.hpp"
#include "oe/spec/validate.hpp"

namespace {

// Kinds as the first-party plugins declare them: one with a closed field schema (its checks
// and unknown-key warnings run), one without a schema (no field checks).
oe::spec::KindCatalog makeKinds() {
  oe::spec::KindCatalog kinds;
  kinds["tool"] = oe::spec::KindInfo{
      "tool", oe::Json::parse(R"({"type":"object","required":["impl"],"properties":{
        "impl":{"type":"string","minLength":1},"args":{"type":"object"}}})")};
  kinds["agent"] = oe::spec::KindInfo{
      "agent", oe::Json::parse(R"({"type":"object","required":["prompt"],"properties":{
        "prompt":{"type":"string"},"model":{"type":"string"},"schema":{},
        "args":{"type":"object"}}})")};
  kinds["bare"] = oe::spec::KindInfo{"bare", std::nullopt};
  return kinds;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const oe::spec::KindCatalog kKinds = makeKinds();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // A path that does not exist: the loader must not need the file, only its name.
  oe::spec::LoadResult loaded =
      oe::spec::loadExperienceText(text, "/nonexistent/oe-fuzz/experience.yaml");
  // What `oe validate` reports: with structural errors too, on the partial model.
  for (const bool strict : {false, true}) {
    for (const oe::Diagnostic& d : oe::spec::checkLoaded(loaded, kKinds, strict)) {
      (void)d.format();
    }
  }
  if (!loaded.experience) {
    return 0;
  }
  const oe::spec::Experience& exp = *loaded.experience;
  (void)oe::spec::findCycles(exp);
  (void)oe::graph::buildDag(exp);
  return 0;
}
