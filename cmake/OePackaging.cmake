# Debian packages of oe, made by CPack from the install rules (docs/packaging.md):
#   cmake --build build/release --target package      (or `cpack -G DEB` in build/release)
# gives oe_<version>_<arch>.deb (the `runtime` component: oe, its plugins, data, examples, man
# page, bash completion) and oe-dev_<version>_<arch>.deb (the `dev` component: the plugin SDK's
# headers, CMake package, pkg-config file and ABI docs). Included last by the top-level
# CMakeLists.txt, after every install rule.
#
# The packages install under /usr whatever CMAKE_INSTALL_PREFIX the build was configured with:
# oe finds its plugins and data relative to its own binary (<exe>/../lib/oe/plugins,
# <exe>/../share/oe), so /usr/bin/oe loads /usr/lib/oe/plugins as a build tree's bin/oe loads its
# lib/oe/plugins.

set(OE_PACKAGE_MAINTAINER "oe maintainers <maintainers@users.noreply.a-seed-2466d0c5.example>"
    CACHE STRING "The Maintainer of oe's Debian packages")
set(OE_PACKAGE_DATA_DIR "${PROJECT_SOURCE_DIR}/host/share")

# What only a package has: /usr/share/doc/oe/{copyright,changelog.gz}, the documentation folder
# every Debian package carries. oe-dev's is a link to oe's (it depends on that exact oe, which
# Debian allows), so the SDK's docs stay in share/doc/oe where `cmake --install` puts them too.
# EXCLUDE_FROM_ALL: a plain `cmake --install` leaves them out; CPack asks for each component by
# name and so gets them.
set(_oe_pkg_dir "${CMAKE_BINARY_DIR}/packaging")
# OE_GZIP: host/CMakeLists.txt looked it up for the man page.
if(OE_GZIP)
  # Debian wants changelogs compressed with gzip -9, without the name and time (-n) so the
  # package is the same for the same input.
  add_custom_command(OUTPUT "${_oe_pkg_dir}/changelog.gz"
    COMMAND "${OE_GZIP}" -9nc "${OE_PACKAGE_DATA_DIR}/doc/changelog" > "${_oe_pkg_dir}/changelog.gz"
    DEPENDS "${OE_PACKAGE_DATA_DIR}/doc/changelog"
    COMMENT "Compressing the Debian changelog")
  add_custom_target(oe_package_docs ALL DEPENDS "${_oe_pkg_dir}/changelog.gz")
  install(FILES "${_oe_pkg_dir}/changelog.gz" "${OE_PACKAGE_DATA_DIR}/doc/copyright"
          DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/oe" COMPONENT runtime EXCLUDE_FROM_ALL)
endif()
file(MAKE_DIRECTORY "${_oe_pkg_dir}/doc-link")
file(CREATE_LINK oe "${_oe_pkg_dir}/doc-link/oe-dev" SYMBOLIC)
install(FILES "${_oe_pkg_dir}/doc-link/oe-dev" DESTINATION "${CMAKE_INSTALL_DATADIR}/doc"
        COMPONENT dev EXCLUDE_FROM_ALL)

# The changelog's first entry names the version being packaged; a bumped project version
# without its entry would ship a changelog that contradicts the package.
file(STRINGS "${OE_PACKAGE_DATA_DIR}/doc/changelog" _oe_changelog_head LIMIT_COUNT 1)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             "${OE_PACKAGE_DATA_DIR}/doc/changelog")
if(NOT _oe_changelog_head MATCHES "^oe \\(${PROJECT_VERSION}\\) ")
  message(WARNING "host/share/doc/changelog does not start with an entry for oe "
                  "${PROJECT_VERSION} (it starts: ${_oe_changelog_head}); add one before "
                  "making packages")
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME oe)
set(CPACK_PACKAGE_VENDOR "oe maintainers")
set(CPACK_PACKAGE_CONTACT "${OE_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
# Each package's synopsis is the first line of its CPACK_DEBIAN_<COMPONENT>_DESCRIPTION. CPack
# 3.25 would put the project-wide summary in front of both, unless that summary is CPack's own
# default text: hence the default, which no package shows.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CMAKE_PROJECT_NAME} built using CMake")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
# <name>_<version>_<arch>.deb: a native package, so no Debian revision after the version.
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME oe)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION utils)
# Depends: the shared libraries `oe` and the plugins link, from dpkg-shlibdeps.
# Recommends, not Depends: Node.js runs `.mjs`/`.js` tools only; oe, every other node kind, and
# executable or `.so` tools work without it (`oe doctor` says what is missing and for what), and
# a worker machine for agent nodes has no use for it. apt installs Recommends by default, so a
# plain `apt install ./oe_*.deb` runs the examples. git: `oe install` and `oe submit` only.
# python3: the python-tool example and the demos' scripted stand-in CLIs only. tzdata: the zone
# files of cron triggers with a `timezone:` (`oe serve`; UTC works without).
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "nodejs, git, tzdata")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS "python3")
# The first line is the synopsis; CPack indents the rest and turns an empty line into " .".
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "runtime for AI workflows written as YAML
oe runs experiences: YAML files that describe a graph of nodes (deterministic
tools, LLM agents, skills, datasets, nested experiences, coding CLIs such as
Claude Code, Codex and Gemini CLI). It runs them with bounded parallelism over
a typed state kept in SQLite or PostgreSQL, with an event log per run and a
per-node cache, so a resumed run never pays twice for finished work. It is
compatible with OpenExpertise.

This package holds the oe command, its built-in node kinds (plugins), the
templates and prompts it uses, and runnable examples in /usr/share/oe/examples.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME oe-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "oe (= ${CPACK_PACKAGE_VERSION})")
# The SDK is headers (C11, and header-only C++20 glue) and one program, oe-plugin-manifest, which
# writes a built plugin's manifest (docs/trust.md): its shared libraries come from
# dpkg-shlibdeps. Building a plugin needs a compiler and either CMake
# (find_package(OpenExpertiseSDK)) or pkg-config (openexpertise-sdk).
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "gcc | c-compiler, cmake (>= 3.25) | pkg-config")
set(CPACK_DEBIAN_DEV_DESCRIPTION "plugin SDK for oe, the runtime for AI workflows in YAML
oe's node kinds are plugins: shared libraries built against a stable C ABI.
This package holds what a third party builds its own node kinds and native
tools with: the C11 ABI headers, the header-only C++20 glue, the CMake package
(find_package(OpenExpertiseSDK) and oe_add_plugin), the pkg-config file
openexpertise-sdk, oe-plugin-manifest (which writes the manifest oe reads
instead of loading a plugin that is not built in), and the ABI documentation
in /usr/share/doc/oe.")

include(CPack)
