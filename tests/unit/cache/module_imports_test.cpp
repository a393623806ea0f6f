// The static import scans (JavaScript, Python) and their resolution to the experience's files.
#include "oe/cache/module_imports.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "support/temp_dir.hpp"

namespace oe::cache {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> sortedNames(const std::vector<fs::path>& paths, const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    out.push_back(p.lexically_relative(root).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(JsImports, EveryStaticFormIsFound) {
  const auto found = jsImportSpecifiers(R"(
import a from './a.mjs';
import { b1, b2 } from "./b.js";
import * as c from './c';
import {
  d,
} from './d.mjs';
import './side-effect.mjs';
export { e } from './e.mjs';
export * from "./f.mjs";
const g = await import('./g.mjs');
const h = require("./h");
const i = require(`./i.cjs`);
const fs = require('node:fs');
import lodash from 'lodash';
)");
  EXPECT_EQ(found, (std::vector<std::string>{"./a.mjs", "./b.js", "./c", "./d.mjs",
                                             "./side-effect.mjs", "./e.mjs", "./f.mjs", "./g.mjs",
                                             "./h", "./i.cjs", "node:fs", "lodash"}));
}

TEST(JsImports, WhatIsNotALiteralImportIsNotFound) {
  const auto found = jsImportSpecifiers(R"(
const name = './x.mjs';
await import(name);
await import(`./${name}`);
const fromage = 'brie';
myrequire('./no.mjs');
const importer = { from: './field.mjs' };
)");
  EXPECT_TRUE(found.empty()) << found.front();
}

TEST(PyImports, EveryStatementFormIsFound) {
  const auto found = pyImports(R"(import os
import helpers, util.text as t
from . import sibling
from .pkg.mod import (
    one,
    two as deux,  # a comment
)
from ..up import thing
from lib import a, \
    b
def f():
    import lazy
x = 1; import after_semicolon
# import commented_out
s = "import not_a_statement"
)");
  EXPECT_EQ(found, (std::vector<PyImport>{{0, "os", {}},
                                          {0, "helpers", {}},
                                          {0, "util.text", {}},
                                          {1, "", {"sibling"}},
                                          {1, "pkg.mod", {"one", "two"}},
                                          {2, "up", {"thing"}},
                                          {0, "lib", {"a", "b"}},
                                          {0, "lazy", {}},
                                          {0, "after_semicolon", {}}}));
}

TEST(LocalImports, JavaScriptFollowsNodesFileResolution) {
  test::TempDir dir;
  const auto tool = dir.write("tools/tool.mjs", R"(import a from './lib/a.mjs';
import b from './lib/b';
const c = require('./lib/c');
import d from 'lodash';
import e from '../../outside.mjs';
import missing from './lib/missing.mjs';
)");
  dir.write("lib_unused.mjs", "");
  dir.write("tools/lib/a.mjs", "");
  dir.write("tools/lib/b.js", "");
  dir.write("tools/lib/c/index.cjs", "");
  dir.write("node_modules/lodash/index.js", "");
  EXPECT_EQ(
      sortedNames(localImports(tool, test::readFile(tool), tool.parent_path(), dir.path()),
                  dir.path()),
      (std::vector<std::string>{"tools/lib/a.mjs", "tools/lib/b.js", "tools/lib/c/index.cjs"}));
}

TEST(LocalImports, PythonResolvesFromTheScriptsFolderAndItsPackages) {
  test::TempDir dir;
  const auto tool = dir.write("tools/count.py", R"(import json
import helpers
from pkg.sub import mod, NAME
from pkg import other
)");
  dir.write("tools/helpers.py", "");
  dir.write("tools/pkg/__init__.py", "");
  dir.write("tools/pkg/sub/__init__.py", "");
  dir.write("tools/pkg/sub/mod.py", "");
  dir.write("tools/pkg/other/__init__.py", "");
  dir.write("tools/unused.py", "");
  EXPECT_EQ(sortedNames(localImports(tool, test::readFile(tool), tool.parent_path(), dir.path()),
                        dir.path()),
            (std::vector<std::string>{"tools/helpers.py", "tools/pkg/__init__.py",
                                      "tools/pkg/other/__init__.py", "tools/pkg/sub/__init__.py",
                                      "tools/pkg/sub/mod.py"}));
  // A relative import inside the package.
  const auto inner = dir.write("tools/pkg/sub/mod.py", "from .. import other\nfrom . import x\n");
  dir.write("tools/pkg/sub/x.py", "");
  EXPECT_EQ(sortedNames(localImports(inner, test::readFile(inner), tool.parent_path(), dir.path()),
                        dir.path()),
            (std::vector<std::string>{"tools/pkg/__init__.py", "tools/pkg/other/__init__.py",
                                      "tools/pkg/sub/__init__.py", "tools/pkg/sub/x.py"}));
}

TEST(InsideExperience, OnlyTheFolderBelowTheRootAndNotItsStores) {
  EXPECT_TRUE(insideExperience("/x/a.txt", "/x"));
  EXPECT_TRUE(insideExperience("/x/d/a.txt", "/x"));
  EXPECT_FALSE(insideExperience("/x", "/x"));
  EXPECT_FALSE(insideExperience("/x/", "/x"));
  EXPECT_FALSE(insideExperience("/xy/a.txt", "/x"));
  EXPECT_FALSE(insideExperience("/etc/passwd", "/x"));
  EXPECT_FALSE(insideExperience("/x/.openexpertise/state.sqlite", "/x"));
  EXPECT_TRUE(insideExperience("/x/.env", "/x"));
}

}  // namespace
}  // namespace oe::cache
