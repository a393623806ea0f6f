// The shared process plumbing (oe_proc_kit: proc_kit/subprocess.hpp) under this plugin's
// namespace, so the tool code names it as before.
#pragma once

#include "proc_kit/subprocess.hpp"

namespace oe::tool {
using prockit::Child;
using prockit::describeWaitStatus;
using prockit::FdMapping;
using prockit::findOnPath;
using prockit::isExecutableFile;
using prockit::kPollSlice;
using prockit::makePipe;
using prockit::Pipe;
using prockit::reapChild;
using prockit::SandboxSpec;
using prockit::setNonBlocking;
using prockit::signalName;
using prockit::SigpipeBlock;
using prockit::spawnChild;
using prockit::SpawnRequest;
using prockit::TailBuffer;
using prockit::UniqueFd;
}  // namespace oe::tool
