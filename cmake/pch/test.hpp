// The test binaries' precompiled header (cmake/OePch.cmake): the host's set plus GoogleTest,
// GoogleMock and Boost.Asio (the fake servers), third-party and standard headers only.
#pragma once
#include "host.hpp"

#include <boost/asio.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
