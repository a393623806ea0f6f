# Finds the header-only valijson library (Debian: libvalijson-dev). The setup scripts may unpack
# the Debian package's headers under third_party/ (see .ci/setup) to avoid its Qt/Poco depends.
find_path(Valijson_INCLUDE_DIR valijson/validator.hpp
          HINTS "${CMAKE_SOURCE_DIR}/.deps/valijson/usr/include" "${CMAKE_BINARY_DIR}/_deps/valijson/usr/include")
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Valijson REQUIRED_VARS Valijson_INCLUDE_DIR)
if(Valijson_FOUND AND NOT TARGET Valijson::valijson)
  add_library(Valijson::valijson INTERFACE IMPORTED)
  set_target_properties(Valijson::valijson PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${Valijson_INCLUDE_DIR}")
endif()
