// Provider command lines: see command.hpp.
#include "command.hpp"

namespace oe::cliagent {

namespace {

// Each provider's name in a spec and the program it runs, in one place.
struct ProviderInfo {
  Provider provider;
  const char* name;
  const char* program;
};
constexpr ProviderInfo kProviders[] = {
    {Provider::kClaudeCode, "claude-code", "claude"},
    {Provider::kCodex, "codex", "codex"},
    {Provider::kGemini, "gemini", "gemini"},
};

const ProviderInfo* infoOf(Provider provider) {
  for (const ProviderInfo& info : kProviders) {
    if (info.provider == provider) {
      return &info;
    }
  }
  return nullptr;
}

}  // namespace

std::optional<Provider> providerNamed(std::string_view name) {
  for (const ProviderInfo& info : kProviders) {
    if (name == info.name) {
      return info.provider;
    }
  }
  return std::nullopt;
}

const char* providerName(Provider provider) {
  const ProviderInfo* info = infoOf(provider);
  return info != nullptr ? info->name : "?";
}

const char* programOf(Provider provider) {
  const ProviderInfo* info = infoOf(provider);
  return info != nullptr ? info->program : "?";
}

std::vector<std::string> buildArgv(const CommandSpec& spec) {
  std::vector<std::string> argv{programOf(spec.provider)};
  auto addModelAndExtras = [&] {
    if (spec.model) {
      argv.emplace_back("--model");
      argv.push_back(*spec.model);
    }
    argv.insert(argv.end(), spec.extra_args.begin(), spec.extra_args.end());
  };
  switch (spec.provider) {
    case Provider::kClaudeCode:
      argv.emplace_back("-p");
      if (!spec.prompt_on_stdin) {
        argv.push_back(spec.prompt);
      }
      argv.emplace_back("--output-format");
      if (spec.stream) {
        argv.emplace_back("stream-json");
        argv.emplace_back("--verbose");  // the CLI refuses stream-json with -p without it
      } else {
        argv.emplace_back(spec.json ? "json" : "text");
      }
      addModelAndExtras();
      break;
    case Provider::kCodex:
      argv.emplace_back("exec");
      argv.emplace_back("--skip-git-repo-check");
      if (spec.stream) {
        argv.emplace_back("--json");
      }
      addModelAndExtras();
      argv.push_back(spec.prompt_on_stdin ? std::string("-") : spec.prompt);
      break;
    case Provider::kGemini:
      argv.emplace_back("--yolo");
      if (spec.stream) {
        argv.emplace_back("--output-format");
        argv.emplace_back("stream-json");
      }
      if (!spec.prompt_on_stdin) {
        argv.emplace_back("--prompt");
        argv.push_back(spec.prompt);
      }
      addModelAndExtras();
      break;
    default:
      break;
  }
  return argv;
}

const char* streamFormatName(Provider provider) {
  return provider == Provider::kCodex ? "--json events" : "stream-json";
}

std::vector<std::string> providerEnvironment(Provider provider) {
  if (provider == Provider::kGemini) {
    return {"GEMINI_CLI_TRUST_WORKSPACE=true"};
  }
  return {};
}

}  // namespace oe::cliagent
