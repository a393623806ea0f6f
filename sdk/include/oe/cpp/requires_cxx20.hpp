// Included first by every oe/cpp header: the C++ glue is C++20 (concepts, std::span), and a C++17
// build should stop at one line that says so, not at a page of template errors.
#pragma once

#if defined(_MSVC_LANG)
#define OE_SDK_CPLUSPLUS _MSVC_LANG
#elif defined(__cplusplus)
#define OE_SDK_CPLUSPLUS __cplusplus
#else
#define OE_SDK_CPLUSPLUS 0L
#endif

// The headers that include this one compile their body only when OE_SDK_CXX20 is 1. GCC and
// Clang go on after an #error, and the plugin's own code would then add a page of follow-up
// errors; including a file that cannot exist stops the compiler right after the one message.
#if OE_SDK_CPLUSPLUS >= 202002L
#define OE_SDK_CXX20 1
#else
#define OE_SDK_CXX20 0
#error "oe/cpp/*.hpp needs C++20; set CMAKE_CXX_STANDARD 20 (or link OpenExpertise::sdk_cpp) \
or pass -std=c++20; a C plugin includes <oe/oe.h> only"
#include "oe/cpp/(compilation stopped here: C++20 is required, see the #error above)"
#endif
