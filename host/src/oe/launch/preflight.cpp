// The checks before a run starts (see preflight.hpp).
#include "oe/launch/preflight.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "oe/llm/llm_service.hpp"
#include "oe/pg/connection.hpp"
#include "oe/spec/loader.hpp"

namespace oe::launch {

Result<void> checkExperiencePath(const std::string& path) {
  const auto yaml = spec::resolveExperiencePath(path);
  std::error_code ec;
  if (std::filesystem::is_regular_file(yaml, ec)) {
    return {};
  }
  if (std::filesystem::is_directory(path, ec)) {
    return makeError(path +
                     " is not an experience: the folder has no experience.yaml. Pass an "
                     "experience's folder or its yaml file (`oe init NAME` creates one)");
  }
  if (std::filesystem::exists(path, ec)) {
    return makeError(path +
                     " is not an experience: pass a folder with an experience.yaml, or a "
                     ".yaml file");
  }
  return makeError(yaml.string() + " does not exist; pass an experience's folder or its yaml file");
}

Result<llm::Budget> parseBudget(const std::string& max_tokens, const std::string& max_cost_usd) {
  llm::Budget budget;
  try {
    if (!max_tokens.empty()) {
      size_t used = 0;
      const long long value = std::stoll(max_tokens, &used);
      if (used != max_tokens.size() || value < 0) {
        throw std::invalid_argument("negative");
      }
      budget.max_tokens = value;
    }
  } catch (const std::exception&) {
    return makeError("--max-tokens must be a non-negative integer");
  }
  try {
    if (!max_cost_usd.empty()) {
      size_t used = 0;
      const double value = std::stod(max_cost_usd, &used);
      if (used != max_cost_usd.size() || !(value >= 0)) {
        throw std::invalid_argument("negative");
      }
      budget.max_cost_usd = value;
    }
  } catch (const std::exception&) {
    return makeError("--max-cost-usd must be a non-negative number of US dollars");
  }
  return budget;
}

Result<int> parseConcurrency(const std::string& text) {
  size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < 1) {
    return makeError("--concurrency must be a positive integer");
  }
  return value;
}

Result<void> checkLlmSettings(const llm::Settings& settings) {
  const std::string& flag = settings.provider_flag;
  if (!flag.empty() && flag != "anthropic" && flag != "openai") {
    return makeError("unknown --llm value \"" + flag + "\"; use anthropic or openai");
  }
  if (settings.replay_file) {
    std::error_code ec;
    std::ifstream probe(*settings.replay_file);
    if (!std::filesystem::is_regular_file(*settings.replay_file, ec) || !probe) {
      return makeError("--llm-replay " + settings.replay_file->string() +
                       ": cannot read the recording (does it exist? record one with "
                       "--llm-record)");
    }
  } else if (!flag.empty()) {
    if (auto choice = llm::chooseProvider(settings); !choice) {
      return makeError(choice.error().message +
                       "; set it in the environment, or leave out --llm, or answer from a "
                       "recording with --llm-replay FILE");
    }
  }
  if (settings.record_file) {
    const auto folder = settings.record_file->has_parent_path()
                            ? settings.record_file->parent_path()
                            : std::filesystem::path(".");
    std::error_code ec;
    if (!std::filesystem::is_directory(folder, ec)) {
      return makeError("--llm-record " + settings.record_file->string() + ": the folder " +
                       folder.string() + " does not exist");
    }
  }
  return {};
}

Result<void> checkSelection(const spec::Experience& experience, const std::string& from_node,
                            const std::string& only_node) {
  for (const auto& [flag, id] : {std::pair{"--from", &from_node}, {"--only", &only_node}}) {
    if (!id->empty() && experience.findNode(*id) == nullptr) {
      return makeError(std::string(flag) + ": no node \"" + *id + "\" in " +
                       experience.file.string());
    }
  }
  return {};
}

Result<void> checkStore(const std::string& store_url, bool workers) {
  if (!store_url.empty() && !pg::isUrl(store_url)) {
    return makeError(
        "--store (or OE_STORE, runtime.store) takes a PostgreSQL URL "
        "(postgresql://...), not \"" +
        store_url + "\"; to move the SQLite state file, set state.store in experience.yaml");
  }
  if (workers && store_url.empty()) {
    return makeError(
        "--workers: no store given. Pass --store postgresql://USER@HOST/DB (or set "
        "OE_STORE) to hand node attempts to `oe worker` processes.");
  }
  return {};
}

}  // namespace oe::launch
